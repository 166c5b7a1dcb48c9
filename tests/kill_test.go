package tests

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// quickstartCopy writes the quickstart into a fresh directory, with the simulator's latency lowered so that the
// test is quick; the grid (1,000 cells) is unchanged.
func quickstartCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("..", "examples", "quickstart"), dir)
	editSpec(t, filepath.Join(dir, "experiment.yaml"), map[string]string{"latency: 300ms": "latency: 80ms", "jitter: 200ms": "jitter: 40ms"})
	return dir
}

var runLineRE = regexp.MustCompile(`(?m)^(Started|Attached to) run (\S+)$`)

// runArgs is the command line of an embedded run of experiment.yaml on free ports. The UI gets a port picked
// here rather than 0, which does not give it a free port (see TestDevPortZero).
func runArgs(t *testing.T, reqLog string, extra ...string) []string {
	return append([]string{"run", "experiment.yaml", "--sim-request-log", reqLog,
		"--port", "0", "--ui-port", strconv.Itoa(freePort(t)), "--progress-every", "1s"}, extra...)
}

// runOKCells runs the starter to completion in dir, checks it reported cells cells done, and returns the verb
// and run id it printed.
func runOKCells(t *testing.T, bin, dir, reqLog string, cells int) (verb, id string) {
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
	if !strings.Contains(p.stdout.String(), fmt.Sprintf("Done: %d cells", cells)) {
		t.Fatalf("run did not report %d cells:\n%s", cells, p.dump())
	}
	t.Logf("%s run %s in %s: %s", m[1], m[2], dir, time.Since(start).Round(time.Millisecond))
	return m[1], m[2]
}

// balancedCopy is quickstartCopy with the options shown both as written and reversed: every cell twice, 2,000.
func balancedCopy(t *testing.T) string {
	t.Helper()
	dir := quickstartCopy(t)
	const items = "  items: {file: ipip50.csv}"
	editSpec(t, filepath.Join(dir, "experiment.yaml"), map[string]string{items: "  order: {mode: balanced}\n" + items})
	return dir
}

// TestKillMidRunResumes kills the starter with SIGKILL mid-run, runs the same command again, and requires the
// resumed run to ask no recorded cell again and to write the cell columns of an uninterrupted run: for the
// quickstart as written and for it with balanced option order (whose reversed cells are mapped back).
func TestKillMidRunResumes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		copy  func(*testing.T) string
		cells int
	}{{"as_written", quickstartCopy, 1000}, {"balanced", balancedCopy, 2000}} {
		t.Run(tc.name, func(t *testing.T) { killMidRunResumes(t, tc.copy, tc.cells) })
	}
}

func killMidRunResumes(t *testing.T, copySpec func(*testing.T) string, cells int) {
	bin := starterBin(t)
	dir := copySpec(t)
	spec, err := specfile.Load(filepath.Join(dir, "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.NumCells() != cells {
		t.Fatalf("spec has %d cells, want %d", spec.NumCells(), cells)
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
	if len(before) == 0 || len(before) >= cells {
		t.Fatalf("%d cells recorded before the kill, want some but not all: the kill was not mid-run", len(before))
	}
	t.Logf("%d cells recorded before the kill", len(before))

	// 3. The same command again attaches to the run and finishes it.
	verb, id2 := runOKCells(t, bin, dir, "req2.jsonl", cells)
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
	if len(got) != cells {
		t.Fatalf("resumed run wrote %d rows, want %d", len(got), cells)
	}

	// 4. An uninterrupted run of the same spec, in its own directory, writes the same cell columns.
	checkUninterrupted(t, bin, copySpec(t), id, got)
}

// checkUninterrupted runs the spec copied into base to its end in one go and holds got, the cell columns of run
// id after a kill and a resume, to its: the same run id, the same rows.
func checkUninterrupted(t *testing.T, bin, base, id string, got [][]string) {
	t.Helper()
	verb, idb := runOKCells(t, bin, base, "req.jsonl", len(got))
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

// startSimulator runs cmd/simulator as its own process on a free port with a request log, so that the log
// outlives a starter killed with SIGKILL and records, for every request, when its response was flushed (done).
// It returns the simulator's base URL (ending in /v1) and the process.
func startSimulator(t *testing.T, dir, reqLog string, args ...string) (string, *proc) {
	t.Helper()
	p := startProc(t, dir, simulatorBin(t), append([]string{"--addr", "127.0.0.1:0", "--request-log", reqLog}, args...)...)
	var url string
	poll(t, 30*time.Second, 5*time.Millisecond, "the simulator's base URL", func() bool {
		if p.exited() {
			t.Fatalf("simulator exited:\n%s", p.dump())
		}
		line, _, ok := strings.Cut(p.stdout.String(), "\n")
		url = strings.TrimSpace(line)
		return ok
	})
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("simulator printed %q, want its base URL", url)
	}
	return url + "/v1", p
}

// TestKillResendsOnlyCallsInFlight kills a run with SIGKILL twice mid-way and runs it again each time, against a
// simulator in a process of its own whose request log says when each response was flushed: the calls a rerun
// sends again must be calls that had no answer yet when the starter died. An answer that had landed is durable,
// so its cell is never paid for twice. (Two kills rather than one: a store that kept answers in memory for a
// while would lose some at most kills, not at every one.)
func TestKillResendsOnlyCallsInFlight(t *testing.T) {
	bin := starterBin(t)
	dir := quickstartCopy(t)
	simLog := filepath.Join(dir, "sim.jsonl")
	simURL, simProc := startSimulator(t, dir, simLog, "--latency", "80ms", "--jitter", "40ms", "--fault-429", "0")

	// The quickstart's model, pointed at the simulator process.
	path := filepath.Join(dir, "experiment.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const provider = "    provider: sim\n"
	if !strings.Contains(string(b), provider) {
		t.Fatalf("quickstart spec no longer contains %q; update the test", provider)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), provider, provider+"    base_url: "+simURL+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The embedded simulator the starter also serves gets no calls; its log is not read.
	args := runArgs(t, "embedded-sim.jsonl")

	// 1. Run, kill -9 once the simulator has logged `at` requests; twice. starts[i] is when run i started,
	// kills[i] when it was killed.
	var starts, kills []time.Time
	var id string
	for i, at := range []int{300, 600} {
		starts = append(starts, time.Now())
		p := startProc(t, dir, bin, args...)
		poll(t, 60*time.Second, 5*time.Millisecond, fmt.Sprintf("%d lines in the simulator's request log", at), func() bool {
			if p.exited() {
				t.Fatalf("starter exited before kill %d:\n%s", i+1, p.dump())
			}
			return countLines(simLog) >= at
		})
		kills = append(kills, time.Now())
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 10*time.Second); code != 128+9 {
			t.Fatalf("killed starter: exit %d, want 137 (SIGKILL)", code)
		}
		m := runLineRE.FindStringSubmatch(p.stdout.String())
		switch {
		case m == nil:
			t.Fatalf("run %d printed no \"Started/Attached to run ID\" line:\n%s", i+1, p.dump())
		case i == 0 && m[1] != "Started", i > 0 && (m[1] != "Attached to" || m[2] != id):
			t.Fatalf("run %d: %q run %s, want the first to start a run and the others to attach to it:\n%s", i+1, m[1], m[2], p.dump())
		}
		id = m[2]
	}

	// 2. The same command again attaches to the run and finishes it.
	starts = append(starts, time.Now())
	p := startProc(t, dir, bin, args...)
	if code := p.wait(t, 120*time.Second); code != 0 {
		t.Fatalf("last run: exit %d, want 0\n%s", code, p.dump())
	}
	if m := runLineRE.FindStringSubmatch(p.stdout.String()); m == nil || m[1] != "Attached to" || m[2] != id {
		t.Fatalf("last run did not attach to run %s:\n%s", id, p.dump())
	}
	if !strings.Contains(p.stdout.String(), "Done: 1000 cells") {
		t.Fatalf("last run did not report 1000 cells:\n%s", p.dump())
	}
	// The simulator writes a log line once the response is flushed; a graceful stop lets the last ones land.
	if err := simProc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := simProc.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("simulator: exit %d after SIGTERM, want 0\n%s", code, simProc.dump())
	}

	// 3. Read the log. A run's requests are those that arrived after it started. An answer (HTTP 200, whole body)
	// flushed more than the grace before a kill had reached the starter before it died, so it must have been
	// recorded and its cell is not sent by a later run. The grace is 50 ms: enough for one commit of the store on
	// a loaded machine, so a store that commits each answer as soon as it lands never re-sends a call outside it.
	const grace = 50 * time.Millisecond
	var calls []logEntry
	for _, e := range readRequestLog(t, simLog) {
		if e.Cell != "" && e.Endpoint == "/v1/chat/completions" {
			calls = append(calls, e)
		}
	}
	runOf := func(e logEntry) int {
		r := 0
		for i, s := range starts {
			if !e.Time.Before(s) {
				r = i
			}
		}
		return r
	}
	firstAnswer := map[string]time.Time{} // when each cell's first answer was flushed
	for _, e := range calls {
		if e.Status == http.StatusOK && e.Fault == "" {
			if at, ok := firstAnswer[e.Cell]; !ok || e.Done.Before(at) {
				firstAnswer[e.Cell] = e.Done
			}
		}
	}
	requested := map[string]int{} // the first run that requested each cell
	perRun := make([]int, len(starts))
	resent := 0
	var oldest time.Duration // the longest an answer had landed before the kill when its cell was sent again
	var paidTwice []string
	for _, e := range calls {
		r := runOf(e)
		perRun[r]++
		first, seen := requested[e.Cell]
		if !seen {
			requested[e.Cell] = r
			continue
		}
		if first == r {
			continue // the same run asked again: not a rerun's doing
		}
		resent++
		at, ok := firstAnswer[e.Cell]
		if !ok || !at.Before(kills[r-1]) {
			continue // no answer had landed before the kill: the call was in flight
		}
		oldest = max(oldest, kills[r-1].Sub(at))
		if at.Before(kills[r-1].Add(-grace)) {
			paidTwice = append(paidTwice, fmt.Sprintf("%s (answered %s before kill %d)", e.Cell,
				kills[r-1].Sub(at).Round(time.Millisecond), r))
		}
	}
	for i := range kills {
		if perRun[i] == 0 || perRun[i+1] == 0 {
			t.Fatalf("requests per run %v: kill %d was not mid-run", perRun, i+1)
		}
	}
	if len(paidTwice) > 0 {
		t.Errorf("%d calls answered more than %s before a kill were sent again: %v", len(paidTwice), grace,
			paidTwice[:min(len(paidTwice), 10)])
	}
	t.Logf("requests per run %v; %d calls sent again by a rerun; the oldest answer among them landed %s before the kill",
		perRun, resent, oldest.Round(time.Millisecond))
}
