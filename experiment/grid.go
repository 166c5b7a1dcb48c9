package experiment

import (
	"fmt"
	"strings"
)

// Factor is one factor of a spec's grid: the number of calls is the product of every factor's N.
type Factor struct {
	N int `json:"n"`
	// Noun names one of what the factor counts, in the singular: "model", "seed", "prompt", "item", "wording",
	// "persona", "answer mode", "option order"; "item form" when the items differ in their wordings or orders.
	Noun string `json:"noun"`
	// Note says what an item form is ("6 items, each in its wordings and option orders"); empty otherwise.
	Note string `json:"note,omitempty"`
}

// String is the factor as Summary writes it: "25 items", "1 model", "14 item forms (6 items, each in its
// wordings and option orders)".
func (f Factor) String() string {
	s := count(f.N, f.Noun)
	if f.Note != "" {
		s += " (" + f.Note + ")"
	}
	return s
}

// Grid is the number of a spec's model calls as the product of the factors the planner multiplies, every one
// named: validate, the dry run, estimate, the run's first line and the run's summary in the Temporal Web UI all
// print it (Summary), so the product a reader can check is the number of cells planned, of rows in results.csv
// and of calls paid for.
type Grid struct {
	// Factors in submission order (Cell): models, seeds, prompts, items, wordings, personas, answer modes,
	// option orders; a chat grid always lists models, seeds, items (or item forms) and personas, the others where
	// they are more than 1. An embed grid: models, then its texts.
	Factors []Factor `json:"factors"`
	// Unit names one call: "call", or "vector" for a kind: embed spec.
	Unit string `json:"unit"`
	// Calls is the spec's number of cells (NumCells), which the product of the factors equals.
	Calls int `json:"calls"`
}

// String is "2 models × 3 seeds × 50 items × 20 personas = 6,000 calls".
func (g Grid) String() string {
	parts := make([]string, len(g.Factors))
	for i, f := range g.Factors {
		parts[i] = f.String()
	}
	return strings.Join(parts, " × ") + " = " + count(g.Calls, g.Unit)
}

// Grid returns the spec's call count as a product of named factors. Items asked in different numbers of
// wordings or option orders make one factor, the item forms: Σ over items of wordings × orders.
func (s *Spec) Grid() Grid {
	if s.IsEmbed() {
		return Grid{Unit: "vector", Calls: s.NumCells(), Factors: []Factor{{len(s.Models), "model", ""},
			{s.numEmbedTexts(), embedNoun[s.Embed.Texts], ""}}}
	}
	g := Grid{Unit: "call", Calls: s.NumCells(), Factors: []Factor{{len(s.Models), "model", ""}, {len(s.Seeds), "seed", ""}}}
	optional := func(n int, noun string) {
		if n > 1 {
			g.Factors = append(g.Factors, Factor{n, noun, ""})
		}
	}
	optional(s.NumPromptVariants(), "prompt")
	items := len(s.Questionnaire.Items)
	wordings, orders := 1, 1
	if items > 0 {
		wordings, orders = s.Variants(0), s.numOrders(0)
	}
	forms, uniform := 0, true
	for i := range items {
		forms += s.Variants(i) * s.numOrders(i)
		uniform = uniform && s.Variants(i) == wordings && s.numOrders(i) == orders
	}
	if uniform {
		g.Factors = append(g.Factors, Factor{items, "item", ""})
		optional(wordings, "wording")
	} else {
		var each []string
		if !s.sameForEveryItem(s.Variants) {
			each = append(each, "wordings")
		}
		if !s.sameForEveryItem(s.numOrders) {
			each = append(each, "option orders")
		}
		g.Factors = append(g.Factors, Factor{forms, "item form", fmt.Sprintf("%s, each in its %s", count(items, "item"),
			strings.Join(each, " and "))})
	}
	g.Factors = append(g.Factors, Factor{len(s.Personas), "persona", ""})
	optional(s.Probes(), "answer mode")
	if uniform {
		optional(orders, "option order")
	}
	return g
}

// sameForEveryItem reports whether n(i) is the same for every item i.
func (s *Spec) sameForEveryItem(n func(int) int) bool {
	for i := range s.Questionnaire.Items {
		if n(i) != n(0) {
			return false
		}
	}
	return true
}
