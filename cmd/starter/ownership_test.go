package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/store"
)

var startedRE = regexp.MustCompile(`(?m)^(Started|Attached to) run (\S+)$`)

// fastQuickstart is copyQuickstart with the simulator at 80 ms ± 40 ms a call (the grid unchanged, 1,000 cells),
// and beside it other.yaml: the same grid under another name, so another run.
func fastQuickstart(t *testing.T) string {
	t.Helper()
	dir := copyQuickstart(t)
	path := filepath.Join(dir, "experiment.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for old, repl := range map[string]string{"latency: 300ms": "latency: 80ms", "jitter: 200ms": "jitter: 40ms"} {
		if !strings.Contains(s, old) {
			t.Fatalf("quickstart spec no longer contains %q; update the test", old)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	const name = "name: IPIP-50 quickstart"
	if !strings.Contains(s, name) {
		t.Fatalf("quickstart spec no longer contains %q; update the test", name)
	}
	other := strings.Replace(s, name, "name: Another study", 1)
	if err := os.WriteFile(filepath.Join(dir, "other.yaml"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recorded is how many cells of run id the results store of dir holds.
func recorded(t *testing.T, dir, id string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.OpenSQLite(ctx, filepath.Join(dir, defaultStateDir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.Counts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return n.Records
}

// stopMidRun starts a fresh run of experiment.yaml in dir, logging the simulator's requests to reqLog, and once
// 150 were made stops its starter with sig ("int": Ctrl-C; "kill": kill -9). It returns the run's id and the
// cells recorded when the starter had exited.
func stopMidRun(t *testing.T, dir, reqLog, sig string) (string, int) {
	t.Helper()
	p := startStarter(t, dir, "run", "experiment.yaml", "--new", "--no-cache", "--sim-request-log", reqLog,
		"--port", "0", "--ui-port", "0", "--progress-every", "1s")
	deadline := time.Now().Add(2 * time.Minute)
	for countLines(filepath.Join(dir, reqLog)) < 150 {
		select {
		case <-p.done:
			t.Fatalf("starter exited before it was stopped:\n%s\n%s", p.out.String(), p.err.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("150 requests not made within 2m:\n%s", p.err.String())
		}
	}
	want := exitInterrupted
	if sig == "kill" {
		want = -1 // killed by a signal
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	} else if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute, "the stopped starter"); code != want {
		t.Fatalf("stopped starter (%s): exit %d, want %d\n%s\n%s", sig, code, want, p.out.String(), p.err.String())
	}
	m := startedRE.FindStringSubmatch(p.out.String())
	if m == nil || m[1] != "Started" {
		t.Fatalf("no \"Started run ID\" line:\n%s", p.out.String())
	}
	n := recorded(t, dir, m[2])
	if n == 0 || n >= 1000 {
		t.Fatalf("%d cells recorded when the starter stopped: want some, not all", n)
	}
	t.Logf("%s: run %s stopped with %d cells recorded", sig, m[2], n)
	return m[2], n
}

// countLines is the number of lines of the file at path (0 when it does not exist).
func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// listedRuns is `starter runs --json` in dir.
func listedRuns(t *testing.T, dir string) []runRow {
	t.Helper()
	out, errOut, code := runStarterIn(t, dir, "runs", "--json")
	if code != exitOK {
		t.Fatalf("starter runs --json: exit %d\n%s", code, errOut)
	}
	var rows []runRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("starter runs --json: %v\n%s", err, out)
	}
	return rows
}

// runsByID is `starter runs --json` in dir, by id.
func runsByID(t *testing.T, dir string) map[string]runRow {
	t.Helper()
	m := map[string]runRow{}
	for _, r := range listedRuns(t, dir) {
		m[r.ID] = r
	}
	return m
}

// TestStoppedRunStaysStopped stops one quickstart run with Ctrl-C and another with kill -9, then runs another
// spec to its end and `starter dev` in the same directory: neither stopped run is continued (no cell recorded,
// no request made: the other spec's simulator is asked exactly its own 1,000 cells, dev's nothing), and `starter
// runs` lists them stopped and interrupted, with dev's server up too. Then `starter run ID` finishes each,
// asking only the cells without a record (and, after the kill, at most the calls that were in flight).
func TestStoppedRunStaysStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six starter processes over 3,000 cells")
	}
	dir := fastQuickstart(t)
	stopped, atStop := stopMidRun(t, dir, "req-int.jsonl", "int")
	killed, atKill := stopMidRun(t, dir, "req-kill.jsonl", "kill")
	untouched := func(when string) {
		t.Helper()
		if n := recorded(t, dir, stopped); n != atStop {
			t.Errorf("%s: the run stopped by Ctrl-C has %d cells recorded, had %d: it was continued", when, n, atStop)
		}
		if n := recorded(t, dir, killed); n != atKill {
			t.Errorf("%s: the run killed with -9 has %d cells recorded, had %d: it was continued", when, n, atKill)
		}
		rows := runsByID(t, dir)
		if r := rows[stopped]; r.Status != store.RunStopped {
			t.Errorf("%s: starter runs says %q of the run stopped by Ctrl-C, want %q", when, r.Status, store.RunStopped)
		}
		if r := rows[killed]; r.Status != runStateInterrupted {
			t.Errorf("%s: starter runs says %q of the killed run, want %q", when, r.Status, runStateInterrupted)
		}
	}
	untouched("after stopping")

	// Another spec in the same directory: its starter's simulator is asked exactly its own cells.
	out, errOut, code := runStarterIn(t, dir, "run", "other.yaml", "--sim-request-log", "req-other.jsonl",
		"--port", "0", "--ui-port", "0")
	if code != exitOK || !strings.Contains(out, "Done: 1000 cells") {
		t.Fatalf("starter run other.yaml: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := countLines(filepath.Join(dir, "req-other.jsonl")); n != 1000 {
		t.Errorf("the other spec's simulator got %d requests, want its own 1,000", n)
	}
	untouched("after another spec's run")

	// starter dev serves the state dir, with a worker, for a while: it makes no request.
	dev := startStarter(t, dir, "dev", "--sim-request-log", "req-dev.jsonl", "--port", "0", "--ui-port", "0")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(dev.out.String(), "Task queue") {
		select {
		case <-dev.done:
			t.Fatalf("starter dev exited:\n%s\n%s", dev.out.String(), dev.err.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("starter dev not up within a minute:\n%s", dev.err.String())
		}
	}
	// The stopped runs had continued within a second or two of a worker polling (414 → 1,000 cells in 8 s).
	time.Sleep(5 * time.Second)
	untouched("while starter dev serves the folder")
	if n := countLines(filepath.Join(dir, "req-dev.jsonl")); n != 0 {
		t.Errorf("starter dev's simulator got %d requests, want none", n)
	}
	if err := dev.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	dev.wait(t, time.Minute, "starter dev")

	// Their owner's command finishes each, asking only what has no record.
	for _, c := range []struct {
		id          string
		at, slack   int
		log, signal string
	}{{stopped, atStop, 0, "req-resume-int.jsonl", "Ctrl-C"}, {killed, atKill, 16, "req-resume-kill.jsonl", "kill -9"}} {
		out, errOut, code := runStarterIn(t, dir, "run", c.id, "--sim-request-log", c.log, "--port", "0", "--ui-port", "0")
		if code != exitOK || !strings.Contains(out, "Done: 1000 cells") || !strings.Contains(out, "run "+c.id) {
			t.Fatalf("starter run %s: exit %d\n%s\n%s", c.id, code, out, errOut)
		}
		left := 1000 - c.at
		if n := countLines(filepath.Join(dir, c.log)); n < left || n > left+c.slack {
			t.Errorf("the run stopped by %s: %d requests to finish it, want %d (the cells without a record) plus at most %d in flight",
				c.signal, n, left, c.slack)
		}
		if n := recorded(t, dir, c.id); n != 1000 {
			t.Errorf("the run stopped by %s has %d cells recorded after `starter run ID`, want 1000", c.signal, n)
		}
	}
	if r := runsByID(t, dir); r[stopped].Status != store.RunCompleted || r[killed].Status != store.RunCompleted {
		t.Errorf("after their owner's command: %q and %q, want both completed", r[stopped].Status, r[killed].Status)
	}
}

// TestPauseOnACluster runs the quickstart in passes of 100 cells, one at a time, on `starter dev`'s worker as a
// cluster would (--address, --detach), pauses it: `starter status` says so, and once the pass running has
// finished nothing more is recorded while it stays paused; `starter resume` lets the worker finish it.
func TestPauseOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs starter dev and 1,000 cells")
	}
	dir := fastQuickstart(t)
	path := filepath.Join(dir, "experiment.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const par = "  max_parallel_passes: 2\n"
	if !strings.Contains(string(b), par) {
		t.Fatalf("quickstart spec no longer contains %q; update the test", par)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), par, "  max_parallel_passes: 1\n  chunk_size: 100\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := startStarter(t, dir, "dev", "--port", "0", "--ui-port", "0")
	addrRE := regexp.MustCompile(`Temporal server  (\S+) `)
	var addr string
	for deadline := time.Now().Add(time.Minute); ; {
		if m := addrRE.FindStringSubmatch(dev.out.String()); m != nil && strings.Contains(dev.out.String(), "Task queue") {
			addr = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("starter dev not up within a minute:\n%s\n%s", dev.out.String(), dev.err.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, errOut, code := runStarterIn(t, dir, "run", "experiment.yaml", "--address", addr, "--detach")
	m := startedRE.FindStringSubmatch(out)
	if code != exitOK || m == nil {
		t.Fatalf("starter run --detach: exit %d\n%s\n%s", code, out, errOut)
	}
	id := m[2]
	out, errOut, code = runStarterIn(t, dir, "pause", id, "--address", addr)
	if code != exitOK || !strings.Contains(out, "paused run "+id) {
		t.Fatalf("starter pause: exit %d\n%s\n%s", code, out, errOut)
	}
	// The pass running when the pause came finishes; then nothing more is recorded.
	last, stable := -1, time.Time{}
	for deadline := time.Now().Add(time.Minute); time.Since(stable) < 2*time.Second || stable.IsZero(); {
		if n := recorded(t, dir, id); n != last {
			last, stable = n, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the paused run kept recording cells for a minute (%d)", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last >= 1000 {
		t.Fatalf("the paused run recorded all %d cells: the pause held nothing back", last)
	}
	out, _, _ = runStarterIn(t, dir, "status", id, "--address", addr)
	if !strings.Contains(out, "paused since") || !strings.Contains(out, "starter resume "+id) {
		t.Errorf("starter status of the paused run does not say it is paused and how to resume it:\n%s", out)
	}
	time.Sleep(time.Second) // a bounded look for calls that must not come
	if n := recorded(t, dir, id); n != last {
		t.Fatalf("the paused run went on: %d cells recorded, then %d", last, n)
	}
	out, errOut, code = runStarterIn(t, dir, "resume", id, "--address", addr)
	if code != exitOK || !strings.Contains(out, "resumed run "+id) {
		t.Fatalf("starter resume: exit %d\n%s\n%s", code, out, errOut)
	}
	for deadline := time.Now().Add(2 * time.Minute); recorded(t, dir, id) < 1000; {
		if time.Now().After(deadline) {
			t.Fatalf("the resumed run did not finish within 2m: %d cells recorded", recorded(t, dir, id))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := dev.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	dev.wait(t, time.Minute, "starter dev")
}
