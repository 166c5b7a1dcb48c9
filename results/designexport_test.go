package results_test

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/silicolab/silico/design"
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

// TestExportOrderBiasRecoversPositionBias: a balanced run on a simulator that moves 30% of the answers to the
// option shown first writes order_bias.csv, whose first-position bias over all items covers 0.3 in its interval,
// and variance.csv with a row per scale.
func TestExportOrderBiasRecoversPositionBias(t *testing.T) {
	path := filepath.Join("testdata", "design", "orderbias.yaml")
	spec, err := specfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// The test's simulator is shared (its settings fixed), so it is given the spec's bias itself.
	pb := spec.Simulator.PositionBias
	dir := runSpecOn(t, path, sim.Config{Forget: true, PositionBias: sim.PositionBias{Position: pb.Position, Strength: pb.Strength}})
	var all map[string]string
	for _, r := range readTable(t, dir, results.OrderBiasFile) {
		if r["item_id"] == design.AllItems {
			all = r
		}
	}
	if all == nil {
		t.Fatalf("%s has no %q row", results.OrderBiasFile, design.AllItems)
	}
	b, lo, hi := number(t, all, "first_bias"), number(t, all, "first_bias_lo"), number(t, all, "first_bias_hi")
	t.Logf("first_bias %.3f [%.3f, %.3f], n %s", b, lo, hi, all["n"])
	if !(lo <= 0.3 && 0.3 <= hi) {
		t.Errorf("first_bias %.3f, interval [%.3f, %.3f] does not cover the simulator's 0.3", b, lo, hi)
	}
	if all["n_as_written"] == "0" || all["n_reversed"] == "0" {
		t.Errorf("balanced run counted %s as written and %s reversed cells; want both", all["n_as_written"], all["n_reversed"])
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
