package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/estimate"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

const quickstart = "../../examples/quickstart/experiment.yaml"

func runStarter(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// wantEstimate is the estimate of the spec at path, computed directly.
func wantEstimate(t *testing.T, path string) estimate.Estimate {
	t.Helper()
	spec, err := specfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := llm.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	est, err := estimate.Compute(spec, tok)
	if err != nil {
		t.Fatal(err)
	}
	return est
}

func TestEstimateQuickstart(t *testing.T) {
	code, out, errs := runStarter(t, "estimate", quickstart)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	want := wantEstimate(t, quickstart)
	m := want.Models[0]
	// 50 items × 10 personas × 2 seeds; max_tokens 16; $0.15/$0.60 per million; no rpm or tpm.
	if m.Cells != 1000 || m.MaxCompletionTokens != 16000 || m.LimitedBy != estimate.LimitConcurrency || m.MinWall != 0 {
		t.Fatalf("quickstart estimate %+v", m)
	}
	row := regexp.MustCompile(`(?m)^  sim\s+1,000\s+` + regexp.QuoteMeta(thousands(m.PromptTokens)) +
		`\s+16,000\s+` + regexp.QuoteMeta(usdRange(m.MinCostUSD, m.MaxCostUSD)) + `\s+≥ 9.6s\s+latency$`)
	if !row.MatchString(out) {
		t.Errorf("no row for sim with %d prompt tokens and %s in:\n%s", m.PromptTokens, usdRange(m.MinCostUSD, m.MaxCostUSD), out)
	}
	for _, s := range []string{"examples/quickstart/experiment.yaml: IPIP-50 quickstart · 1 model × 2 seeds × 50 items × 10 personas = 1,000 calls", "MODEL", "PROMPT TOKENS", "MAX COMPLETION",
		"COST", "MIN WALL", "BOUND BY", "model sim: latency 300ms a call (the simulator's latency)"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	t.Logf("starter estimate %s:\n%s", quickstart, out)

	code, out, errs = runStarter(t, "estimate", "--json", quickstart)
	if code != exitOK {
		t.Fatalf("--json: exit %d, stderr %s", code, errs)
	}
	var got estimate.Estimate
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	// The command adds the simulator's latency to what Compute gives.
	spec, err := specfile.Load(quickstart)
	if err != nil {
		t.Fatal(err)
	}
	want = want.WithLatency(spec, map[string]estimate.Latency{"sim": {PerCall: 300 * time.Millisecond, Source: "the simulator's latency"}})
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("--json:\n%s\nwant\n%s", g, w)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEstimateLimitsAndPrices runs the quickstart with hosted models: rpm and tpm bounds, a table price, an
// unpriced model, and the totals.
func TestEstimateLimitsAndPrices(t *testing.T) {
	data, err := os.ReadFile(quickstart)
	if err != nil {
		t.Fatal(err)
	}
	const sim = `  - id: sim
    name: sim-model
    provider: sim
    params: {temperature: 0.7, max_tokens: 16}
    price: {input_per_mtok: 0.15, output_per_mtok: 0.60}   # priced like a small hosted model, to show costs`
	if !bytes.Contains(data, []byte(sim)) {
		t.Fatal("the quickstart's model changed; update this test")
	}
	spec := strings.Replace(string(data), sim, `  - {id: mini, name: gpt-4o-mini, rpm: 500, params: {max_tokens: 16}}
  - {id: big, name: gpt-4.1, rpm: 5000, tpm: 100000}
  - {id: local, name: llama3, params: {max_tokens: 8}}`, 1)
	dir := t.TempDir()
	csv, err := os.ReadFile(filepath.Join(filepath.Dir(quickstart), "ipip50.csv"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hosted.yaml")
	if err := os.WriteFile(filepath.Join(dir, "ipip50.csv"), csv, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runStarter(t, "estimate", path)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	t.Logf("starter estimate hosted.yaml:\n%s", out)
	want := wantEstimate(t, path)
	// mini: (1000 − 500)/500 min = 1m by rpm. big: tpm binds over rpm 5000 (whose bound is 0).
	for _, s := range []string{
		`(?m)^  mini\s+1,000\s+[0-9,]+\s+16,000\s+\$[0-9.]+ – \$[0-9.]+\s+≥ 1m0s\s+rpm$`,
		`(?m)^  big\s+1,000\s+[0-9,]+\s+256,000\s+\$[0-9.]+ – \$[0-9.]+\s+≥ ` + regexp.QuoteMeta(wantWall(want.Models[1])) + `\s+tpm$`,
		`(?m)^  local\s+1,000\s+[0-9,]+\s+8,000\s+no price known; set price: in the spec\s+unknown\s+concurrency$`,
		`(?m)^  total\s+3,000\s+` + regexp.QuoteMeta(thousands(want.PromptTokens)) + `\s+280,000\s+` +
			regexp.QuoteMeta(usdRange(want.MinCostUSD, want.MaxCostUSD)) + ` \(priced models\)\s+` +
			regexp.QuoteMeta(wall(want.MinWall)) + `$`,
		`note: model local: no price known; set price: in the spec`,
	} {
		if !regexp.MustCompile(s).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", s, out)
		}
	}
	if want.MinWall != max(want.Models[0].MinWall, want.Models[1].MinWall) {
		t.Errorf("run bound %v, want the largest model's (max_parallel_passes 2)", want.MinWall)
	}
}

func wantWall(m estimate.ModelEstimate) string { return strings.TrimPrefix(wall(m.MinWall), "≥ ") }

func TestEstimateInvalidSpec(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("name: bad\nmodels: [{id: m, name: gpt-4o, rpm: -1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runStarter(t, "estimate", quickstart, path)
	if code != exitUsage {
		t.Errorf("exit %d, want %d (invalid spec)", code, exitUsage)
	}
	if !strings.Contains(errs, "bad.yaml") || !strings.Contains(errs, "1 of 2 specs invalid") {
		t.Errorf("stderr %q lacks the bad spec and the count", errs)
	}
	if !strings.Contains(out, "IPIP-50 quickstart") {
		t.Errorf("the valid spec was not estimated:\n%s", out)
	}
	if code, _, _ := runStarter(t, "estimate"); code != exitUsage {
		t.Errorf("no spec: exit %d, want %d", code, exitUsage)
	}
}

func TestUSDAndThousands(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0.41, 0.97, "$0.41 – $0.97"},
		{0.020016, 0.029016, "$0.0200 – $0.0290"},
		{0.0005, 0.0123, "$0.000500 – $0.012300"},
		{1234.5, 98765.4321, "$1,234.50 – $98,765.43"},
		{0, 0, "$0 – $0"},
	} {
		if got := usdRange(tc.lo, tc.hi); got != tc.want {
			t.Errorf("usdRange(%g, %g) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestLatencyFromEarlierRuns: a model's latency is the median of its answered, uncached calls in the store's
// earlier runs of the same model (name, provider and base URL); failed and cached cells and other models do
// not count, and a sim model takes the simulator's latency.
func TestLatencyFromEarlierRuns(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old := &experiment.Spec{Name: "old", Seeds: []int64{1},
		Models:        []experiment.Model{{ID: "x", Name: "gpt-4o-mini"}, {ID: "y", Name: "other"}},
		Personas:      []experiment.Persona{{ID: "p"}},
		Questionnaire: experiment.Questionnaire{Items: []experiment.Item{{ID: "1"}, {ID: "2"}, {ID: "3"}, {ID: "4"}}}}
	if err := st.SaveRun(ctx, "r", savedSpecJSON(t, *old)); err != nil {
		t.Fatal(err)
	}
	// Cells 0-3 are model x, 4-7 model y.
	recs := []store.Record{
		{Index: 0, Status: store.StatusOK, LatencyMS: 100}, {Index: 1, Status: store.StatusOK, LatencyMS: 300},
		{Index: 2, Status: store.StatusUnparsed, LatencyMS: 200}, {Index: 3, Status: store.StatusFailed, LatencyMS: 9000},
		{Index: 4, Status: store.StatusOK, LatencyMS: 5000}, {Index: 5, Status: store.StatusOK, LatencyMS: 50, Cached: true},
	}
	if err := st.Put(ctx, "r", recs); err != nil {
		t.Fatal(err)
	}
	spec := &experiment.Spec{Models: []experiment.Model{{ID: "mine", Name: "gpt-4o-mini"}, {ID: "s", Name: "sim-model", Provider: experiment.ProviderSim},
		{ID: "new", Name: "never-run"}}, Simulator: &experiment.SimulatorSettings{Latency: experiment.Duration(300 * time.Millisecond)}}
	spec.ApplyDefaults() // as a loaded spec has them, and the saved one
	lat := modelLatencies(ctx, spec, st)
	if l := lat["mine"]; l.PerCall != 200*time.Millisecond || !strings.Contains(l.Source, "median of 3 answered calls") {
		t.Errorf("latency of mine = %+v; want the median 200ms of the 3 answered calls of model x", l)
	}
	if l := lat["s"]; l.PerCall != 300*time.Millisecond {
		t.Errorf("latency of the sim model = %+v; want the simulator's 300ms", l)
	}
	if l, ok := lat["new"]; ok {
		t.Errorf("a model never run has latency %+v; want none", l)
	}
}
