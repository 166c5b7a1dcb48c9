package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// faultLatency is the simulator's latency in the fault tests: low, so that a case takes seconds, yet not zero, so
// that calls overlap as they do against a real provider.
var faultLatency = sim.Latency{Fixed: 15 * time.Millisecond, Jitter: 5 * time.Millisecond}

// faultSpec is the grid of the fault tests: 30 items × 5 personas × 2 seeds = 300 cells in two passes of 150, run
// as the fault matrix runs it (max_concurrency 8, max_parallel_passes 2, call_timeout 3s, run.max_attempts left
// at its default of 10).
func faultSpec() experiment.Spec {
	spec := gridSpec(1, 2, 30, 5)
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = 8, 2
	spec.Run.CallTimeout = experiment.Duration(3 * time.Second)
	return spec
}

// TestFaultMatrix runs a grid against the simulator's seeded faults, one kind of fault per case, each at a rate
// that a pass of 150 cells meets many times. A transient fault costs the cell one of its tries and a rate limit
// costs it none, so every cell ends answered; every cell is recorded once; and no cell whose call got an HTTP 200
// with a usable body is ever sent again.
func TestFaultMatrix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults sim.Faults
		// injected reads the number of faults the simulator injected, to show the case is not vacuous.
		injected func(sim.Counters) int64
	}{
		{"429 with Retry-After 1 on 30%", sim.Faults{RateLimit: 0.3}, func(c sim.Counters) int64 { return c.RateLimited }},
		{"503 on 10%", sim.Faults{ServerError503: 0.1}, func(c sim.Counters) int64 { return c.ServerErrors }},
		{"connection dropped on 5%", sim.Faults{Drop: 0.05}, func(c sim.Counters) int64 { return c.Drops }},
		{"malformed body on 5%", sim.Faults{Malformed: 0.05}, func(c sim.Counters) int64 { return c.Malformed }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, sim.Config{Latency: faultLatency, Faults: tc.faults, FaultSeed: 7})
			spec := faultSpec()
			res := s.run(t, "faults", spec)
			rows := checkRecordedOnce(t, s, &spec, res)
			for _, r := range rows {
				if r.Status == store.StatusFailed {
					t.Errorf("cell %s failed: %s: %s (attempts %d)", r.CellID, r.ErrorClass, r.ErrorMessage, r.Attempts)
				}
			}
			if res.Summary.Failed != 0 || res.Summary.OK+res.Summary.Unparsed != spec.NumCells() {
				t.Errorf("summary %+v, want all %d cells answered", res.Summary, spec.NumCells())
			}
			checkNoAnsweredCallResent(t, s.sim.Requests())
			if n := tc.injected(s.sim.Counters()); n == 0 {
				t.Errorf("the simulator injected no fault (counters %+v): the case tests nothing", s.sim.Counters())
			}
			t.Logf("%d cells answered; simulator %+v", res.Summary.OK+res.Summary.Unparsed, s.sim.Counters())
		})
	}
}

// TestFaultUnreachableEndpoint points the model at a port nobody listens on: the connection is refused from the
// first call, so the model is given up at once and every cell is recorded failed, as Unreachable, with a message
// that names the base_url the user has to fix.
func TestFaultUnreachableEndpoint(t *testing.T) {
	s := newStack(t, sim.Config{Latency: faultLatency})
	spec := faultSpec()
	// A port that was free a moment ago and that nothing listens on now.
	baseURL := fmt.Sprintf("http://127.0.0.1:%d/v1", freePort(t))
	spec.Models[0].BaseURL = baseURL
	res := s.run(t, "unreachable", spec)
	rows := checkRecordedOnce(t, s, &spec, res)
	bad := 0
	for _, r := range rows {
		if r.Status != store.StatusFailed || r.ErrorClass != "Unreachable" || !strings.Contains(r.ErrorMessage, baseURL) {
			if bad++; bad <= 5 {
				t.Errorf("cell %s: status %s, class %q, message %q; want failed, Unreachable, naming %s",
					r.CellID, r.Status, r.ErrorClass, r.ErrorMessage, baseURL)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cells not recorded as Unreachable naming the base_url", bad, len(rows))
	}
	if res.Summary.Failed != spec.NumCells() {
		t.Errorf("summary %+v, want all %d cells failed", res.Summary, spec.NumCells())
	}
	if n := len(s.sim.Requests()); n != 0 {
		t.Errorf("the simulator got %d requests; the model's base_url is not the simulator", n)
	}
}

// TestFaultOneCellAlways500 is a 100-cell pass in which one cell's request always gets a 500, as a real
// llama.cpp server answers for some outputs: that cell fails after exactly run.max_attempts tries, recorded as a
// ServerError with the provider's message, its tries and the latency of its last try, and the 99 others are
// answered.
func TestFaultOneCellAlways500(t *testing.T) {
	spec := gridSpec(1, 1, 20, 5) // one pass of 100 cells
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = 8, 2
	spec.Run.CallTimeout = experiment.Duration(3 * time.Second)
	// Fewer tries than the default keep the test short; the count is what is checked.
	spec.Run.MaxAttempts = 4
	bad := spec.CellID(spec.Cell(37))
	s := newStack(t, sim.Config{Latency: faultLatency, FailCells: []string{bad}})
	res := s.run(t, "one-cell-500", spec)
	rows := checkRecordedOnce(t, s, &spec, res)
	for _, r := range rows {
		if r.CellID != bad {
			if r.Status == store.StatusFailed {
				t.Errorf("cell %s failed: %s: %s; only %s should", r.CellID, r.ErrorClass, r.ErrorMessage, bad)
			}
			continue
		}
		if r.Status != store.StatusFailed || r.ErrorClass != "ServerError" {
			t.Errorf("cell %s: status %s, class %q; want failed, ServerError", bad, r.Status, r.ErrorClass)
		}
		// The message says what the provider did: its status or its own words.
		if !strings.Contains(r.ErrorMessage, "500") && !strings.Contains(r.ErrorMessage, "could not be processed") {
			t.Errorf("cell %s: message %q says neither the status nor the provider's message", bad, r.ErrorMessage)
		}
		if r.Attempts != spec.Run.MaxAttempts || r.Tries != spec.Run.MaxAttempts || r.LatencyMS <= 0 {
			t.Errorf("cell %s: attempts %d, tries %d, latency_ms %v; want %d requests, as many tries and the latency of the last",
				bad, r.Attempts, r.Tries, r.LatencyMS, spec.Run.MaxAttempts)
		}
	}
	if res.Summary.Failed != 1 || res.Summary.OK+res.Summary.Unparsed != 99 {
		t.Errorf("summary %+v, want 99 answered and 1 failed", res.Summary)
	}
	tries := 0
	for _, r := range s.sim.Requests() {
		if r.Cell == bad {
			tries++
			if r.Status != http.StatusInternalServerError {
				t.Errorf("request of %s got status %d, want 500", bad, r.Status)
			}
		}
	}
	if tries != spec.Run.MaxAttempts {
		t.Errorf("the simulator got %d requests for %s, want run.max_attempts = %d", tries, bad, spec.Run.MaxAttempts)
	}
	checkNoAnsweredCallResent(t, s.sim.Requests())
}

// checkRecordedOnce checks that the run recorded every cell of spec exactly once, in the store and in
// results.jsonl, that every failed cell carries an error class and message, and that summary.json lists errors
// when a cell failed. It returns the rows of results.jsonl.
func checkRecordedOnce(t *testing.T, s *stack, spec *experiment.Spec, res wire.Result) []results.Row {
	t.Helper()
	n := spec.NumCells()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stored := make([]int, n)
	if err := s.store.Scan(ctx, res.RunID, func(r store.Record) error {
		if r.Index < 0 || r.Index >= n {
			return fmt.Errorf("record of cell index %d outside the grid of %d", r.Index, n)
		}
		stored[r.Index]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, k := range stored {
		if k != 1 {
			t.Errorf("cell %s recorded %d times in the store, want once", spec.CellID(spec.Cell(i)), k)
		}
	}

	f, err := os.Open(filepath.Join(res.OutputDir, results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []results.Row
	if err := results.ReadJSONL(f, func(r results.Row) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("results.jsonl has %d rows, want %d", len(rows), n)
	}
	failed := 0
	for i, r := range rows {
		if want := spec.CellID(spec.Cell(i)); r.CellID != want {
			t.Fatalf("row %d is cell %s, want %s", i, r.CellID, want)
		}
		if r.Status == store.StatusFailed {
			failed++
			if r.ErrorClass == "" || r.ErrorMessage == "" {
				t.Errorf("failed cell %s has class %q and message %q; want both", r.CellID, r.ErrorClass, r.ErrorMessage)
			}
		}
	}

	b, err := os.ReadFile(filepath.Join(res.OutputDir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum wire.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if sum.Failed != failed {
		t.Errorf("summary.json counts %d failed cells, results.jsonl %d", sum.Failed, failed)
	}
	if failed > 0 && len(sum.Errors) == 0 {
		t.Errorf("%d cells failed but summary.json lists no errors", failed)
	}
	return rows
}

// checkNoAnsweredCallResent checks the simulator's request log: no cell was requested again after (or while) a
// request of it was being answered with HTTP 200 and a usable body. With no process killed, no call is ever
// in flight when its pass starts again, so none may be repeated.
func checkNoAnsweredCallResent(t *testing.T, log []sim.Request) {
	t.Helper()
	if again := sim.RequestedAfterAnswer(log); len(again) > 0 {
		t.Errorf("%d cells were requested again after an answered request, e.g. %v", len(again), firstKeys(again, 5))
	}
}

// TestFaultBadRequestsOfEveryCell runs the grid against the two refusals no cell can pass, each as a real server
// answers them: a base_url written without /v1 (every call a 404 unknown_url) and json_schema against a server
// that refuses it alike for every request. The simulator's own log shows that only a handful of calls were sent,
// each recorded with the provider's refusal, and every other cell carries the model's give-up and what to change.
func TestFaultBadRequestsOfEveryCell(t *testing.T) {
	for _, tc := range []struct {
		name, class string
		// beyond is how many calls a pass may send beyond those in flight at its first refusal: the refusals
		// that decide (5 alike), or the one call a gate may let through as the stop comes (a 404 decides alone).
		beyond int
		cfg    sim.Config
		edit   func(s *stack, spec *experiment.Spec)
		want   func(s *stack) []string
	}{
		{"base_url without /v1", "NotFound", 1, sim.Config{Latency: faultLatency},
			func(s *stack, spec *experiment.Spec) { spec.Models[0].BaseURL = strings.TrimSuffix(s.simURL, "/v1") },
			func(s *stack) []string {
				return []string{strings.TrimSuffix(s.simURL, "/v1") + "/chat/completions", "set models[0].base_url to " + s.simURL}
			}},
		{"json_schema refused alike", "Rejected", 5, sim.Config{Latency: faultLatency, RefuseJSONSchema: true},
			func(_ *stack, spec *experiment.Spec) {
				spec.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerJSONSchema}
			},
			func(*stack) []string { return []string{"first 5 calls were all refused alike", "answer: {mode: text}"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, tc.cfg)
			spec := faultSpec()
			tc.edit(s, &spec)
			res := s.run(t, "refused", spec)
			rows := checkRecordedOnce(t, s, &spec, res)
			reqs := s.sim.Requests()
			sent := map[string]bool{}
			for _, r := range reqs {
				sent[r.Cell] = true
				if r.Status != http.StatusNotFound && r.Status != http.StatusBadRequest {
					t.Errorf("the simulator answered %s %s with %d, want a refusal", r.Endpoint, r.Cell, r.Status)
				}
			}
			// Each pass (of a model's seeds, run side by side) decides on its own, with up to max_concurrency calls in
			// flight.
			if most := len(spec.Passes()) * (spec.Run.MaxConcurrency + tc.beyond); len(reqs) == 0 || len(reqs) > most {
				t.Errorf("the simulator got %d requests for %d cells, want 1 to %d", len(reqs), spec.NumCells(), most)
			}
			bad := 0
			for _, r := range rows {
				ok := r.Status == store.StatusFailed
				switch {
				case sent[r.CellID]:
					ok = ok && r.ErrorClass == "InvalidRequest"
				case r.ErrorClass == "Skipped": // a pass launched after the model was given up
					ok = ok && strings.Contains(r.ErrorMessage, tc.class)
				default:
					ok = ok && r.ErrorClass == tc.class
				}
				for _, w := range tc.want(s) {
					ok = ok && (sent[r.CellID] || strings.Contains(r.ErrorMessage, w))
				}
				if !ok {
					if bad++; bad <= 5 {
						t.Errorf("cell %s (sent: %v): status %s, class %q, message %q; want failed, %s, saying %q",
							r.CellID, sent[r.CellID], r.Status, r.ErrorClass, r.ErrorMessage, tc.class, tc.want(s))
					}
				}
			}
			if res.Summary.Failed != spec.NumCells() {
				t.Errorf("summary %+v, want all %d cells failed", res.Summary, spec.NumCells())
			}
			t.Logf("%d requests for %d cells", len(reqs), spec.NumCells())
		})
	}
}
