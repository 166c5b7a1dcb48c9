package tests

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
)

// quickstartCopy writes the quickstart into a fresh directory, with the simulator's latency lowered so that the
// test is quick; the grid (1,000 cells) is unchanged.
func quickstartCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("..", "examples", "quickstart"), dir)
	path := filepath.Join(dir, "experiment.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for old, repl := range map[string]string{"latency: 300ms": "latency: 80ms", "jitter: 200ms": "jitter: 40ms"} {
		if !strings.Contains(s, old) {
			t.Fatalf("quickstart spec no longer contains %q; update the test's trimming", old)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

var runLineRE = regexp.MustCompile(`(?m)^(Started|Attached to) run (\S+)$`)

// runArgs is the command line of an embedded run of experiment.yaml on free ports. The UI gets a port picked
// here rather than 0, which does not give it a free port (see TestDevPortZero).
func runArgs(t *testing.T, reqLog string, extra ...string) []string {
	return append([]string{"run", "experiment.yaml", "--sim-request-log", reqLog,
		"--port", "0", "--ui-port", strconv.Itoa(freePort(t)), "--progress-every", "1s"}, extra...)
}

// runOK runs the starter to completion in dir and returns the verb and run id it printed.
func runOK(t *testing.T, bin, dir, reqLog string) (verb, id string) {
	t.Helper()
	start := time.Now()
	p := startProc(t, dir, bin, runArgs(t, reqLog)...)
	if code := p.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("starter run in %s: exit %d, want 0\n%s", dir, code, p.dump())
	}
	m := runLineRE.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no \"Started/Attached to run ID\" line:\n%s", p.dump())
	}
	if !strings.Contains(p.stdout.String(), "Done: 1000 cells") {
		t.Fatalf("run did not report 1000 cells:\n%s", p.dump())
	}
	t.Logf("%s run %s in %s: %s", m[1], m[2], dir, time.Since(start).Round(time.Millisecond))
	return m[1], m[2]
}

// TestKillMidRunResumes is issue 3's kill -9 case: a run killed mid-way and run again finishes, requests none of
// the cells it had recorded before the kill, and writes the same cell columns as an uninterrupted run.
func TestKillMidRunResumes(t *testing.T) {
	bin := starterBin(t)
	dir := quickstartCopy(t)
	spec, err := experiment.Load(filepath.Join(dir, "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.NumCells() != 1000 {
		t.Fatalf("quickstart has %d cells, want 1000", spec.NumCells())
	}

	// 1. Start, wait until about 300 calls were made, kill -9.
	req1 := filepath.Join(dir, "req1.jsonl")
	start := time.Now()
	p1 := startProc(t, dir, bin, runArgs(t, "req1.jsonl")...)
	poll(t, 45*time.Second, 5*time.Millisecond, "300 lines in the request log", func() bool {
		if p1.exited() {
			t.Fatalf("starter exited before the kill:\n%s", p1.dump())
		}
		return countLines(req1) >= 300
	})
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := p1.wait(t, 10*time.Second); code != 128+9 {
		t.Fatalf("killed starter: exit %d, want 137 (SIGKILL)", code)
	}
	t.Logf("killed after %s with %d requests logged", time.Since(start).Round(time.Millisecond), countLines(req1))
	m := runLineRE.FindStringSubmatch(p1.stdout.String())
	if m == nil || m[1] != "Started" {
		t.Fatalf("first run did not print \"Started run ID\":\n%s", p1.dump())
	}
	id := m[2]
	if !strings.Contains(p1.stdout.String(), "/namespaces/default/workflows/"+id) {
		t.Errorf("first run printed no UI link to the run:\n%s", p1.dump())
	}

	// 2. The cells the store holds are those finished before the kill.
	ctx := withTimeout(t, 30*time.Second)
	st, err := store.OpenSQLite(ctx, filepath.Join(dir, ".silico", "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	if err := st.Scan(ctx, id, func(r store.Record) error {
		before[spec.CellID(spec.Cell(r.Index))] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if len(before) == 0 || len(before) >= 1000 {
		t.Fatalf("%d cells recorded before the kill, want some but not all: the kill was not mid-run", len(before))
	}
	t.Logf("%d cells recorded before the kill", len(before))

	// 3. The same command again attaches to the run and finishes it.
	verb, id2 := runOK(t, bin, dir, "req2.jsonl")
	if verb != "Attached to" || id2 != id {
		t.Fatalf("rerun: %q run %s, want \"Attached to\" run %s", verb, id2, id)
	}
	again := map[string]int{}
	for _, e := range readRequestLog(t, filepath.Join(dir, "req2.jsonl")) {
		if e.Cell != "" && before[e.Cell] {
			again[e.Cell]++
		}
	}
	if len(again) > 0 {
		t.Errorf("%d cells recorded before the kill were requested again after it, e.g. %v", len(again), firstKeys(again, 5))
	}
	got := cellColumns(t, filepath.Join(dir, "out", id))
	if len(got) != 1000 {
		t.Fatalf("resumed run wrote %d rows, want 1000", len(got))
	}

	// 4. An uninterrupted run of the same spec, in its own directory, writes the same cell columns.
	base := quickstartCopy(t)
	verb, idb := runOK(t, bin, base, "req.jsonl")
	if verb != "Started" || idb != id {
		t.Fatalf("uninterrupted run: %q run %s, want \"Started\" run %s", verb, idb, id)
	}
	want := cellColumns(t, filepath.Join(base, "out", id))
	if len(want) != len(got) {
		t.Fatalf("uninterrupted run wrote %d rows, resumed %d", len(want), len(got))
	}
	diffs := 0
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			if diffs < 5 {
				t.Errorf("row %d differs after kill and resume:\n got %q\nwant %q", i, got[i], want[i])
			}
			diffs++
		}
	}
	if diffs > 0 {
		t.Errorf("%d of %d rows differ", diffs, len(want))
	}
}

func firstKeys(m map[string]int, n int) []string {
	var out []string
	for k := range m {
		if len(out) == n {
			break
		}
		out = append(out, k)
	}
	return out
}
