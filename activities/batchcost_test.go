package activities

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
)

// TestBatchRunCostColumnAddsUpToTheSummary: a 120,000-cell batch run on the simulator, at prices whose products
// have more decimals than a float64 sum or an 8-decimal column keeps, writes a results.csv whose cost_usd
// column, added up exactly, is the cost_usd of its summary.json to the last digit, overall and per model.
func TestBatchRunCostColumnAddsUpToTheSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("120,000 cells")
	}
	h := newBatchHarness(t, sim.BatchConfig{ProcessingTime: time.Minute})
	_, spec := h.specs(400, 300, 50_000) // 120,000 cells: chunks of 50,000, 50,000 and 20,000
	// At the default batch discount: $0.0617285 and $0.4938265 per million tokens, a fraction of a picodollar
	// per token, so cells' costs have up to 12 decimals.
	spec.Models[0].Price = &experiment.Price{InputPerMTok: 0.123457, OutputPerMTok: 0.987653}
	h.save("run", spec)
	h.drive("run", time.Minute, 1)

	dir := t.TempDir()
	if _, err := results.ExportFor(&spec)(context.Background(), h.st, &spec, "run", dir, 0); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, results.CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	cost, model := slices.Index(rows[0], "cost_usd"), slices.Index(rows[0], "model")
	if len(rows) != 120_001 || cost < 0 || model < 0 {
		t.Fatalf("results.csv: %d rows, header %v; want 120,000 cells with cost_usd and model", len(rows)-1, rows[0])
	}
	total, byModel, long := new(big.Rat), map[string]*big.Rat{}, 0
	for _, r := range rows[1:] {
		v, ok := new(big.Rat).SetString(r[cost])
		if !ok || v.Sign() <= 0 {
			t.Fatalf("cost_usd %q of %v: want a positive decimal", r[cost], r)
		}
		if _, frac, _ := strings.Cut(r[cost], "."); len(frac) > 8 {
			long++
		}
		total.Add(total, v)
		if byModel[r[model]] == nil {
			byModel[r[model]] = new(big.Rat)
		}
		byModel[r[model]].Add(byModel[r[model]], v)
	}
	raw, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		CostUSD json.Number `json:"cost_usd"`
		Models  []struct {
			Model   string      `json:"model"`
			CostUSD json.Number `json:"cost_usd"`
		} `json:"models"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&sum); err != nil {
		t.Fatal(err)
	}
	exact := func(n json.Number) *big.Rat {
		v, ok := new(big.Rat).SetString(n.String())
		if !ok {
			t.Fatalf("summary.json cost %q is not a decimal", n)
		}
		return v
	}
	if got := exact(sum.CostUSD); got.Cmp(total) != 0 {
		t.Errorf("summary.json cost_usd %s; the %d cells' cost_usd add up to %s", sum.CostUSD, len(rows)-1, total.FloatString(12))
	}
	for _, m := range sum.Models {
		if got, want := exact(m.CostUSD), byModel[m.Model]; want == nil || got.Cmp(want) != 0 {
			t.Errorf("summary.json model %s cost_usd %s; its cells add up to %v", m.Model, m.CostUSD, want)
		}
	}
	if long == 0 {
		t.Error("no cell cost has more than 8 decimals: the prices no longer test what rounding loses")
	}
	t.Logf("120,000 cells, %d with more than 8 decimals, cost $%s", long, sum.CostUSD)
}
