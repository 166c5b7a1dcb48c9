package specfile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// frameworkFull uses every key the seed-000 framework documents for its experiment files.
const frameworkFull = `{
  "name": "Every key",
  "description": "one file with every documented key",
  "parameters": {"seeds": ["7", 8], "lazy_load_models": true},
  "metadata": {"author": "someone", "version": 2, "tags": ["a", "b"]},
  "models": {
    "gpt": {"type": "openai", "name_or_path": "gpt-4o-mini", "base_url": "https://api.openai.com/v1",
            "api_key": null, "parameters": {"temperature": 0, "max_tokens": 16, "top_p": 1, "stop": ["\n"]}},
    "qwen": {"type": "ollama", "model": "qwen2.5", "base_url": "http://localhost:11434/v1"},
    "ds": {"type": "deepseek", "name_or_path": "deepseek-chat"},
    "gem": {"type": "google", "name_or_path": "gemini-2.0-flash"}
  },
  "prompt_template": {"type": "chat", "messages": [
    {"role": "system", "content": "Answer as: {persona_description}\n{general_instruction}"},
    {"role": "user", "content": "Question: {question}\nAnswer Options: {answer_options}\nAnswer: {{"},
    {"role": "assistant", "content": "}}"}]},
  "demographic_profiles": {
    "Optimistic Persona": {"attributes": {"age": 18, "title": "Ms", "name": "Muller", "town": "Bonn"},
                           "template": "{title} {name} from {town} is {age}."},
    "Default": {"attributes": {"name": "Doe"}}
  },
  "questionnaire": {
    "name": "BFI",
    "general_instruction": "Rate each statement.",
    "attributes": {"dimension": {"1": "Extraversion", "2": "Agreeableness"}},
    "default_answer_options": {"1": {"text": "1. Disagree", "weight": 1}, "2": {"text": "2. Agree", "weight": 2},
                               "x": {"text": "x. Don't know", "weight": 0, "ignored_for_scale": true}},
    "instruction_items": [
      {"question": "I am talkative.", "attributes": {"dimension": "1"}},
      {"question": "I find fault with others.", "reversed": true, "attributes": {"dimension": "2"},
       "answer_options": {"options": {"a": {"text": "a) no", "weight": 1}, "b": {"text": "b) yes", "weight": 5}},
                          "delimiter": " | ", "prepend_delimiter": true}}
    ]
  }
}`

func TestFrameworkEveryDocumentedKey(t *testing.T) {
	s, err := Parse([]byte(frameworkFull), "full.json", t.TempDir())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checks := []struct {
		key string
		ok  bool
	}{
		{"name", s.Name == "Every key"},
		{"description", s.Description == "one file with every documented key"},
		{"parameters.seeds", len(s.Seeds) == 2 && s.Seeds[0] == 7 && s.Seeds[1] == 8},
		{"models (map, ids in file order)", len(s.Models) == 4 && s.Models[0].ID == "gpt" && s.Models[3].ID == "gem"},
		{"models.*.type openai + name_or_path + base_url", s.Models[0].Provider == experiment.ProviderOpenAI && s.Models[0].Name == "gpt-4o-mini" &&
			s.Models[0].BaseURL == "https://api.openai.com/v1"},
		{"models.*.parameters", s.Models[0].Params.Temperature != nil && *s.Models[0].Params.Temperature == 0 &&
			s.Models[0].Params.MaxTokens == 16 && *s.Models[0].Params.TopP == 1 && s.Models[0].Params.Stop[0] == "\n"},
		{"models.*.type ollama + model", s.Models[1].Name == "qwen2.5" && s.Models[1].BaseURL == "http://localhost:11434/v1"},
		{"models.*.type deepseek", s.Models[2].BaseURL == "https://api.deepseek.com/v1" && s.Models[2].APIKeyEnv == "DEEPSEEK_API_KEY"},
		{"models.*.type google", strings.Contains(s.Models[3].BaseURL, "googleapis") && s.Models[3].APIKeyEnv == "GEMINI_API_KEY"},
		{"prompt_template chat messages", s.Prompt.Type == experiment.PromptChat && len(s.Prompt.Messages) == 3 && s.Prompt.Messages[2].Role == experiment.RoleAssistant},
		{"demographic_profiles attributes + template", s.Personas[0].ID == "Optimistic Persona" && s.PersonaDescription(0) == "Ms Muller from Bonn is 18."},
		{"demographic_profiles default template", s.Personas[1].Template == experiment.DefaultPersonaTemplate},
		{"questionnaire.name", s.Questionnaire.Name == "BFI"},
		{"questionnaire.general_instruction", s.Questionnaire.Instruction == "Rate each statement."},
		{"questionnaire.attributes.dimension", len(s.Questionnaire.Scales) == 2 && s.Questionnaire.Scales[1].Name == "Agreeableness"},
		{"default_answer_options map + ignored_for_scale", len(s.Questionnaire.Options.Options) == 3 && s.Questionnaire.Options.Options[2].IgnoredForScale &&
			s.Questionnaire.Options.Delimiter == ", "},
		{"instruction_items question + attributes.dimension", s.Questionnaire.Items[0].Text == "I am talkative." && s.Questionnaire.Items[0].Scale == "1"},
		{"item reversed", s.Questionnaire.Items[1].Reversed},
		{"item answer_options {options, delimiter, prepend_delimiter}", s.Questionnaire.Items[1].Options != nil &&
			len(s.Questionnaire.Items[1].Options.Options) == 2 && s.Questionnaire.Items[1].Options.Delimiter == " | " &&
			s.Questionnaire.Items[1].Options.PrependDelimiter},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not loaded as documented", c.key)
		}
	}
	if sc, ok := s.Score(1, "b"); !ok || sc != 1 {
		t.Errorf("reversed item with own options: Score(b) = %d, %v; want 1", sc, ok)
	}
	// Keys that do not apply to silico load with one note each, never an error.
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "parameters.lazy_load_models") || !strings.HasPrefix(s.Notes[0], "full.json:") {
		t.Errorf("Notes = %q, want one note on parameters.lazy_load_models with its position", s.Notes)
	}
	msgs, err := s.Render(s.Cell(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msgs[1].Content, "Answer: {") || msgs[2].Content != "}" {
		t.Errorf("literal braces: %q", msgs)
	}
}

func TestFrameworkSeedsAndNoteVariants(t *testing.T) {
	base := func(params string) string {
		return `{"name":"x","parameters":` + params + `,
"models":{"m":{"type":"sim","name_or_path":"s"}},
"demographic_profiles":{"a":{"attributes":{"name":"A"}}},
"questionnaire":{"name":"q","general_instruction":"Rate.","default_answer_options":{"1":{"text":"No","weight":1}},"instruction_items":[{"question":"Q?"}]}}`
	}
	for _, tc := range []struct {
		params string
		seeds  []int64
		notes  int
	}{
		{`{}`, []int64{experiment.DefaultSeed}, 0},
		{`{"seeds": null}`, []int64{experiment.DefaultSeed}, 0},
		{`{"seeds": []}`, []int64{experiment.DefaultSeed}, 0},
		{`{"seeds": "5"}`, []int64{5}, 0},
		{`{"lazy_load_models": false}`, []int64{experiment.DefaultSeed}, 1},
		{`{"lazy_load_models": null}`, []int64{experiment.DefaultSeed}, 0},
	} {
		s, err := Parse([]byte(base(tc.params)), "f.json", t.TempDir())
		if err != nil {
			t.Errorf("parameters %s: %v", tc.params, err)
			continue
		}
		if len(s.Seeds) != len(tc.seeds) || s.Seeds[0] != tc.seeds[0] || len(s.Notes) != tc.notes {
			t.Errorf("parameters %s: seeds %v, notes %q; want %v and %d notes", tc.params, s.Seeds, s.Notes, tc.seeds, tc.notes)
		}
	}
	// lazy_load_models must still be a boolean.
	if _, err := Parse([]byte(base(`{"lazy_load_models": "soon"}`)), "f.json", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), "parameters.lazy_load_models") {
		t.Errorf("lazy_load_models: \"soon\" = %v, want an error at the key", err)
	}
	// A note never travels with the spec.
	s, _ := Parse([]byte(base(`{"lazy_load_models": true}`)), "f.json", t.TempDir())
	if b, err := json.Marshal(s); err != nil || strings.Contains(string(b), "lazy_load") {
		t.Errorf("spec JSON carries the note: %s (%v)", b, err)
	}
}

// TestFrameworkNumPredict: Ollama's num_predict in a framework file is read as max_tokens, with a note at its
// position; "no limit" sends none; with max_tokens beside it, or not a number, it is an error.
func TestFrameworkNumPredict(t *testing.T) {
	spec := func(params string) string {
		return `{"name":"x",
"models":{"m":{"type":"ollama","name_or_path":"llama3","parameters":` + params + `}},
"demographic_profiles":{"a":{"attributes":{"name":"A"}}},
"questionnaire":{"name":"q","general_instruction":"Rate.","default_answer_options":{"1":{"text":"No","weight":1}},"instruction_items":[{"question":"Q?"}]}}`
	}
	s, err := Parse([]byte(spec(`{"temperature": 0, "num_predict": 12}`)), "f.json", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if s.Models[0].Params.MaxTokens != 12 || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "f.json:2:") ||
		!strings.Contains(s.Notes[0], "models.m.parameters.num_predict: read as max_tokens: 12") {
		t.Errorf("num_predict 12: max_tokens %d, notes %q; want 12 and a note at the key", s.Models[0].Params.MaxTokens, s.Notes)
	}
	s, err = Parse([]byte(spec(`{"num_predict": -1}`)), "f.json", t.TempDir())
	if err != nil || s.Models[0].Params.MaxTokens != 0 || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "no limit") {
		t.Errorf("num_predict -1: %v, max_tokens %d, notes %q; want none sent and a note", err, s.Models[0].Params.MaxTokens, s.Notes)
	}
	for params, want := range map[string]string{
		`{"num_predict": 12, "max_tokens": 8}`: "both num_predict and max_tokens",
		`{"num_predict": "lots"}`:              "num_predict: want a whole number",
	} {
		if _, err := Parse([]byte(spec(params)), "f.json", t.TempDir()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parameters %s: %v, want an error containing %q", params, err, want)
		}
	}
}
