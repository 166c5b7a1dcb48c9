package specfile

import (
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

const geminiSpec = `name: gemini
seeds: [1, 2]
models:
  - id: gemini
    name: gemini-2.5-flash
    provider: gemini
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

// TestGeminiModel: provider gemini is accepted with its defaults (the key variable, its batch limits), and what a
// Gemini batch line cannot carry is an error at its position in the file.
func TestGeminiModel(t *testing.T) {
	s, err := Parse([]byte(geminiSpec), "spec.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	m := s.Models[0]
	if m.Provider != experiment.ProviderGemini || m.APIKeyEnv != "GEMINI_API_KEY" || m.BaseURL != "" {
		t.Errorf("model %+v, want provider gemini with api_key_env GEMINI_API_KEY and no base URL", m)
	}
	if set := s.BatchSettings(m); set.MaxRequests != experiment.BatchMaxRequestsGemini || set.MaxBytes != experiment.BatchMaxBytesGemini {
		t.Errorf("batch settings %+v, want Gemini's", set)
	}
	tests := []struct{ name, from, to, want string }{
		{"logit_bias", "max_tokens: 16}", `max_tokens: 16, logit_bias: {"1": 5}}`,
			"models[0].params.logit_bias: provider gemini sends no logit_bias"},
		{"extra", "max_tokens: 16}", "max_tokens: 16, extra: {top_k: 4}}",
			"models[0].params.extra: provider gemini sends no extra"},
		{"embeddings in batch mode", "name: gemini\n", "name: gemini\nkind: embed\nembed: {texts: items}\n",
			"models[0].batch.mode: provider gemini embeds only synchronously"},
		{"logprobs answers", "batch: {mode: batch}", "batch: {mode: batch}\n    answer: {mode: logprobs}",
			"silico asks Gemini for no token probabilities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(geminiSpec, tt.from, tt.to, 1)
			if src == geminiSpec {
				t.Fatalf("%q is not in the spec", tt.from)
			}
			_, err := Parse([]byte(src), "spec.yaml", "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to contain\n%s", err, tt.want)
			}
		})
	}
}
