package specfile

import (
	"strings"
	"testing"
)

// TestRemarks: what a valid spec likely got wrong is remarked on (starter validate prints it as a note): a
// base_url with no API version in its path, named with the URL its calls go to and the /v1 to write; a
// json_schema answer with a reason under too small a completion cap. Specs without these mistakes get none.
func TestRemarks(t *testing.T) {
	const m1 = "    name: gpt-4o-mini\n"
	tests := []struct {
		name       string
		doc        string // baseSpec when empty
		old, new   string
		old2, new2 string
		want       string // a remark contains this; "" for none at field
		field      string // no other remark starts with this field
	}{
		{name: "ollama without /v1", old: m1, new: m1 + "    base_url: http://localhost:11434\n", field: "models[0].base_url",
			want: "models[0].base_url: http://localhost:11434 has no API version in its path, so m1's calls go to " +
				"http://localhost:11434/chat/completions; most servers (Ollama, llama.cpp, vLLM, OpenAI, Anthropic) serve their API " +
				"under /v1 and answer 404 there: if this one does, write base_url: http://localhost:11434/v1"},
		{name: "trailing slash", old: m1, new: m1 + "    base_url: http://localhost:8080/\n", field: "models[0].base_url",
			want: "calls go to http://localhost:8080/chat/completions; most servers"},
		{name: "a path without a version", old: m1, new: m1 + "    base_url: https://gw.example/api\n", field: "models[0].base_url",
			want: "calls go to https://gw.example/api/chat/completions;"},
		{name: "/v1", old: m1, new: m1 + "    base_url: http://localhost:11434/v1\n", field: "models[0].base_url"},
		{name: "/v1/", old: m1, new: m1 + "    base_url: http://localhost:11434/v1/\n", field: "models[0].base_url"},
		{name: "/openai/v1", old: m1, new: m1 + "    base_url: https://api.groq.com/openai/v1\n", field: "models[0].base_url"},
		{name: "a version before the path", old: m1, new: m1 + "    base_url: https://generativelanguage.googleapis.com/v1beta/openai/\n", field: "models[0].base_url"},
		{name: "v2", old: m1, new: m1 + "    base_url: https://api.example/v2\n", field: "models[0].base_url"},
		{name: "the default", field: "models[0].base_url"},
		{name: "anthropic", doc: anthropicSpec, old: "provider: anthropic\n", new: "provider: anthropic\n    base_url: https://proxy.example\n",
			field: "models[0].base_url", want: "calls go to https://proxy.example/messages;"},

		{name: "reason under 16 tokens", old: m1, new: m1 + "    params: {max_tokens: 16}\n", old2: "run:\n", new2: "run:\n  answer: {mode: json_schema, reason: true}\n",
			field: "models[0].params", want: "models[0].params.max_tokens: 16 tokens is little for a json_schema answer with a reason: " +
				`{"answer":"<id>","reason":"..."} takes 7 to 10 tokens before the reason starts, so answers whose reason runs longer are cut ` +
				"at the cap (finish_reason length), their JSON unclosed and the reason lost; give at least 64 (e.g. 256), or remove reason: true"},
		{name: "reason under max_completion_tokens", old: m1, new: m1 + "    params: {max_completion_tokens: 40}\n    answer: {mode: json_schema, reason: true}\n",
			field: "models[0].params", want: "models[0].params.max_completion_tokens: 40 tokens is little"},
		{name: "reason under 64 tokens", old: m1, new: m1 + "    params: {max_tokens: 64}\n    answer: {mode: json_schema, reason: true}\n", field: "models[0].params"},
		{name: "reason under the default cap", old: m1, new: m1 + "    answer: {mode: json_schema, reason: true}\n", field: "models[0].params"},
		{name: "no reason under 16 tokens", old: m1, new: m1 + "    params: {max_tokens: 16}\n    answer: {mode: json_schema}\n", field: "models[0].params"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc
			if doc == "" {
				doc = baseSpec
			}
			if tc.old != "" {
				doc = replace(t, doc, tc.old, tc.new)
			}
			if tc.old2 != "" {
				doc = replace(t, doc, tc.old2, tc.new2)
			}
			s, err := Parse([]byte(doc), "spec.yaml", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range s.Remarks() {
				switch {
				case tc.want != "" && strings.Contains(r, tc.want):
					found = true
				case strings.HasPrefix(r, tc.field):
					t.Errorf("remark %q, want none at %s", r, tc.field)
				}
			}
			if tc.want != "" && !found {
				t.Errorf("remarks %q, want one containing %q", s.Remarks(), tc.want)
			}
		})
	}
}

// TestQuickstartHasNoRemarks: the example every user runs first must validate without notes.
func TestQuickstartHasNoRemarks(t *testing.T) {
	s, err := Load("../examples/quickstart/experiment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Remarks(); len(r) != 0 {
		t.Errorf("the quickstart has remarks: %q", r)
	}
}
