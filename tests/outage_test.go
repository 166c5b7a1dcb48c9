package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workflows"
)

// quickBreaker is the breaker policy of the outage tests: the production shape (trip after 8 distinct cells,
// probes doubling from a first wait to a cap, ±20% jitter), ten times shorter, so an outage of seconds shows
// several backoff steps.
var quickBreaker = breaker.Policy{ProbeFirst: 100 * time.Millisecond, ProbeMax: 800 * time.Millisecond}

// outageRequests counts the simulator's requests that the outage answered.
func outageRequests(log []sim.Request) int {
	n := 0
	for _, r := range log {
		if r.Fault == sim.FaultOutage {
			n++
		}
	}
	return n
}

// TestAnOutageCostsNoCell runs the fault matrix's 300-cell grid (two passes of 150, 8 at once each) through a
// 4-second provider outage of each kind. run.max_attempts is 2, so a single try charged for the outage to a cell
// that then failed once more would fail it: every cell must end answered, recorded once, and no cell answered
// before the outage may be asked again. While it lasts, the breaker lets about one probe through per backoff
// step: the requests the outage answered are those in flight when it began, the ones that tripped the breaker,
// and the probes, not a retry of every cell. Each cell's attempts count its requests, those of the outage
// included, and its tries only its answer. At run.max_attempts 1 the first cells the outage meets use their only
// try before the breaker opens: they are held until it does, and no cell fails either.
func TestAnOutageCostsNoCell(t *testing.T) {
	const outage = 4 * time.Second
	for _, tc := range []struct {
		name  string
		o     sim.Outage
		tries int
	}{
		{"503", sim.Outage{Kind: sim.OutageStatus, Status: 503}, 2},
		{"503 at max_attempts 1", sim.Outage{Kind: sim.OutageStatus, Status: 503}, 1},
		{"502 HTML page", sim.Outage{Kind: sim.OutageHTML, Status: 502}, 2},
		{"refused connections", sim.Outage{Kind: sim.OutageRefuse}, 2},
		{"429 wall without Retry-After", sim.Outage{Kind: sim.OutageStatus, Status: 429}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.After, o.For = 100*time.Millisecond, outage
			s := newStackWith(t, sim.Config{Latency: faultLatency, Outages: []sim.Outage{o}},
				stackOptions{workers: 1, owned: true, breaker: quickBreaker})
			spec := faultSpec()
			spec.Models[0].Provider, spec.Models[0].BaseURL = "sim", s.simURL
			spec.Run.MaxAttempts = tc.tries
			start := time.Now()
			res := s.run(t, "outage", spec)
			wall := time.Since(start)
			rows := checkRecordedOnce(t, s, &spec, res)
			attempts := 0
			for _, r := range rows {
				if r.Status == store.StatusFailed {
					t.Errorf("cell %s failed: %s: %s (attempts %d, tries %d)", r.CellID, r.ErrorClass, r.ErrorMessage, r.Attempts, r.Tries)
				}
				if r.Tries != 1 || r.Attempts < r.Tries {
					t.Errorf("cell %s: attempts %d, tries %d; want one try, its answer, and at least as many requests", r.CellID, r.Attempts, r.Tries)
				}
				attempts += r.Attempts
			}
			if res.Summary.Failed != 0 {
				t.Errorf("summary %+v, want no failed cell", res.Summary)
			}
			log := s.sim.Requests()
			checkNoAnsweredCallResent(t, log)
			if tc.o.Kind != sim.OutageRefuse && attempts != len(log) {
				// A refused connection never reaches the simulator's log; every other request does.
				t.Errorf("the cells' attempts add up to %d, the simulator received %d requests", attempts, len(log))
			}
			if wall < outage {
				t.Errorf("the run took %v, less than the %v outage: the outage was not met", wall, outage)
			}
			n := outageRequests(log)
			if tc.o.Kind != sim.OutageRefuse {
				// In flight at the start and the tripping ones: at most 2 passes × (8 in flight + 8 more sent
				// before 8 distinct failures came back); then a probe at 100, 200, 400 ms and every 640–960 ms.
				if n == 0 || n > 2*16+10 {
					t.Errorf("%d requests answered by the outage, want some and at most %d", n, 2*16+10)
				}
			}
			t.Logf("%d requests answered by the outage; %d requests in all; run %v", n, len(log), wall.Round(time.Millisecond))
		})
	}
}

// TestAnOutageLongerThanTheStallTimeout: nothing can finish while the provider is down, so after
// run.stall_timeout the pass gives its cells up, each Outage with a message that says since when the provider has
// been down (RFC 3339, UTC) and what it answered; the run ends with them failed, and --retry-failed finishes them
// once it is back. Each retried cell's attempts and tries are what the first execution recorded plus what the
// second one sent and charged.
func TestAnOutageLongerThanTheStallTimeout(t *testing.T) {
	const after, outage = 50 * time.Millisecond, 8 * time.Second
	s := newStackWith(t, sim.Config{Latency: faultLatency, Outages: []sim.Outage{{After: after, For: outage, Status: 503}}},
		stackOptions{workers: 1, breaker: quickBreaker})
	spec := gridSpec(1, 1, 30, 5)
	spec.Models[0].Provider, spec.Models[0].BaseURL = "sim", s.simURL
	spec.Run.MaxConcurrency = 8
	spec.Run.StallTimeout = experiment.Duration(2 * time.Second)
	start := time.Now()
	res := s.run(t, "stalled", spec)
	if res.Summary.Failed == 0 || res.Summary.Failed == spec.NumCells() {
		t.Fatalf("summary %+v, want the cells left at the outage failed and those before it answered", res.Summary)
	}
	for _, r := range readRows(t, res.OutputDir) {
		if r.Status != store.StatusFailed {
			continue
		}
		if r.ErrorClass != errclass.Outage || !strings.Contains(r.ErrorMessage, "has been down since") ||
			!strings.Contains(r.ErrorMessage, "without an answer") || !strings.Contains(r.ErrorMessage, "--retry-failed") ||
			!strings.Contains(r.ErrorMessage, "503") {
			t.Errorf("cell %s: %s: %q; want Outage saying since when the provider has been down and its 503", r.CellID, r.ErrorClass, r.ErrorMessage)
		}
		if m := rfc3339Z.FindString(r.ErrorMessage); m == "" {
			t.Errorf("cell %s: %q: want since when as an RFC 3339 UTC date and time", r.CellID, r.ErrorMessage)
		} else if since, err := time.Parse(time.RFC3339, m); err != nil || since.Before(start.Add(-time.Second)) || since.After(time.Now()) {
			t.Errorf("cell %s: down since %q (%v), want a time of this run", r.CellID, m, err)
		}
	}
	// What the first execution recorded of each failed cell, to add up with the second.
	first := map[int]store.Record{}
	if err := s.store.Scan(context.Background(), res.RunID, func(r store.Record) error {
		if r.Status == store.StatusFailed {
			first[r.Index] = r
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The provider comes back at the end of its outage; the retry asks only the failed cells.
	if d := time.Until(start.Add(after + outage + 500*time.Millisecond)); d > 0 {
		time.Sleep(d) // the outage is a fixed window of the simulator's clock: nothing to poll for
	}
	before := len(s.sim.Requests())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "stalled", TaskQueue: wire.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE},
		workflows.ExperimentWorkflow, wire.Input{RunID: "stalled", RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	var again wire.Result
	if err := run.Get(ctx, &again); err != nil {
		t.Fatal(err)
	}
	if again.Summary.Failed != 0 || again.Summary.OK+again.Summary.Unparsed != spec.NumCells() {
		t.Errorf("after --retry-failed: %+v, want every cell answered", again.Summary)
	}
	log := s.sim.Requests()
	checkNoAnsweredCallResent(t, log)
	sent := map[string]int{}
	for _, q := range log[before:] {
		sent[q.Cell]++
	}
	for idx, f := range first {
		id := spec.CellID(spec.Cell(idx))
		recs, err := s.store.Records(context.Background(), res.RunID, idx, idx+1)
		if err != nil || len(recs) != 1 {
			t.Fatalf("cell %s after the retry: %v, %v", id, recs, err)
		}
		r := recs[0]
		if sent[id] == 0 || r.Attempts != f.Attempts+sent[id] || r.Tries != f.Tries+1 || r.Attempts < r.Tries {
			t.Errorf("cell %s: attempts %d, tries %d after the retry; want the first execution's %d and %d plus this one's %d requests and its 1 try",
				id, r.Attempts, r.Tries, f.Attempts, f.Tries, sent[id])
		}
	}
}

// rfc3339Z finds a date and time in RFC 3339 with the zone Z (UTC).
var rfc3339Z = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// TestKillDuringAnOutage kills the starter (server, worker and simulator in one process) with SIGKILL while the
// provider is down and the run's progress line says so, and runs it again. The new attempt takes up the breaker
// its predecessor's heartbeat carried: its first request is a probe, not a new storm of eight, and when the
// provider answers again every cell is answered — run.max_attempts is 2, so no cell paid a try for the outage.
func TestKillDuringAnOutage(t *testing.T) {
	bin := starterBin(t)
	dir := quickstartCopy(t)
	// Every call fails from the simulator's first one on, for 6 s; the restarted simulator starts its own window.
	editSpec(t, filepath.Join(dir, "experiment.yaml"), map[string]string{
		"  jitter: 40ms\n":        "  jitter: 40ms\n  outage: {after: 0s, for: 6s, status: 503}\n",
		"  max_concurrency: 16\n": "  max_concurrency: 16\n  max_attempts: 2\n",
	})
	p1 := startProc(t, dir, bin, runArgs(t, "req1.jsonl")...)
	// Kill once the server holds, for every running pass, a heartbeat whose breaker is open: what its next attempt
	// starts from.
	var c client.Client
	poll(t, 60*time.Second, 100*time.Millisecond, "a pass's heartbeat with the provider down", func() bool {
		if p1.exited() {
			t.Fatalf("starter exited before the kill:\n%s", p1.dump())
		}
		m := runLineRE.FindStringSubmatch(p1.stdout.String())
		if m == nil {
			return false
		}
		if c == nil {
			var info struct {
				HostPort string `json:"host_port"`
			}
			b, err := os.ReadFile(filepath.Join(dir, ".silico", "server.json"))
			if err != nil || json.Unmarshal(b, &info) != nil {
				return false
			}
			if c, err = client.Dial(client.Options{HostPort: info.HostPort, Logger: quietLogger{}}); err != nil {
				c = nil
				return false
			}
			t.Cleanup(c.Close)
		}
		return heartbeatOutage(t, c, m[2])
	})
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := p1.wait(t, 10*time.Second); code != 128+9 {
		t.Fatalf("killed starter: exit %d, want 137", code)
	}
	first := readRequestLog(t, filepath.Join(dir, "req1.jsonl"))
	for _, e := range first {
		if e.Status == 200 {
			t.Fatalf("a request was answered during the outage: %+v", e)
		}
	}

	p2 := startProc(t, dir, bin, runArgs(t, "req2.jsonl")...)
	if code := p2.wait(t, 120*time.Second); code != 0 {
		t.Fatalf("second run: exit %d, want 0\n%s", code, p2.dump())
	}
	if !strings.Contains(p2.stdout.String(), "Done: 1000 cells") || !strings.Contains(p2.stdout.String(), "0 failed") {
		t.Fatalf("second run did not answer every cell:\n%s", p2.dump())
	}
	second := readRequestLog(t, filepath.Join(dir, "req2.jsonl"))
	failed := 0
	for _, e := range second {
		if e.Status == 200 {
			break
		}
		failed++
	}
	// The restored breaker probes once (the new simulator's window starts with that probe) and then once more
	// a backoff step later, when the window is over. A breaker that started closed would send a storm first.
	if failed > 2 {
		t.Errorf("the restarted run's first %d requests failed before an answer; want at most 2 probes, the backoff "+
			"of the killed attempt continued (requests: %+v)", failed, second[:min(len(second), 10)])
	}
	t.Logf("before the kill: %d requests, all failed; after: %d failed before the first answer, %d in all",
		len(first), failed, len(second))
}

// editSpec replaces each key of edits with its value, once, in the spec file at path.
func editSpec(t *testing.T, path string, edits map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for old, repl := range edits {
		if !strings.Contains(s, old) {
			t.Fatalf("%s has no %q; update the test's edits", path, old)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// heartbeatOutage reports whether every running pass of workflow id last heartbeated with its breaker open. Every
// one, not any: the passes share the endpoint's breaker in the worker, but each next attempt starts from its own
// pass's last recorded heartbeat, and the SDK sends a pass's heartbeats to the server at most every 0.8 of the
// heartbeat timeout, so one pass's recorded heartbeat can show the outage while another's is still from before it.
func heartbeatOutage(t *testing.T, c client.Client, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return false
	}
	passes := 0
	for _, pa := range d.GetPendingActivities() {
		if pa.GetActivityType().GetName() != wire.RunSeedPass.Name {
			continue
		}
		passes++
		var pr wire.PassProgress
		if pa.GetHeartbeatDetails() == nil || converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &pr) != nil ||
			!pr.Outage.Open {
			return false
		}
	}
	return passes > 0
}
