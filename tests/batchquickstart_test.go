package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// batchQuickstartCopy is quickstartCopy in batch mode (run.batch: {mode: batch}), its simulator taking batchTime
// to run a batch: the quickstart's two passes are two batches of 500.
func batchQuickstartCopy(t *testing.T, batchTime string) string {
	t.Helper()
	dir := quickstartCopy(t)
	editSpec(t, filepath.Join(dir, "experiment.yaml"), map[string]string{
		"  # batch: {mode: batch, keep_files: false}": "  batch: {mode: batch}",
		"simulator:\n": "simulator:\n  batch_time: " + batchTime + "\n",
	})
	return dir
}

// simBatches reads the batches the embedded simulator keeps in the state dir of dir: their ids and the requests
// (cells) of each.
func simBatches(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, ".silico", "sim", "batches"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, ".silico", "sim", "batches", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var b struct {
			ID    string `json:"id"`
			Lines []struct {
				CustomID string `json:"custom_id"`
			} `json:"lines"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		for _, l := range b.Lines {
			out[b.ID] = append(out[b.ID], l.CustomID)
		}
	}
	return out
}

// TestBatchQuickstartSurvivesKill: the quickstart in batch mode, killed with SIGKILL while its two batches run,
// then the same command again, attaches to the run and finishes it as sync mode does: every cell recorded and
// answered, by the two batches created before the kill (each cell in one batch, none submitted again), whose
// answers are those of an uninterrupted run. The embedded simulator kept its batches in memory: the command after
// the kill polled batches it no longer knew (404 for ever).
func TestBatchQuickstartSurvivesKill(t *testing.T) {
	bin := starterBin(t)
	dir := batchQuickstartCopy(t, "20s")
	spec, err := specfile.Load(filepath.Join(dir, "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const cells = 1000
	if spec.NumCells() != cells {
		t.Fatalf("spec has %d cells, want %d", spec.NumCells(), cells)
	}

	// 1. Start, wait until both batches were created, kill -9 before they end.
	start := time.Now()
	p1 := startProc(t, dir, bin, runArgs(t, "req1.jsonl")...)
	poll(t, 90*time.Second, 20*time.Millisecond, "two batches at the simulator", func() bool {
		if p1.exited() {
			t.Fatalf("starter exited before the kill:\n%s", p1.dump())
		}
		return len(simBatches(t, dir)) == 2
	})
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := p1.wait(t, 10*time.Second); code != 128+9 {
		t.Fatalf("killed starter: exit %d, want 137 (SIGKILL)", code)
	}
	t.Logf("killed %s after the start, both batches created", time.Since(start).Round(time.Millisecond))
	m := runLineRE.FindStringSubmatch(p1.stdout.String())
	if m == nil || m[1] != "Started" {
		t.Fatalf("first run did not print \"Started run ID\":\n%s", p1.dump())
	}
	id := m[2]
	before := simBatches(t, dir)

	// 2. The same command again attaches to the run and finishes it from the batches made before the kill.
	p2 := startProc(t, dir, bin, runArgs(t, "req2.jsonl")...)
	if code := p2.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("the command after the kill: exit %d\n%s", code, p2.dump())
	}
	if !strings.Contains(p2.stdout.String(), "Attached to run "+id) || !strings.Contains(p2.stdout.String(), "Done: 1000 cells") {
		t.Fatalf("the command after the kill did not attach to run %s and finish it:\n%s", id, p2.dump())
	}
	if strings.Contains(p2.stdout.String()+p2.stderr.String(), "No such batch") {
		t.Errorf("the resumed run met batches the simulator did not know:\n%s", p2.dump())
	}
	after := simBatches(t, dir)
	if len(after) != 2 {
		t.Errorf("%d batches after the rerun, want the 2 made before the kill: %v", len(after), keysOf(after))
	}
	seen := map[string]int{}
	for bid, ids := range after {
		if len(before[bid]) != len(ids) {
			t.Errorf("batch %s was not made before the kill", bid)
		}
		for _, c := range ids {
			seen[c]++
		}
	}
	for c, n := range seen {
		if n != 1 {
			t.Errorf("cell %s in %d batches", c, n)
		}
	}
	if len(seen) != cells {
		t.Errorf("%d cells in the batches, want %d", len(seen), cells)
	}
	ctx := withTimeout(t, 30*time.Second)
	st, err := store.OpenSQLite(ctx, filepath.Join(dir, ".silico", "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.Counts(ctx, id)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil || n.Records != cells || n.Failed != 0 {
		t.Errorf("counts %+v, %v; want %d cells answered", n, err, cells)
	}
	got := cellColumns(t, filepath.Join(dir, "out", id))

	if len(got) != cells {
		t.Fatalf("resumed run wrote %d rows, want %d", len(got), cells)
	}

	// 3. An uninterrupted batch run of the same spec, in its own directory, writes the same cell columns.
	checkUninterrupted(t, bin, batchQuickstartCopy(t, "20s"), id, got)
}

func keysOf(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
