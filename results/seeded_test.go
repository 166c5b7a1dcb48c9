package results_test

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
)

// seededSpec is a spec of 300 cells (30 items × 10 personas, the one seed seed) at temperature 1 on the
// simulator, with option probabilities recorded; perCell is its run.seed_per_cell.
func seededSpec(seed int64, perCell bool) string {
	return seededSpecOf("{id: sim, name: sim-model, provider: sim, params: {temperature: 1, max_tokens: 16}, answer: {mode: logprobs}}", seed, perCell)
}

// seededSpecOf is seededSpec with the model model (a flow mapping).
func seededSpecOf(model string, seed int64, perCell bool) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `name: seeded
seeds: [%d]
models: [%s]
run: {seed_per_cell: %t, on_error: ignore}
personas:
`, seed, model, perCell)
	for p := range 10 {
		fmt.Fprintf(&sb, "  - {id: p%d, attributes: {name: Person%d, age: %d}}\n", p, p, 20+5*p)
	}
	sb.WriteString(`questionnaire:
  name: q
  instruction: Rate each statement.
  options: {options: [{id: "1", text: "1. Level 1", weight: 1}, {id: "2", text: "2. Level 2", weight: 2},
    {id: "3", text: "3. Level 3", weight: 3}, {id: "4", text: "4. Level 4", weight: 4}, {id: "5", text: "5. Level 5", weight: 5}]}
  items:
`)
	for it := range 30 {
		fmt.Fprintf(&sb, "    - {id: i%d, text: Statement number %d about myself.}\n", it, it)
	}
	return sb.String()
}

// Seeds whose uniforms under seeded sampling (the simulator's stream of the seed) are small, large and
// middling: sent to every cell, the first makes all 300 cells write their likeliest option, the second none, the
// third splits them by their largest probability (157 agree).
const (
	lowSeed  = 7
	highSeed = 4
	midSeed  = 3
)

// agreement runs spec on a simulator that samples as llama.cpp does, and returns how many cells wrote their
// likeliest option (by the recorded distribution), the expected number if the cells were independent draws
// (Σ p_max) and its variance (Σ p_max (1 - p_max), a Poisson binomial's), and each cell's p_max and agreement.
// Every one of the 300 cells must have written an option and recorded a distribution.
func agreement(t *testing.T, spec string) (agree int, mean, variance float64, pmax []float64, agrees []bool) {
	t.Helper()
	agree, mean, variance, pmax, agrees, skipped := agreementOf(t, spec)
	if skipped > 0 || len(pmax) != 300 {
		t.Fatalf("%d cells counted, %d without a written option or distribution; want 300 and 0", len(pmax), skipped)
	}
	return agree, mean, variance, pmax, agrees
}

// agreementOf is agreement over the cells that wrote an option and recorded a distribution; skipped counts the
// others (a real model may write something that is no option).
func agreementOf(t *testing.T, spec string) (agree int, mean, variance float64, pmax []float64, agrees []bool, skipped int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seeded.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := runSpecOn(t, path, sim.Config{Forget: true, Sampling: sim.SamplingSeeded})
	f, err := os.Open(filepath.Join(dir, results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := results.ReadJSONL(f, func(r results.Row) error {
		if r.Status != "ok" || r.TopAgrees == nil || len(r.Probs) != 5 {
			if skipped == 0 {
				t.Logf("cell %s counts not: status %s, raw %q, error %s %s, %d probabilities", r.CellID, r.Status, r.Raw, r.ErrorClass, r.ErrorMessage, len(r.Probs))
			}
			skipped++
			return nil
		}
		p := slices.Max(r.Probs)
		pmax, agrees = append(pmax, p), append(agrees, *r.TopAgrees)
		mean += p
		variance += p * (1 - p)
		if *r.TopAgrees {
			agree++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return agree, mean, variance, pmax, agrees, skipped
}

// threshold reports whether agreement is a threshold in p_max, both sides non-empty: every agreeing cell's
// p_max is above every disagreeing one's. It is the signature of one uniform u shared by all cells: a cell
// writes its likeliest option exactly when its p_max exceeds u.
func threshold(pmax []float64, agrees []bool) bool {
	lowestAgreeing, highestNot := math.Inf(1), math.Inf(-1)
	for i, p := range pmax {
		if agrees[i] {
			lowestAgreeing = min(lowestAgreeing, p)
		} else {
			highestNot = max(highestNot, p)
		}
	}
	return !math.IsInf(lowestAgreeing, 1) && !math.IsInf(highestNot, -1) && highestNot < lowestAgreeing
}

// TestSeedPerCellMakesDrawsIndependent: at temperature 1 under llama.cpp-like sampling, one seed sent to every
// cell makes the written answers one draw: the count of cells that write their likeliest option is 300 or 0 for
// a small or large uniform, far outside the 99.9 % interval of independent draws (Σ p_max ± z·√Σ p_max(1-p_max)),
// and for a middling one agreement is a threshold in p_max. A seed per cell brings the count inside the interval
// and breaks the threshold.
func TestSeedPerCellMakesDrawsIndependent(t *testing.T) {
	z := distuv.UnitNormal.Quantile(1 - 0.001/2)
	for _, seed := range []int64{lowSeed, highSeed} {
		agree, mean, variance, _, _ := agreement(t, seededSpec(seed, false))
		half := z * math.Sqrt(variance)
		t.Logf("seed %d, seed_per_cell false: %d of 300 cells wrote their likeliest option; independent draws: %.1f ± %.1f (99.9 %%)", seed, agree, mean, half)
		if math.Abs(float64(agree)-mean) <= half {
			t.Errorf("seed %d, seed_per_cell false: %d agreeing cells is within %.1f ± %.1f: the shared seed's draws look independent", seed, agree, mean, half)
		}
	}
	if _, _, _, pmax, agrees := agreement(t, seededSpec(midSeed, false)); !threshold(pmax, agrees) {
		t.Errorf("seed %d, seed_per_cell false: agreement is not a threshold in p_max: not one shared draw", midSeed)
	}

	agree, mean, variance, pmax, agrees := agreement(t, seededSpec(lowSeed, true))
	half := z * math.Sqrt(variance)
	t.Logf("seed %d, seed_per_cell true: %d of 300 cells wrote their likeliest option; independent draws: %.1f ± %.1f (99.9 %%)", lowSeed, agree, mean, half)
	if math.Abs(float64(agree)-mean) > half {
		t.Errorf("seed_per_cell true: %d agreeing cells is outside %.1f ± %.1f (99.9 %%)", agree, mean, half)
	}
	if threshold(pmax, agrees) {
		t.Errorf("seed_per_cell true: agreement is a threshold in p_max, as under one shared draw")
	}
}

// TestSeedPerCellAgainstLlamaCpp is TestSeedPerCellMakesDrawsIndependent's measurement against a llama.cpp
// server at SILICO_LLAMA_URL (its /v1 base URL; model name SILICO_LLAMA_MODEL, default tiny-llama). It is a
// measurement, not a property of this code: it logs the counts, and fails only when one seed sent to every cell
// looks like independent draws while a seed per cell does not.
func TestSeedPerCellAgainstLlamaCpp(t *testing.T) {
	url := os.Getenv("SILICO_LLAMA_URL")
	if url == "" {
		t.Skip("SILICO_LLAMA_URL is not set")
	}
	name := cmp.Or(os.Getenv("SILICO_LLAMA_MODEL"), "tiny-llama")
	model := fmt.Sprintf("{id: llama, name: %s, base_url: %q, params: {temperature: 1, max_tokens: 1}, answer: {mode: logprobs}, max_concurrency: 4}", name, url)
	z := distuv.UnitNormal.Quantile(1 - 0.001/2)
	outside := map[bool]int{}
	for _, c := range []struct {
		seed    int64
		perCell bool
	}{{1, false}, {2, false}, {1, true}, {2, true}} {
		agree, mean, variance, pmax, _, skipped := agreementOf(t, seededSpecOf(model, c.seed, c.perCell))
		half := z * math.Sqrt(variance)
		t.Logf("llama.cpp, seed %d, seed_per_cell %t: %d of %d cells wrote their likeliest option (%d without an option); independent draws: %.1f ± %.1f (99.9 %%)",
			c.seed, c.perCell, agree, len(pmax), skipped, mean, half)
		if math.Abs(float64(agree)-mean) > half {
			outside[c.perCell]++
		}
	}
	if outside[false] == 0 && outside[true] > 0 {
		t.Errorf("one seed per pass looks independent and a seed per cell does not: %v", outside)
	}
}

// TestOldInputKeepsOldSeeds: a workflow input without run.seed_per_cell (what an older release sent, and what a
// run it started saved) sends every cell of a pass the pass's seed; the same spec resolved from a file today
// sends each cell its own.
func TestOldInputKeepsOldSeeds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seeded.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(seededSpec(lowSeed, true), "seed_per_cell: true, ", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := specfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, canonical, err := loaded.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	const key = `"seed_per_cell":true`
	if bytes.Count(canonical, []byte(key)) != 1 {
		t.Fatalf("the resolved spec of a file without the key does not say %s once: %s", key, canonical)
	}
	seeds := func(input []byte) map[int64]int {
		h, err := sim.New(sim.Config{})
		if err != nil {
			t.Fatal(err)
		}
		runInput(t, input, h)
		out := map[int64]int{}
		for _, r := range h.Requests() {
			out[r.Seed]++
		}
		return out
	}
	if old := seeds(bytes.Replace(canonical, []byte(","+key), nil, 1)); len(old) != 1 || old[lowSeed] != 300 {
		t.Errorf("an input without seed_per_cell sent %d distinct seeds (%d cells sent %d), want %d to all 300 cells", len(old), old[lowSeed], lowSeed, lowSeed)
	}
	if cur := seeds(canonical); len(cur) != 300 {
		t.Errorf("seed_per_cell true sent %d distinct seeds to 300 cells, want 300", len(cur))
	}
}
