package specfile

import (
	"strings"
	"testing"
)

// TestVariantKeys reads an item's variants and prompt_variants, and places their mistakes at file:line:col.
func TestVariantKeys(t *testing.T) {
	doc := "name: v\nmodels: [{name: m}]\npersonas: [{id: p}]\nquestionnaire:\n" +
		"  options: [{id: \"1\", text: \"1. No\", weight: 1}, {id: \"2\", text: \"2. Yes\", weight: 2}]\n" +
		"  items:\n" +
		"    - Q1\n" +
		"    - {text: Q2, variants: [{id: neg, text: Not Q2, reversed: true}]}\n" +
		"prompt_variants:\n" +
		"  - {id: terse, template: \"{question}\\n{answer_options}\"}\n"
	s, err := Parse([]byte(doc), "v.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Questionnaire.Items[1].Variants; len(v) != 1 || v[0].ID != "neg" || v[0].Text != "Not Q2" || !v[0].Reversed {
		t.Fatalf("items[1].variants = %+v", v)
	}
	if pv := s.PromptVariants; len(pv) != 1 || pv[0].ID != "terse" || pv[0].Type != "normal" {
		t.Fatalf("prompt_variants = %+v", pv)
	}
	if got := s.NumCells(); got != 6 {
		t.Fatalf("NumCells = %d, want 6 (2 prompts × (Q1 + Q2 twice))", got)
	}
	bad := strings.Replace(doc, "{id: neg, text: Not Q2", "{id: original, text: \"\"", 1)
	_, err = Parse([]byte(bad), "v.yaml", ".")
	if err == nil {
		t.Fatal("a reserved variant id and an empty text are accepted")
	}
	for _, want := range []string{"v.yaml:8:", "questionnaire.items[1].variants[0].id: \"original\" is reserved",
		"questionnaire.items[1].variants[0].text: missing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	bad = strings.Replace(doc, "{id: terse, template:", "{id: terse, type: chat, template:", 1)
	if _, err = Parse([]byte(bad), "v.yaml", "."); err == nil || !strings.Contains(err.Error(), "v.yaml:10:") ||
		!strings.Contains(err.Error(), "prompt_variants[0].template: a chat prompt takes messages") {
		t.Errorf("a chat prompt variant with a template: %v", err)
	}
}
