package results_test

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/results"
)

const verbalizedSpec = `name: verbalized
seeds: [1, 2]
models:
  - {id: sim, name: sim-model, provider: sim, params: {max_tokens: 64}}
prompt:
  type: chat
  messages:
    - {role: system, content: "Answer as this person: {persona_description}"}
    - role: user
      content: |-
        Statement: "{question}"

        {answer_options}
personas:
  - {id: p1, attributes: {name: Ann, age: 30}}
  - {id: p2, attributes: {name: Bo, age: 60}}
questionnaire:
  name: q
  options:
    - {id: "1", text: "1. Disagree", weight: 1}
    - {id: "2", text: "2. Neutral", weight: 2}
    - {id: "3", text: "3. Agree", weight: 3}
  items:
    - {id: i1, text: I like parties.}
    - {id: i2, text: I plan ahead.}
    - {id: i3, text: I worry a lot.}
run:
  answer: {mode: verbalized}
`

// TestVerbalizedOnTheSimulator runs a verbalized spec through the worker's activities on the simulator and
// reads results.csv: every cell states a distribution, recorded normalised in p_<id> (summing to 1) with its
// raw sum in probs_sum, probs_source verbalized, and the written answer its most likely option; some raw sums
// differ from 1, so the normalisation is exercised.
func TestVerbalizedOnTheSimulator(t *testing.T) {
	recs := readAll(t, filepath.Join(runYAML(t, verbalizedSpec), results.CSVFile))
	col := columnOf(t, recs)
	status, option, source, sum, schema := col("status"), col("option_id"), col("probs_source"), col("probs_sum"), col("schema")
	ps := []int{col("p_1"), col("p_2"), col("p_3")}
	if len(recs) != 1+12 {
		t.Fatalf("%d rows, want 12", len(recs)-1)
	}
	off1 := 0
	for _, r := range recs[1:] {
		if r[status] != "ok" || r[source] != "verbalized" || r[schema] != "valid" {
			t.Fatalf("row %v: want ok, verbalized, valid", r)
		}
		var total float64
		best := ""
		bestP := -1.0
		for k, i := range ps {
			p, err := strconv.ParseFloat(r[i], 64)
			if err != nil {
				t.Fatalf("p_%d = %q: %v", k+1, r[i], err)
			}
			total += p
			if p > bestP {
				best, bestP = strconv.Itoa(k+1), p
			}
		}
		raw, err := strconv.ParseFloat(r[sum], 64)
		if err != nil || raw <= 0 {
			t.Fatalf("probs_sum %q: %v", r[sum], err)
		}
		if math.Abs(total-1) > 1e-9 || r[option] != best {
			t.Errorf("row %s: probabilities sum to %g, option %s, most likely %s", strings.Join(r[:3], ","), total, r[option], best)
		}
		if math.Abs(raw-1) > 0.01 {
			off1++
		}
	}
	if off1 == 0 {
		t.Error("every stated distribution summed to 1; the simulator should state some that do not")
	}
}
