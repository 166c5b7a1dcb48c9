package experiment

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHashIgnoresSpelledOutDefaults(t *testing.T) {
	a := minimalSpec()
	b := minimalSpec()
	b.ApplyDefaults()
	if a.Hash() != b.Hash() {
		t.Errorf("Hash with defaults %q != without %q", b.Hash(), a.Hash())
	}
}

// minimalSpec is a resolved spec as a raw client would send it: defaults left out.
func minimalSpec() *Spec {
	return &Spec{
		Name:     "mini",
		Seeds:    []int64{1, 2},
		Models:   []Model{{ID: "a", Name: "m-a"}, {ID: "b", Name: "m-b", Provider: ProviderSim}},
		Personas: []Persona{{ID: "p1", Attributes: map[string]string{"name": "Ann", "age": "30"}}, {ID: "p2"}, {ID: "p3", Template: "{{literal}} {name}"}},
		Questionnaire: Questionnaire{
			Name: "q", Instruction: "Be honest.",
			Options: OptionSet{Options: []Option{{ID: "1", Text: "No", Weight: 1}, {ID: "2", Text: "Yes", Weight: 2}}},
			Items:   []Item{{ID: "i1", Text: "Q1 {x}"}, {ID: "i2", Text: "Q2"}, {ID: "i3", Text: "Q3", Options: &OptionSet{Options: []Option{{ID: "a", Text: "A"}, {ID: "b", Text: "B"}}, Delimiter: " | ", PrependDelimiter: true}}},
		},
	}
}

func TestValidateInMemory(t *testing.T) {
	if err := minimalSpec().Validate(); err != nil {
		t.Fatalf("Validate(minimal) = %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*Spec)
		field  string
	}{
		{"no name", func(s *Spec) { s.Name = "" }, "name"},
		{"no models", func(s *Spec) { s.Models = nil }, "models"},
		{"no personas", func(s *Spec) { s.Personas = nil }, "personas"},
		{"no items", func(s *Spec) { s.Questionnaire.Items = nil }, "questionnaire.items"},
		{"slash in id", func(s *Spec) { s.Personas[0].ID = "a/b" }, "personas[0].id"},
		{"bad role", func(s *Spec) { s.Prompt = Prompt{Type: "chat", Messages: []Message{{Role: "bot", Content: "x"}}} }, "prompt.messages[0].role"},
		{"normal without template", func(s *Spec) { s.Prompt = Prompt{Type: "normal"} }, "prompt.template"},
		{"cumulative user first", func(s *Spec) {
			s.Run.Cumulative = true
			s.Prompt = Prompt{Type: "chat", Messages: []Message{{Role: "user", Content: "{question}"}}}
		}, "run.cumulative"},
		{"negative timeout", func(s *Spec) { s.Run.CallTimeout = -1 }, "run.call_timeout"},
		{"item option without text", func(s *Spec) { s.Questionnaire.Items[2].Options.Options[1].Text = "" }, "questionnaire.items[2].options.options[1].text"},
		{"top_p zero", func(s *Spec) { z := 0.0; s.Models[0].Params.TopP = &z }, "models[0].params.top_p"},
		{"negative price", func(s *Spec) { s.Models[0].Price = &Price{InputPerMTok: -1} }, "models[0].price.input_per_mtok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := minimalSpec()
			tc.mutate(s)
			err := s.Validate()
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Validate = %v, want Errors", err)
			}
			for _, e := range errs {
				if e.Field == tc.field {
					if e.Line != 0 || e.File != "" {
						t.Errorf("in-memory error has a position: %v", e)
					}
					if !strings.HasPrefix(e.Error(), tc.field+": ") {
						t.Errorf("Error() = %q, want it to start with the field", e.Error())
					}
					return
				}
			}
			t.Errorf("no error at %q:\n%v", tc.field, err)
		})
	}
}

func TestApplyDefaults(t *testing.T) {
	s := &Spec{Models: []Model{{Name: "gpt"}}, Personas: []Persona{{ID: "p"}}}
	s.ApplyDefaults()
	s.ApplyDefaults()
	if len(s.Seeds) != 1 || s.Seeds[0] != DefaultSeed {
		t.Errorf("seeds = %v", s.Seeds)
	}
	if s.Models[0].Provider != ProviderOpenAI || s.Models[0].ID != "gpt" {
		t.Errorf("model = %+v", s.Models[0])
	}
	if s.Prompt.Type != PromptChat || len(s.Prompt.Messages) != 2 || s.Personas[0].Template != DefaultPersonaTemplate {
		t.Errorf("prompt/persona = %+v %+v", s.Prompt, s.Personas[0])
	}
	r := s.Run
	if r.MaxConcurrency != DefaultMaxConcurrency || r.MaxParallelPasses != DefaultMaxParallelPasses || r.OnError != OnErrorWarn ||
		time.Duration(r.CallTimeout) != DefaultCallTimeout || r.MaxAttempts != DefaultMaxAttempts || r.ChunkSize != DefaultChunkSize {
		t.Errorf("run = %+v", r)
	}
	if s.Questionnaire.Options.Delimiter != "\n" {
		t.Errorf("delimiter = %q", s.Questionnaire.Options.Delimiter)
	}
}

func TestSummary(t *testing.T) {
	s := minimalSpec()
	if got, want := s.Summary(), "mini · 2 models × 2 seeds × 3 items × 3 personas = 36 calls"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	s.Models, s.Seeds = s.Models[:1], s.Seeds[:1]
	s.Questionnaire.Items, s.Personas = s.Questionnaire.Items[:1], s.Personas[:1]
	if got, want := s.Summary(), "mini · 1 model × 1 seed × 1 item × 1 persona = 1 call"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 6000: "6,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
