package specfile

import (
	"strings"
	"testing"
)

// TestOrderKeys reads questionnaire.order and an item's order, and places a mistake in them at file:line:col.
func TestOrderKeys(t *testing.T) {
	doc := "name: o\nmodels: [{name: m}]\npersonas: [{id: p}]\nquestionnaire:\n" +
		"  options: [{id: \"1\", text: \"1. No\"}, {id: \"2\", text: \"2. Yes\"}, {id: x, text: Don't know}]\n" +
		"  order: {mode: balanced, pin: [x], seed: 7}\n" +
		"  items: [Q1, {text: Q2, order: {mode: shuffled, pin: [x]}}]\n"
	s, err := Parse([]byte(doc), "o.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	if o := s.Questionnaire.Order; o == nil || o.Mode != "balanced" || len(o.Pin) != 1 || o.Seed == nil || *o.Seed != 7 {
		t.Fatalf("questionnaire.order = %+v", o)
	}
	if o := s.Questionnaire.Items[1].Order; o == nil || o.Mode != "shuffled" {
		t.Fatalf("items[1].order = %+v", o)
	}
	if got := s.NumCells(); got != 3 {
		t.Fatalf("NumCells = %d, want 3 (Q1 twice, Q2 once)", got)
	}
	bad := strings.Replace(doc, "mode: balanced, pin: [x]", "mode: backwards, pin: [y]", 1)
	_, err = Parse([]byte(bad), "o.yaml", ".")
	if err == nil {
		t.Fatal("a bad order is accepted")
	}
	for _, want := range []string{"o.yaml:6:", "questionnaire.order.mode: unknown mode \"backwards\"", "questionnaire.order.pin[0]: \"y\" is no option id; want one of 1, 2, x"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, err = Parse([]byte(strings.Replace(doc, "seed: 7", "seed: [7, 8]", 1)), "o.yaml", ".")
	if err == nil || !strings.Contains(err.Error(), "questionnaire.order.seed: want one seed") {
		t.Errorf("a list as order.seed: %v", err)
	}
}
