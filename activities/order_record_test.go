package activities

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
)

// TestAReversedCellsAnswerMapsBackToCanonicalIDs: ids "1".."5" shown reversed are relabelled, so the model's
// "1" (it read "1. Level 5") is canonical option 5, and its distribution lands in canonical order.
func TestAReversedCellsAnswerMapsBackToCanonicalIDs(t *testing.T) {
	spec := experimenttest.Grid(1, 1, 1, 1, experimenttest.Statements(), experimenttest.Edit(func(s *experiment.Spec) {
		s.Questionnaire.Order = &experiment.OrderSettings{Mode: experiment.OrderBalanced}
		s.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs}
	}))
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	lp := func(p float64) float64 { return math.Log(p) }
	answer := respcache.Answer{Text: "1", FinishReason: llm.FinishStop, Logprobs: []llm.TokenLogprob{{Token: "1", Logprob: lp(.6),
		Top: []llm.TopLogprob{{Token: "1", Logprob: lp(.6)}, {Token: "2", Logprob: lp(.3)}, {Token: "5", Logprob: lp(.1)}}}}}
	written := answerRecord(&spec, spec.Cell(0), answer, experiment.Price{}, false)
	reversed := answerRecord(&spec, spec.Cell(1), answer, experiment.Price{}, false)
	if written.OptionID != "1" || reversed.OptionID != "5" {
		t.Fatalf("answer 1 recorded as %q as written and %q reversed; want 1 and 5", written.OptionID, reversed.OptionID)
	}
	round := func(p []float64) []float64 {
		out := make([]float64, len(p))
		for k, v := range p {
			out[k] = math.Round(v*100) / 100
		}
		return out
	}
	if got, want := round(reversed.Probs), []float64{.1, 0, 0, .3, .6}; !slices.Equal(got, want) {
		t.Fatalf("reversed probs %v, want %v in canonical order", got, want)
	}
	if got, want := round(written.Probs), []float64{.6, .3, 0, 0, .1}; !slices.Equal(got, want) {
		t.Fatalf("written probs %v, want %v", got, want)
	}
}

// TestAShuffledCellsJSONSchemaListsAndReadsShownLetterIDs: letter ids shown shuffled; the schema's enum lists the
// shown ids in shown order and the JSON answer maps back.
func TestAShuffledCellsJSONSchemaListsAndReadsShownLetterIDs(t *testing.T) {
	spec := experimenttest.Grid(1, 1, 1, 1, experimenttest.Edit(func(s *experiment.Spec) {
		s.Questionnaire.Options = experiment.OptionSet{Options: []experiment.Option{
			{ID: "A", Text: "A) Agree", Weight: 3}, {ID: "B", Text: "B) Unsure", Weight: 2}, {ID: "C", Text: "C) Disagree", Weight: 1}}}
		s.Questionnaire.Order = &experiment.OrderSettings{Mode: experiment.OrderReversed}
		s.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerJSONSchema}
	}))
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	c := spec.Cell(0)
	var rf struct {
		JSONSchema struct {
			Schema struct {
				Properties struct {
					Answer struct {
						Enum []string `json:"enum"`
					} `json:"answer"`
				} `json:"properties"`
			} `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(spec.CallParams(c).ResponseFormat, &rf); err != nil {
		t.Fatal(err)
	}
	if got := rf.JSONSchema.Schema.Properties.Answer.Enum; !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Fatalf("enum %v, want the shown ids A B C", got)
	}
	msgs, err := spec.Render(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msgs[len(msgs)-1].Content, "A) Disagree\nB) Unsure\nC) Agree") {
		t.Fatalf("prompt does not show the reversed, relabelled options:\n%s", msgs[len(msgs)-1].Content)
	}
	rec := answerRecord(&spec, c, respcache.Answer{Text: `{"answer":"A"}`, FinishReason: llm.FinishStop}, experiment.Price{}, false)
	if rec.OptionID != "C" {
		t.Fatalf("json answer A (shown Disagree) recorded as %q, want C", rec.OptionID)
	}
}

// TestAnswerRecordReadsTheLabelsShownNotTheIDs: options with ids 5, 4, 9, 2, 1 shown as written read "1. …"
// to "5. …". The model's "1" is the option shown first (id 5), its logprobs on "1" and "2" are the first two
// options', and "9", the one id no position shows, is no label: its mass is outside the coverage. Under
// json_schema the JSON's "1" is the same option.
func TestAnswerRecordReadsTheLabelsShownNotTheIDs(t *testing.T) {
	lp := math.Log
	for _, mode := range []experiment.AnswerMode{experiment.AnswerLogprobs, experiment.AnswerJSONSchema} {
		spec := experimenttest.Grid(1, 1, 1, 1, experimenttest.Edit(func(s *experiment.Spec) {
			s.Questionnaire.Options = experiment.OptionSet{}
			for k, id := range []string{"5", "4", "9", "2", "1"} {
				s.Questionnaire.Options.Options = append(s.Questionnaire.Options.Options,
					experiment.Option{ID: id, Text: fmt.Sprintf("%d. Level %d", k+1, k+1), Weight: k + 1})
			}
			s.Run.Answer = &experiment.AnswerSettings{Mode: mode, Logprobs: true}
		}))
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		text, toks := "1", []llm.TokenLogprob{}
		if mode == experiment.AnswerJSONSchema {
			text = `{"answer":"1"}`
			toks = append(toks, llm.TokenLogprob{Token: `{"answer":"`, Logprob: 0})
		}
		toks = append(toks, llm.TokenLogprob{Token: "1", Logprob: lp(.6), Top: []llm.TopLogprob{
			{Token: "1", Logprob: lp(.6)}, {Token: "2", Logprob: lp(.2)}, {Token: "9", Logprob: lp(.15)}, {Token: "I", Logprob: lp(.05)}}})
		rec := answerRecord(&spec, spec.Cell(0), respcache.Answer{Text: text, FinishReason: llm.FinishStop, Logprobs: toks}, experiment.Price{}, false)
		if rec.OptionID != "5" {
			t.Errorf("%s: answer %s recorded as option %q, want 5 (shown as 1.)", mode, text, rec.OptionID)
		}
		want := []float64{.6 / .8, .2 / .8, 0, 0, 0}
		if len(rec.Probs) != len(want) || math.Abs(rec.Coverage-.8) > 1e-12 {
			t.Fatalf("%s: probs %v coverage %v; want %v over 0.8", mode, rec.Probs, rec.Coverage, want)
		}
		for k := range want {
			if math.Abs(rec.Probs[k]-want[k]) > 1e-12 {
				t.Errorf("%s: probs %v, want %v in option order", mode, rec.Probs, want)
				break
			}
		}
	}
}
