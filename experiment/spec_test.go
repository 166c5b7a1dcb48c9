package experiment

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLoadFrameworkExample(t *testing.T) {
	s, err := Load("testdata/bfi_example.json")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Name != "Big Five Inventory example" || len(s.Seeds) != 1 || s.Seeds[0] != 7 {
		t.Errorf("name/seeds = %q %v", s.Name, s.Seeds)
	}
	m := s.Models[0]
	if m.ID != "qwen" || m.Name != "qwen2.5" || m.Provider != ProviderOpenAI || m.BaseURL != "http://localhost:11434/v1" || m.Params.MaxTokens != 64 {
		t.Errorf("model = %+v", m)
	}
	if len(s.Personas) != 1 || s.Personas[0].ID != "Optimistic Persona" || s.Personas[0].Attributes["age"] != "18" {
		t.Errorf("personas = %+v", s.Personas)
	}
	if got, want := s.PersonaDescription(0), "Ms Muller is 18 years old and very open minded."; got != want {
		t.Errorf("PersonaDescription = %q, want %q", got, want)
	}
	q := s.Questionnaire
	if q.Instruction != "Rate each statement." || len(q.Options.Options) != 5 || q.Options.Delimiter != ", " {
		t.Errorf("questionnaire = %+v", q)
	}
	if len(q.Scales) != 2 || q.Scales[1] != (Scale{ID: "2", Name: "Agreeableness"}) {
		t.Errorf("scales = %+v", q.Scales)
	}
	if len(q.Items) != 2 || q.Items[0].ID != "1" || q.Items[1].ID != "2" || !q.Items[1].Reversed || q.Items[1].Scale != "2" {
		t.Errorf("items = %+v", q.Items)
	}
	if sc, ok := s.Score(1, "4"); !ok || sc != 2 {
		t.Errorf("Score(reversed item, 4) = %d, %v; want 2", sc, ok)
	}
	msgs, err := s.Render(s.Cell(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Message{
		{Role: "system", Content: "Answer as: Ms Muller is 18 years old and very open minded.\nRate each statement."},
		{Role: "user", Content: "Question: I see myself as someone who is talkative.\nAnswer Options: 1. Disagree strongly, 2. Disagree a little, 3. Neutral, 4. Agree a little, 5. Agree strongly\nAnswer:"},
	}
	if !equalMessages(msgs, want) {
		t.Errorf("Render =\n%q\nwant\n%q", msgs, want)
	}
}

func equalMessages(a, b []Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLoadIPIP50(t *testing.T) {
	s, err := Load("testdata/ipip50.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := s.Summary(), "IPIP-50 · 2 models × 3 seeds × 50 items × 2 personas = 600 calls"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if s.Seeds[1] != 2 {
		t.Errorf("seeds = %v", s.Seeds)
	}
	it := s.Questionnaire.Items
	if it[0].ID != "1" || it[0].Scale != "E" || it[0].Reversed || !it[1].Reversed || it[49].ID != "50" {
		t.Errorf("items = %+v %+v %+v", it[0], it[1], it[49])
	}
	if got := s.PersonaDescription(1); got != "Mr Okafor is 64 years old and lives in Lagos." {
		t.Errorf("PersonaDescription(1) = %q", got)
	}
	if time.Duration(s.Run.CallTimeout) != 30*time.Second || s.Run.MaxConcurrency != 16 {
		t.Errorf("run = %+v", s.Run)
	}
	if s.Models[1].Price == nil || s.Models[1].Price.OutputPerMTok != 0.6 {
		t.Errorf("price = %+v", s.Models[1].Price)
	}
}

// The canonical JSON form of a loaded spec is itself a spec that loads to the same thing.
func TestCanonicalJSONRoundTrip(t *testing.T) {
	s, err := Load("testdata/ipip50.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse(b, "canonical.json", ".")
	if err != nil {
		t.Fatalf("Parse(canonical JSON): %v", err)
	}
	b2, _ := json.MarshalIndent(s2, "", "  ")
	if string(b) != string(b2) {
		t.Errorf("round trip differs:\n%s\n---\n%s", b, b2)
	}
	if s.Hash() != s2.Hash() || len(s.Hash()) != 12 {
		t.Errorf("Hash %q vs %q", s.Hash(), s2.Hash())
	}
	var raw Spec
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Hash() != s.Hash() {
		t.Errorf("Hash of the JSON workflow input differs: %q vs %q", raw.Hash(), s.Hash())
	}
	raw.Seeds = append(raw.Seeds, 99)
	if raw.Hash() == s.Hash() {
		t.Errorf("Hash did not change with the seeds")
	}
}

func TestHashIgnoresSpelledOutDefaults(t *testing.T) {
	a := minimalSpec()
	b := minimalSpec()
	b.ApplyDefaults()
	if a.Hash() != b.Hash() {
		t.Errorf("Hash with defaults %q != without %q", b.Hash(), a.Hash())
	}
}

func TestAllErrorsCollected(t *testing.T) {
	doc := `name: x
models:
  - {id: a, name: m, rpm: -1, provider: nope}
personas: [{id: p, template: "{oops}"}]
questionnaire:
  items: [{id: "1", text: Q}, {id: "1", text: R}]
run: {on_error: never, chunk_size: -3}
extra: 1
`
	_, err := Parse([]byte(doc), "x.yaml", ".")
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse = %v", err)
	}
	want := []string{"x.yaml:3:", "models[0].rpm", "models[0].provider", "personas[0].template", "questionnaire.options",
		"questionnaire.items[1].id", "run.on_error", "run.chunk_size", "x.yaml:8:1: extra: unknown key"}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("errors miss %q:\n%s", w, msg)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != len(errs) {
		t.Errorf("Error() has %d lines for %d errors", n, len(errs))
	}
	var one *Error
	if !errors.As(err, &one) {
		t.Errorf("errors.As(*Error) failed")
	}
	// Errors come in file order.
	for i := 1; i < len(errs); i++ {
		if errs[i].Line < errs[i-1].Line {
			t.Errorf("errors out of order: %v before %v", errs[i-1], errs[i])
		}
	}
}

func TestSyntaxErrorHasPosition(t *testing.T) {
	for _, doc := range []string{"name: [x\nseeds: 1\n", "{\"name\": \"x\",\n \"seeds\": [1,}\n"} {
		_, err := Parse([]byte(doc), "s.yaml", ".")
		var errs Errors
		if !errors.As(err, &errs) || errs[0].Line == 0 || !strings.Contains(errs[0].Msg, "not valid YAML") {
			t.Errorf("Parse(%q) = %v, want a syntax error with a line", doc, err)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/nope.yaml")
	if err == nil || !strings.Contains(err.Error(), "testdata/nope.yaml") {
		t.Errorf("Load(missing) = %v", err)
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
