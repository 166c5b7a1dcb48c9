package results_test

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/silicolab/silico/design"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
)

// readTable reads the CSV file name of dir as maps from column to value, one per record.
func readTable(t *testing.T, dir, name string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func number(t *testing.T, row map[string]string, col string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(row[col], 64)
	if err != nil {
		t.Fatalf("column %s: %v", col, err)
	}
	return v
}

// TestExportOrderBiasRecoversPositionBias: runs on a simulator that answers the option shown first with
// probability b and otherwise by what the options say (the middle far more often than the extremes, where an
// excess over 1/K at position 1 is no bias), balanced and shuffled, b = 0 and 0.3, two of six items reverse-keyed.
// order_bias.csv's all line recovers b in first_effect and primacy_recency, each inside its 95 % interval, and at
// b = 0.3 under balanced orders shows the shift b·(w_K − w_1) in weight_diff (its interval covers it), where
// reverse-keyed items used to cancel the others. The simulator's draws are functions of the requests, so the
// numbers are the same on every run; how often the intervals cover over many draws is the known-truth suite's.
// A balanced run also writes variance.csv with a row per scale.
func TestExportOrderBiasRecoversPositionBias(t *testing.T) {
	path := filepath.Join("testdata", "design", "orderbias.yaml")
	base, err := specfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []experiment.OrderMode{experiment.OrderBalanced, experiment.OrderShuffled} {
		for _, b := range []float64{0, 0.3} {
			spec, err := specfile.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			spec.Questionnaire.Order.Mode = mode
			spec.Personas = nil
			for p := range 24 {
				spec.Personas = append(spec.Personas, experiment.Persona{ID: fmt.Sprintf("p%02d", p),
					Template: fmt.Sprintf("respondent %d", p)})
			}
			spec.Simulator.PositionBias.Strength = b
			_, canonical, err := spec.Canonical()
			if err != nil {
				t.Fatal(err)
			}
			// The test's simulator is shared (its settings fixed), so it is given the spec's settings itself.
			h, err := sim.New(sim.Config{Forget: true, Preferences: base.Simulator.Preferences,
				PositionBias: sim.PositionBias{Position: base.Simulator.PositionBias.Position, Strength: b}})
			if err != nil {
				t.Fatal(err)
			}
			dir := runInput(t, canonical, h)
			var all map[string]string
			for _, r := range readTable(t, dir, results.OrderBiasFile) {
				if r["item_id"] == design.AllItems {
					all = r
				}
			}
			if all == nil {
				t.Fatalf("%s, b %v: %s has no %q row", mode, b, results.OrderBiasFile, design.AllItems)
			}
			what := fmt.Sprintf("%s, b %v, n %s", mode, b, all["n"])
			coversCol(t, what, all, "first_effect", b)
			coversCol(t, what, all, "primacy_recency", b)
			if mode == experiment.OrderBalanced && b > 0 {
				coversCol(t, what, all, "weight_diff", b*4) // option weights 1…5
				if all["n_as_written"] == "0" || all["n_reversed"] == "0" {
					t.Errorf("%s: %s as written and %s reversed cells; want both", what, all["n_as_written"], all["n_reversed"])
				}
			}
			if mode != experiment.OrderBalanced || b > 0 {
				continue
			}
			var scales []string
			for _, r := range readTable(t, dir, results.VarianceFile) {
				scales = append(scales, r["scale"])
			}
			if !slices.Equal(scales, []string{"A", "B"}) {
				t.Errorf("%s scales %v, want [A B]", results.VarianceFile, scales)
			}
			if _, err := os.Stat(filepath.Join(dir, results.ModesFile)); !os.IsNotExist(err) {
				t.Errorf("%s written for a single-mode run (stat: %v)", results.ModesFile, err)
			}
		}
	}
}

// coversCol fails the test unless row's column col has an interval (col_lo, col_hi) covering want.
func coversCol(t *testing.T, what string, row map[string]string, col string, want float64) {
	t.Helper()
	v, lo, hi := number(t, row, col), number(t, row, col+"_lo"), number(t, row, col+"_hi")
	t.Logf("%s: %s %.4f [%.4f, %.4f]", what, col, v, lo, hi)
	if lo > want || hi < want {
		t.Errorf("%s: %s %.4f [%.4f, %.4f] does not cover %v", what, col, v, lo, hi, want)
	}
}

// TestExportModes: a run answering with logprobs and the verbalized probe writes modes.csv comparing the two for
// every item over every persona, and variance.csv; with the options as written, no order_bias.csv.
func TestExportModes(t *testing.T) {
	dir := runSpecOn(t, filepath.Join("testdata", "design", "modes.yaml"), sim.Config{Forget: true})
	rows := readTable(t, dir, results.ModesFile)
	if len(rows) != 6 {
		t.Fatalf("%s has %d rows, want 6 (one per item)", results.ModesFile, len(rows))
	}
	for _, r := range rows {
		if r["mode_a"] != "logprobs" || r["mode_b"] != "verbalized" || r["n_personas"] != "6" || r["jsd"] == "" {
			t.Errorf("%s row %v; want logprobs vs verbalized over 6 personas with a JSD", results.ModesFile, r)
		}
	}
	if len(readTable(t, dir, results.VarianceFile)) != 2 {
		t.Errorf("%s: want a row per scale", results.VarianceFile)
	}
	if _, err := os.Stat(filepath.Join(dir, results.OrderBiasFile)); !os.IsNotExist(err) {
		t.Errorf("%s written for a run with the options as written (stat: %v)", results.OrderBiasFile, err)
	}
}
