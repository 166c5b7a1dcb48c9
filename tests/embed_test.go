package tests

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// embedSpecYAML embeds the quickstart's 50 items with two models, two texts per request, so that a run makes
// 50 requests and can be killed in the middle.
const embedSpecYAML = `name: quickstart embeddings
kind: embed
models:
  - {id: small, name: text-embedding-3-small, provider: sim}
  - {id: large, name: text-embedding-3-large, provider: sim}
embed: {texts: items, max_inputs_per_request: 2, max_tokens_per_request: 64}
simulator: {latency: 150ms, jitter: 50ms}
questionnaire:
  items: {file: ipip50.csv}
run: {max_concurrency: 2, max_parallel_passes: 2}
`

// embedCells are the cell indexes an embeddings request carried (its X-Silico-Cell header).
func embedCells(t *testing.T, header string) []int {
	t.Helper()
	var out []int
	for _, s := range strings.Split(header, ",") {
		i, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("embeddings request with cell header %q: %v", header, err)
		}
		out = append(out, i)
	}
	return out
}

// TestEmbedKillAndRerun embeds the quickstart's items with two models, kills the starter with SIGKILL mid-run and
// runs it again: the rerun asks for no text recorded before the kill, texts asked for in both runs are at most
// what the requests in flight at the kill carried, and embeddings.parquet holds exactly the simulator's vectors.
func TestEmbedKillAndRerun(t *testing.T) {
	bin := starterBin(t)
	dir := quickstartCopy(t)
	path := filepath.Join(dir, "experiment.yaml")
	if err := os.WriteFile(path, []byte(embedSpecYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := specfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if spec.NumCells() != 100 {
		t.Fatalf("%d cells, want 2 models × 50 items", spec.NumCells())
	}

	req1 := filepath.Join(dir, "req1.jsonl")
	p1 := startProc(t, dir, bin, runArgs(t, "req1.jsonl")...)
	poll(t, 60*time.Second, 5*time.Millisecond, "12 requests in the log", func() bool {
		if p1.exited() {
			t.Fatalf("starter exited before the kill:\n%s", p1.dump())
		}
		return countLines(req1) >= 12
	})
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := p1.wait(t, 10*time.Second); code != 128+9 {
		t.Fatalf("killed starter: exit %d, want 137", code)
	}
	m := runLineRE.FindStringSubmatch(p1.stdout.String())
	if m == nil {
		t.Fatalf("no run line:\n%s", p1.dump())
	}
	id := m[2]

	ctx := withTimeout(t, 30*time.Second)
	st, err := store.OpenSQLite(ctx, filepath.Join(dir, ".silico", "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[int]bool{}
	if err := st.Scan(ctx, id, func(r store.Record) error {
		recorded[r.Index] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if len(recorded) == 0 || len(recorded) >= 100 {
		t.Fatalf("%d vectors recorded before the kill, want some but not all", len(recorded))
	}
	asked1 := map[int]bool{}
	for _, e := range readRequestLog(t, req1) {
		if e.Endpoint == "/v1/embeddings" {
			for _, c := range embedCells(t, e.Cell) {
				asked1[c] = true
			}
		}
	}

	p2 := startProc(t, dir, bin, runArgs(t, "req2.jsonl")...)
	if code := p2.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("rerun: exit %d\n%s", code, p2.dump())
	}
	out := p2.stdout.String()
	if !strings.Contains(out, "Attached to run "+id) || !strings.Contains(out, "Done: 100 vectors") ||
		!strings.Contains(out, results.VectorsFile) || !strings.Contains(out, results.SimilarityFile("large")) {
		t.Fatalf("rerun output lacks the run, its 100 vectors or its outputs:\n%s", p2.dump())
	}
	var again []int
	for _, e := range readRequestLog(t, filepath.Join(dir, "req2.jsonl")) {
		if e.Endpoint != "/v1/embeddings" {
			continue
		}
		for _, c := range embedCells(t, e.Cell) {
			if recorded[c] {
				t.Errorf("text %d was recorded before the kill and asked for again", c)
			}
			if asked1[c] {
				again = append(again, c)
			}
		}
	}
	// In flight at the kill: 2 passes × 2 requests × 2 texts.
	if len(again) > 8 {
		t.Errorf("%d texts asked for in both runs (%v), more than the requests in flight can carry", len(again), again)
	}
	t.Logf("%d vectors recorded before the kill; %d texts asked for again", len(recorded), len(again))

	rows, err := results.ReadVectors(filepath.Join(dir, "out", id, results.VectorsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 100 {
		t.Fatalf("%d parquet rows, want 100", len(rows))
	}
	texts, err := spec.EmbedTexts()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		mi, ti := spec.EmbedCell(i)
		want := sim.Embedding(spec.Models[mi].Name, texts[ti].Text, sim.DefaultDimensions)
		if r.Index != int64(i) || r.Model != spec.Models[mi].ID || r.TextID != texts[ti].ID || r.Text != texts[ti].Text ||
			r.Dims != int32(len(want)) || !slices.Equal(r.Vector, want) {
			t.Errorf("parquet row %d (%s/%s): not the simulator's vector of its text in submission order", i, r.Model, r.TextID)
		}
	}
	sim1, err := os.ReadFile(filepath.Join(dir, "out", id, results.SimilarityFile("small")))
	if err != nil {
		t.Fatal(err)
	}
	// The cosine is written with every digit, so a text's with itself reads as 1 to rounding.
	lines := strings.Split(strings.TrimSpace(string(sim1)), "\n")
	var diag float64
	if len(lines) > 1 {
		if f := strings.Split(lines[1], ","); len(f) > 1 {
			diag, err = strconv.ParseFloat(f[1], 64)
		}
	}
	if len(lines) != 51 || !strings.HasPrefix(lines[1], "1,") || err != nil || math.Abs(diag-1) > 1e-12 {
		t.Errorf("similarity matrix: %d lines, row 1 %q; want 50 rows after the header, 1 on the diagonal", len(lines), lines[1])
	}
}
