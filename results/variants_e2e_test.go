package results_test

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/silicolab/silico/results"
)

const variantsSpec = `name: variants
seeds: [1]
models:
  - {id: sim, name: sim-model, provider: sim, params: {max_tokens: 16}}
personas:
  - {id: p1, attributes: {name: Ann, age: 30}}
questionnaire:
  name: q
  options:
    - {id: "1", text: "1. Disagree", weight: 1}
    - {id: "2", text: "2. Neutral", weight: 2}
    - {id: "3", text: "3. Agree", weight: 3}
  items:
    - {id: i1, text: I like parties.}
    - id: i2
      text: I plan ahead.
      variants: [{id: neg, text: I do not plan ahead., reversed: true}]
prompt_variants:
  - {id: terse, template: "{question}\n{answer_options}\nOne number."}
`

// TestVariantsOnTheSimulator runs a spec with a wording variant and a prompt variant on the simulator: every
// cell is a row, variant and prompt_variant name what it asked, item_text is the wording asked, and the negated
// wording's score is its option's weight keyed opposite.
func TestVariantsOnTheSimulator(t *testing.T) {
	dir := runYAML(t, variantsSpec)
	recs := readAll(t, filepath.Join(dir, results.CSVFile))
	col := columnOf(t, recs)
	id, v, pv, text, option, score := col("cell_id"), col("variant"), col("prompt_variant"), col("item_text"), col("option_id"), col("score")
	want := [][4]string{
		{"sim/1/i1/p1", "original", "original", "I like parties."},
		{"sim/1/i2/p1", "original", "original", "I plan ahead."},
		{"sim/1/i2:neg/p1", "neg", "original", "I do not plan ahead."},
		{"sim/1/i1/p1/terse", "original", "terse", "I like parties."},
		{"sim/1/i2/p1/terse", "original", "terse", "I plan ahead."},
		{"sim/1/i2:neg/p1/terse", "neg", "terse", "I do not plan ahead."},
	}
	if len(recs) != 1+len(want) {
		t.Fatalf("%d rows, want %d", len(recs)-1, len(want))
	}
	for k, r := range recs[1:] {
		if got := [4]string{r[id], r[v], r[pv], r[text]}; got != want[k] {
			t.Errorf("row %d = %v, want %v", k, got, want[k])
		}
		if r[option] == "" {
			t.Fatalf("row %d has no answer: %v", k, r)
		}
		w, _ := strconv.Atoi(r[option])
		keyed := strconv.Itoa(w)
		if r[v] == "neg" {
			keyed = strconv.Itoa(4 - w)
		}
		if r[score] != keyed {
			t.Errorf("row %d (%s) answered %s scores %s, want %s", k, r[id], r[option], r[score], keyed)
		}
	}
	// The per-item pools hold the original wording and prompt only: one cell per (item, persona).
	for it, n := range distributionCells(t, dir) {
		if n != "1" {
			t.Errorf("distributions.csv pools %s cells of item %s, want 1 (the original)", n, it)
		}
	}
}

// distributionCells reads the n_cells column of distributions.csv in dir: how many cells each (model, item, persona)
// pools.
func distributionCells(t *testing.T, dir string) map[string]string {
	t.Helper()
	recs := readAll(t, filepath.Join(dir, results.DistributionsFile))
	item, n := slices.Index(recs[0], "item_id"), slices.Index(recs[0], "n_cells")
	if item < 0 || n < 0 {
		t.Fatalf("distributions.csv header %v", recs[0])
	}
	out := map[string]string{}
	for _, r := range recs[1:] {
		out[r[item]] = r[n]
	}
	return out
}
