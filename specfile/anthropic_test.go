package specfile

import (
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

const anthropicSpec = `name: claude
seeds: [1, 2]
models:
  - id: claude
    name: claude-haiku-4-5
    provider: anthropic
    params: {temperature: 0.7, max_tokens: 16}
    batch: {mode: batch}
prompt:
  type: chat
  messages:
    - {role: system, content: "Answer as {persona_description}."}
    - {role: user, content: "{question}\n{answer_options}"}
personas: [{id: p}]
questionnaire:
  options: [{id: "1", text: "1. no", weight: 1}, {id: "2", text: "2. yes", weight: 2}]
  items: [{id: "1", text: "I like batches."}]
`

// TestAnthropicModel: provider anthropic is accepted with its defaults (the key variable; Anthropic's limits of a
// batch), batch mode runs for it, and what Anthropic cannot do is an error at its position in the file.
func TestAnthropicModel(t *testing.T) {
	s, err := Parse([]byte(anthropicSpec), "spec.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	m := s.Models[0]
	if m.Provider != experiment.ProviderAnthropic || m.APIKeyEnv != "ANTHROPIC_API_KEY" || m.BaseURL != "" {
		t.Errorf("model %+v, want provider anthropic with api_key_env ANTHROPIC_API_KEY and no base URL", m)
	}
	if set := s.BatchSettings(m); set.MaxRequests != experiment.BatchMaxRequestsAnthropic || set.MaxBytes != experiment.BatchMaxBytesAnthropic {
		t.Errorf("batch settings %+v, want Anthropic's limits", set)
	}
	if r := strings.Join(s.Remarks(), "\n"); !strings.Contains(r, "models[0].provider: Anthropic's API has no seed") {
		t.Errorf("remarks %q, want one saying the seed is not sent", r)
	}
	own := strings.Replace(anthropicSpec, "provider: anthropic", "provider: anthropic\n    api_key_env: WORK_ANTHROPIC_API_KEY", 1)
	if s, err := Parse([]byte(own), "spec.yaml", ""); err != nil || s.Models[0].APIKeyEnv != "WORK_ANTHROPIC_API_KEY" {
		t.Errorf("own api_key_env: %v, %+v", err, s)
	}

	tests := []struct{ name, from, to, want string }{
		{"embeddings", "name: claude\n", "name: claude\nkind: embed\nembed: {texts: items}\n",
			`spec.yaml:8:15: models[0].provider: anthropic has no embeddings API; a kind: embed spec needs an OpenAI-compatible provider: "openai" or "sim"`},
		{"no max_tokens", "temperature: 0.7, max_tokens: 16", "temperature: 0.7",
			"spec.yaml:7:5: models[0].params.max_tokens: missing: Anthropic's Messages API requires max_tokens"},
		{"temperature", "temperature: 0.7", "temperature: 1.5",
			"spec.yaml:7:27: models[0].params.temperature: 1.5 is out of range for provider anthropic; want a number from 0 to 1"},
		{"late system message", `{role: user, content: "{question}\n{answer_options}"}`,
			`{role: user, content: "{question}\n{answer_options}"}` + "\n    - {role: system, content: \"Be brief.\"}",
			"spec.yaml:14:14: prompt.messages[2].role: a system message after the first user or assistant message"},
		{"misspelt", "provider: anthropic", "provider: antropic", `models[0].provider: unknown provider "antropic" (did you mean "anthropic"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(anthropicSpec, tt.from, tt.to, 1)
			if src == anthropicSpec {
				t.Fatalf("%q is not in the spec", tt.from)
			}
			_, err := Parse([]byte(src), "spec.yaml", "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to contain\n%s", err, tt.want)
			}
		})
	}
}
