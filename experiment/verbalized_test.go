package experiment

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestVerbalizedCall holds what a verbalized cell sends: a strict json_schema listing each of its item's option
// ids as a required number and nothing else, and the instruction after the last user message's text.
func TestVerbalizedCall(t *testing.T) {
	s := minimalSpec()
	s.Run.Answer = &AnswerSettings{Mode: AnswerVerbalized}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		item int
		ids  []string
	}{{0, []string{"1", "2"}}, {2, []string{"a", "b"}}} {
		c := Cell{Item: tc.item}
		var rf struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string `json:"name"`
				Strict bool   `json:"strict"`
				Schema struct {
					Type       string                     `json:"type"`
					Properties map[string]json.RawMessage `json:"properties"`
					Required   []string                   `json:"required"`
					Additional *bool                      `json:"additionalProperties"`
				} `json:"schema"`
			} `json:"json_schema"`
		}
		raw := s.CallParams(c).ResponseFormat
		if err := json.Unmarshal(raw, &rf); err != nil {
			t.Fatalf("item %d: %s: %v", tc.item, raw, err)
		}
		sc := rf.JSONSchema.Schema
		if rf.Type != "json_schema" || !rf.JSONSchema.Strict || sc.Type != "object" || !reflect.DeepEqual(sc.Required, tc.ids) ||
			len(sc.Properties) != len(tc.ids) || sc.Additional == nil || *sc.Additional {
			t.Errorf("item %d: %s; want a strict object of required %v only", tc.item, raw, tc.ids)
		}
		for _, id := range tc.ids {
			var p struct{ Type string }
			if err := json.Unmarshal(sc.Properties[id], &p); err != nil || p.Type != "number" {
				t.Errorf("item %d: property %s = %s; want a number", tc.item, id, sc.Properties[id])
			}
		}
		msgs, err := s.Render(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		last := msgs[len(msgs)-1]
		if last.Role != RoleUser || !strings.HasSuffix(last.Content, "\n\n"+VerbalizedInstruction(s.OptionsFor(tc.item))) ||
			!strings.Contains(last.Content, strings.Join(tc.ids, ", ")) {
			t.Errorf("item %d: last message %q; want the instruction naming %v at its end", tc.item, last.Content, tc.ids)
		}
	}
	// Other modes send the prompt as written.
	s.Run.Answer = nil
	if msgs, _ := s.Render(Cell{}, nil); strings.Contains(msgs[len(msgs)-1].Content, "probability") {
		t.Errorf("a text cell got the instruction: %q", msgs[len(msgs)-1].Content)
	}
}

// TestVerbalizedValidation holds the errors of a verbalized answer a provider or the other answer keys cannot
// serve.
func TestVerbalizedValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(s *Spec)
		field  string
		want   string
	}{
		{"anthropic", func(s *Spec) { s.Models[0].Provider = ProviderAnthropic }, "run.answer.mode", "Anthropic's API does not take"},
		{"own response_format", func(s *Spec) { s.Models[1].Params.ResponseFormat = json.RawMessage(`{"type":"json_object"}`) }, "run.answer.mode", "remove params.response_format"},
		{"prefix", func(s *Spec) { s.Run.Answer.Prefix = "Answer: " }, "run.answer.prefix", "remove prefix"},
		{"logprobs", func(s *Spec) { s.Run.Answer.Logprobs = true }, "run.answer.logprobs", "goes with mode json_schema"},
		{"reason", func(s *Spec) { s.Run.Answer.Reason = true }, "run.answer.reason", "set mode: json_schema"},
	} {
		s := minimalSpec()
		s.Run.Answer = &AnswerSettings{Mode: AnswerVerbalized}
		tc.mutate(s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %s: ...%s...", tc.name, err, tc.field, tc.want)
		}
	}
}

// TestVerbalizedRemark holds the note on a completion cap too small for an object of probabilities: 8 tokens per
// option of the largest option set, plus 4.
func TestVerbalizedRemark(t *testing.T) {
	s := minimalSpec() // two options per item
	s.Run.Answer = &AnswerSettings{Mode: AnswerVerbalized}
	s.Models = s.Models[1:]
	s.Models[0].Params.MaxTokens = 19
	if r := s.Remarks(); len(r) != 1 || !strings.HasPrefix(r[0], "models[0].params.max_tokens: 19 tokens is little for a verbalized answer") ||
		!strings.Contains(r[0], "at least 20") {
		t.Errorf("remarks %q; want one on max_tokens 19 asking for 20", r)
	}
	s.Models[0].Params.MaxTokens = 20
	if r := s.Remarks(); len(r) != 0 {
		t.Errorf("remarks %q at 20 tokens; want none", r)
	}
}
