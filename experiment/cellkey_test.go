package experiment

import "testing"

// TestKeyNamesEveryFactor: a cell's key holds the ids of each of its factors and the order it shows, so the two
// cells of a balanced item, its wordings and its probes each have a key of their own, and a balanced item's
// as-written cell has the key of an as-written item's.
func TestKeyNamesEveryFactor(t *testing.T) {
	s := gridSpec(1, 1, 2, 1)
	s.Questionnaire.Options = likert()
	s.Questionnaire.Items[0].Order = &OrderSettings{Mode: OrderBalanced}
	s.Questionnaire.Items[0].Variants = []Variant{{ID: "neg", Text: "Not so.", Reversed: true}}
	s.PromptVariants = []PromptVariant{{ID: "terse", Type: "chat", Messages: []Message{{Role: "user", Content: "{question}\n{answer_options}"}}}}
	keys := map[CellKey]string{}
	for i := range s.NumCells() {
		c := s.Cell(i)
		k := s.Key(c)
		if prev, dup := keys[k]; dup {
			t.Fatalf("cells %s and %s have one key %+v", prev, s.CellID(c), k)
		}
		keys[k] = s.CellID(c)
	}
	want := map[string]CellKey{
		"m0/100/i0:neg/p0/terse/rev": {Model: "m0", Seed: 100, PromptVariant: "terse", Item: "i0", Variant: "neg", Persona: "p0", Order: OrderReversed},
		"m0/100/i0/p0":               {Model: "m0", Seed: 100, PromptVariant: OriginalVariant, Item: "i0", Variant: OriginalVariant, Persona: "p0", Order: OrderAsWritten},
		"m0/100/i1/p0":               {Model: "m0", Seed: 100, PromptVariant: OriginalVariant, Item: "i1", Variant: OriginalVariant, Persona: "p0", Order: OrderAsWritten},
	}
	for id, k := range want {
		if keys[k] != id {
			t.Errorf("key %+v is cell %q's, want %s's", k, keys[k], id)
		}
	}
	if len(keys) != s.NumCells() {
		t.Errorf("%d keys for %d cells", len(keys), s.NumCells())
	}
}
