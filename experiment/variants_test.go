package experiment

import (
	"encoding/json"
	"strings"
	"testing"
)

// variantSpec is a 1-model, 2-seed grid of three items: i1 has two wording variants (the second negated), i2 is
// balanced, and one prompt variant.
func variantSpec() *Spec {
	s := gridSpec(1, 2, 3, 2)
	s.Questionnaire.Options = OptionSet{Options: []Option{{ID: "1", Text: "1. No", Weight: 1}, {ID: "2", Text: "2. Yes", Weight: 2}}}
	s.Questionnaire.Items[1].Variants = []Variant{{ID: "a", Text: "q a"}, {ID: "neg", Text: "not q", Reversed: true}}
	s.Questionnaire.Items[2].Order = &OrderSettings{Mode: OrderBalanced}
	s.PromptVariants = []PromptVariant{{ID: "terse", Type: PromptNormal, Template: "T: {question}|{answer_options}"}}
	return s
}

// TestVariantCells walks the grid in the documented order (seeds → prompt variants → items → variants →
// personas → orders) and holds Cell, CellIndexOf and CellID to it.
func TestVariantCells(t *testing.T) {
	s := variantSpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	// Per (seed, prompt variant): i0 2 cells, i1 3×2, i2 2×2 → 12; × 2 prompts × 2 seeds.
	if got := s.NumCells(); got != 48 {
		t.Fatalf("NumCells = %d, want 48", got)
	}
	i := 0
	seen := map[string]bool{}
	for sd := range 2 {
		for pv := range 2 {
			for it := range 3 {
				for v := range s.Variants(it) {
					for p := range 2 {
						for o := range s.Orders(it) {
							want := Cell{Index: i, Seed: sd, PromptVariant: pv, Item: it, Variant: v, Persona: p, Order: o}
							if got := s.Cell(i); got != want {
								t.Fatalf("Cell(%d) = %+v, want %+v", i, got, want)
							}
							if got := s.CellIndexOf(want); got != i {
								t.Fatalf("CellIndexOf(%+v) = %d, want %d", want, got, i)
							}
							id := s.CellID(want)
							if seen[id] {
								t.Fatalf("CellID %q repeats", id)
							}
							seen[id] = true
							i++
						}
					}
				}
			}
		}
	}
	for c, want := range map[Cell]string{
		{Item: 1, Variant: 2, Persona: 1}:          "m0/100/i1:neg/p1",
		{Item: 1, PromptVariant: 1, Persona: 0}:    "m0/100/i1/p0/terse",
		{Item: 2, PromptVariant: 1, Order: 1}:      "m0/100/i2/p0/terse/rev",
		{Seed: 1, Item: 1, Variant: 1, Persona: 1}: "m0/101/i1:a/p1",
	} {
		if got := s.CellID(c); got != want {
			t.Errorf("CellID(%+v) = %q, want %q", c, got, want)
		}
	}
	// Passes split at item boundaries and never across prompt variants.
	s.Run.ChunkSize = 6
	var cover int
	for _, p := range s.Passes() {
		first, last := s.Cell(p.Start), s.Cell(p.End-1)
		if p.Start != cover || first.PromptVariant != last.PromptVariant || first.Variant != 0 || first.Persona != 0 {
			t.Errorf("pass %+v starts at %+v, ends at %+v", p, first, last)
		}
		cover = p.End
	}
	if cover != 48 {
		t.Errorf("passes cover %d cells, want 48", cover)
	}
}

// TestVariantScoreAndRender: a negated variant is scored opposite to its item, and a cell renders its variant's
// text in its prompt variant's template.
func TestVariantScoreAndRender(t *testing.T) {
	s := variantSpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    Cell
		want int
	}{{Cell{Item: 1}, 2}, {Cell{Item: 1, Variant: 1}, 2}, {Cell{Item: 1, Variant: 2}, 1}} {
		if got, ok := s.CellScore(tc.c, "2"); !ok || got != tc.want {
			t.Errorf("CellScore(%+v, 2) = %d %v, want %d", tc.c, got, ok, tc.want)
		}
	}
	s.Questionnaire.Items[1].Reversed = true // reversed item, negated wording: keyed as written
	if got, _ := s.CellScore(Cell{Item: 1, Variant: 2}, "2"); got != 2 {
		t.Errorf("reversed item's negated variant scores %d, want 2", got)
	}
	msgs, err := s.Render(Cell{Item: 1, Variant: 2, PromptVariant: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Content != "T: not q|1. No\n2. Yes" {
		t.Errorf("variant cell renders %+v", msgs)
	}
	msgs, err = s.Render(Cell{Item: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if last := msgs[len(msgs)-1].Content; !strings.HasPrefix(last, "q\n") {
		t.Errorf("original cell renders %q, want the default prompt with the item's text", last)
	}
}

// TestVariantValidation lists the mistakes of variants with their field paths.
func TestVariantValidation(t *testing.T) {
	s := variantSpec()
	s.Questionnaire.Items[1].Variants = []Variant{{ID: OriginalVariant, Text: "x"}, {ID: "b", Text: " "}, {ID: "b", Text: "y"}, {ID: "c:d", Text: "z"}}
	s.Questionnaire.Items[0].ID = "i1:e"
	s.Questionnaire.Items[1].Variants = append(s.Questionnaire.Items[1].Variants, Variant{ID: "e", Text: "w"})
	s.PromptVariants = append(s.PromptVariants, PromptVariant{ID: "terse", Type: "bogus"})
	err := s.Validate()
	if err == nil {
		t.Fatal("bad variants are accepted")
	}
	for _, want := range []string{
		`questionnaire.items[1].variants[0].id: "original" is reserved`,
		`questionnaire.items[1].variants[1].text: missing`,
		`questionnaire.items[1].variants[2].id: duplicate variant id "b"`,
		`questionnaire.items[1].variants[3].id: "c:d" contains ':'`,
		`questionnaire.items[1].variants[4].id: "e" makes cell id segment "i1:e"`,
		`prompt_variants[1].id: duplicate prompt variant id "terse"`,
		`prompt_variants[1].type: unknown prompt type "bogus"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	c := variantSpec()
	c.Questionnaire.Items[2].Order = nil
	c.Run.Cumulative = true
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "questionnaire.items[1].variants: run.cumulative") ||
		!strings.Contains(err.Error(), "prompt_variants: run.cumulative") {
		t.Errorf("cumulative with variants: %v", err)
	}
}

// TestNoVariantsKeepsJSON: a spec without variants serialises without their keys, so its hash and run id stay.
func TestNoVariantsKeepsJSON(t *testing.T) {
	b, err := json.Marshal(gridSpec(1, 1, 2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "variants") {
		t.Errorf("a spec without variants serialises them: %s", b)
	}
}
