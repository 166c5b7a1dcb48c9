package results_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// updateGolden rewrites testdata/examples from the current code instead of comparing with it.
var updateGolden = flag.Bool("update", false, "rewrite the golden files of TestExamplesGolden")

// runColumns are the columns of results.csv and keys of results.jsonl that describe how one run got its answers
// (timing, requests sent, the response cache) rather than the cell: TestExamplesGolden masks them. The list is
// written out here, not taken from the package, so that the test does not lean on the code it checks.
var runColumns = []string{"run_id", "latency_ms", "attempts", "tries", "cached"}

// runKeys matches those keys with their values in a results.jsonl line.
var runKeys = regexp.MustCompile(`"(run_id|latency_ms|attempts|tries|cached)":("[^"]*"|[^,{}]*)`)

// TestExamplesGolden runs every chat example under examples/ on the simulator, through the activities that a
// worker runs (PrepareRun, then RunSeedPass for each pass, without a Temporal server) and Export, and compares
// results.csv byte for byte with testdata/examples/<name>.csv, and results.jsonl with the SHA-256 digest in
// <name>.jsonl.sha256, with the columns of one run (runColumns) masked in both. The simulator's answers depend only on the model, the seed and the prompt, so the
// files are the same on every run; a change in a column's name, order or formatting shows here. Embed examples
// write no results.csv and are skipped. go test ./results -run TestExamplesGolden -update rewrites the files.
func TestExamplesGolden(t *testing.T) {
	const root = "../examples"
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, e := range entries {
		path := filepath.Join(root, e.Name(), "experiment.yaml")
		if !e.IsDir() {
			continue
		}
		spec, err := specfile.Load(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if spec.IsEmbed() {
			continue
		}
		ran++
		t.Run(e.Name(), func(t *testing.T) {
			dir := runExample(t, path)
			for _, f := range []struct {
				name, golden string
				mask         func(*testing.T, []byte) []byte
				// digest keeps only the SHA-256 of the file in the golden: results.jsonl is 1 MB for these examples.
				digest bool
			}{
				{results.CSVFile, e.Name() + ".csv", maskCSV, false},
				{results.JSONLFile, e.Name() + ".jsonl.sha256", maskJSONL, true},
			} {
				b, err := os.ReadFile(filepath.Join(dir, f.name))
				if err != nil {
					t.Fatal(err)
				}
				got := f.mask(t, b)
				if f.digest {
					got = fmt.Appendf(nil, "%x  %s\n", sha256.Sum256(got), f.name)
				}
				golden := filepath.Join("testdata", "examples", f.golden)
				if *updateGolden {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test ./results -run TestExamplesGolden -update writes it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s of examples/%s differs from %s: %s", f.name, e.Name(), golden, firstDiff(got, want))
				}
			}
		})
	}
	if ran < 3 {
		t.Errorf("%d chat examples under %s, want at least quickstart, bfi and pictures", ran, root)
	}
}

// runExample runs the spec at path as a worker would, against a simulator of its own without latency, and
// returns the directory Export wrote.
func runExample(t *testing.T, path string) string {
	t.Helper()
	return runSpecOn(t, path, sim.Config{Forget: true})
}

// runSpecOn is runExample against a simulator configured as cfg.
func runSpecOn(t *testing.T, path string, cfg sim.Config) string {
	t.Helper()
	loaded, err := specfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, canonical, err := loaded.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	// The spec's simulator latency only slows the test: latency_ms is masked, and the answers do not depend on it.
	h, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return runInput(t, canonical, h)
}

// runInput runs the workflow input canonical (a resolved spec's JSON) as a worker would, against the simulator
// h, and returns the directory Export wrote.
func runInput(t *testing.T, canonical []byte, h *sim.Server) string {
	t.Helper()
	dir, _, _ := runInputStore(t, canonical, h)
	return dir
}

// runInputStore is runInput that also returns the run's records (run id "run", open until the test ends) and
// the spec Export read, for a test to analyze again.
func runInputStore(t *testing.T, canonical []byte, h *sim.Server) (string, results.Source, *experiment.Spec) {
	t.Helper()
	ctx := context.Background()
	spec, err := specfile.ParseInput(canonical, "input")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	acts := &activities.Activities{Store: st, HasSimulator: true, SimSettingsFixed: true,
		Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ts.URL+"/v1")}
	const run = "run"
	if _, err := acts.PrepareRun(ctx, wire.PrepareInput{RunID: run, Spec: canonical}); err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	for _, p := range spec.Passes() {
		v, err := env.ExecuteActivity(acts.RunSeedPass, wire.PassInput{RunID: run, Pass: p,
			Limits: ratelimit.Limits{Concurrency: 8}})
		var res wire.PassResult
		if err == nil {
			err = v.Get(&res)
		}
		if err != nil {
			t.Fatalf("pass %d: %v", p.Index, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := results.Export(ctx, st, spec, run, dir, 0); err != nil {
		t.Fatal(err)
	}
	return dir, st, spec
}

// maskCSV replaces the values of runColumns with "-" in every row of a results.csv, the header kept.
func maskCSV(t *testing.T, b []byte) []byte {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("results.csv is empty")
	}
	var masked []int
	for i, c := range recs[0] {
		if slices.Contains(runColumns, c) {
			masked = append(masked, i)
		}
	}
	if len(masked) != len(runColumns) {
		t.Fatalf("results.csv header %v lacks some of %v", recs[0], runColumns)
	}
	for _, r := range recs[1:] {
		for _, i := range masked {
			r[i] = "-"
		}
	}
	var out bytes.Buffer
	w := csv.NewWriter(&out)
	if err := w.WriteAll(recs); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// maskJSONL replaces the values of runColumns with "-" in every line of a results.jsonl.
func maskJSONL(t *testing.T, b []byte) []byte {
	t.Helper()
	n := bytes.Count(b, []byte("\n"))
	out := runKeys.ReplaceAll(b, []byte(`"$1":"-"`))
	if got := len(runKeys.FindAll(b, -1)); got != n*len(runColumns) {
		t.Fatalf("results.jsonl: %d of the %d lines' run keys found, want %d", got, n, n*len(runColumns))
	}
	return out
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(g), len(w)) {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, gl, wl)
		}
	}
	return "same lines"
}
