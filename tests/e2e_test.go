// Package tests holds end-to-end tests: a real Temporal server in-process, a real worker, and the simulator as
// the model server, all on 127.0.0.1.
package tests

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workerhost"
	"github.com/silicolab/silico/workflows"
)

var recordHistory = flag.String("record-history", "", "write the history of one e2e run to this file (for the replay test)")

// stack is a Temporal server, the simulator and a worker, stopped by t.Cleanup.
type stack struct {
	client client.Client
	store  *store.SQLite
	sim    *sim.Server
	simURL string
	out    string
	// breaker is the policy of the workers' endpoint breakers (zero: the defaults).
	breaker breaker.Policy
}

// newWorker starts one more worker on the stack; t.Cleanup stops it (Stop is idempotent).
func (s *stack) newWorker(t *testing.T) worker.Worker {
	t.Helper()
	w, err := workerhost.New(s.client, workerhost.Config{
		Store:      s.store,
		Getenv:     func(string) string { return "" },
		SimURL:     s.simURL,
		OutputRoot: s.out,
		Breaker:    s.breaker,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

func newStack(t *testing.T, cfg sim.Config) *stack {
	return newStackWorkers(t, cfg, 1)
}

// newStackWorkers is newStack with several workers on the one server, as several machines would run them.
func newStackWorkers(t *testing.T, cfg sim.Config, workers int) *stack {
	return newStackWrapped(t, cfg, workers, nil)
}

// newStackWrapped is newStackWorkers with the simulator behind wrap (nil: none), to change what it answers.
func newStackWrapped(t *testing.T, cfg sim.Config, workers int, wrap func(http.Handler) http.Handler) *stack {
	return newStackWith(t, cfg, stackOptions{workers: workers, wrap: wrap})
}

// stackOptions change what newStackWith builds.
type stackOptions struct {
	workers int
	// wrap puts the simulator behind a handler (nil: none).
	wrap func(http.Handler) http.Handler
	// owned serves the simulator on a listener it owns (sim.Serve), which its refuse outages need; wrap is then
	// not used.
	owned bool
	// breaker is the workers' breaker policy.
	breaker breaker.Policy
}

func newStackWith(t *testing.T, cfg sim.Config, o stackOptions) *stack {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	simSrv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var simURL string
	if o.owned {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sv, err := sim.Serve(simSrv, ln)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sv.Close() })
		simURL = sv.URL()
	} else {
		var h http.Handler = simSrv
		if o.wrap != nil {
			h = o.wrap(simSrv)
		}
		hs := httptest.NewServer(h)
		t.Cleanup(hs.Close)
		simURL = hs.URL + "/v1"
	}
	dir := t.TempDir()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &stack{client: ts.GetDefaultClient(), store: st, sim: simSrv, simURL: simURL, out: filepath.Join(dir, "out"),
		breaker: o.breaker}
	for range o.workers {
		s.newWorker(t)
	}
	return s
}

// gridSpec is models × seeds × items × personas on the simulator.
func gridSpec(models, seeds, items, personas int) experiment.Spec {
	return experimenttest.Grid(models, seeds, items, personas, experimenttest.Name("e2e grid"), experimenttest.FirstSeed(100),
		experimenttest.Statements(), experimenttest.Model(func(i int, m *experiment.Model) {
			m.Name, m.Provider, m.Params = fmt.Sprintf("sim-%d", i), "sim", experiment.Params{MaxTokens: 16}
		}), experimenttest.Edit(func(s *experiment.Spec) {
			// As a spec file gets it, so the caller's copy (to compute cache keys or sent seeds) and the run agree.
			on := true
			s.Questionnaire.Name, s.Run.SeedPerCell = "e2e", &on
		}), experimenttest.Defaults())
}

func (s *stack) run(t *testing.T, id string, spec experiment.Spec) wire.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, specInput(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	return res
}

// cellColumns reads results.jsonl and keeps the columns that are facts of the cell (DESIGN.md §8).
func cellColumns(t *testing.T, dir string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	if err := results.ReadJSONL(f, func(r results.Row) error {
		rows = append(rows, results.CellColumns(r))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestSameResultsForEveryConcurrency(t *testing.T) {
	s := newStack(t, sim.Config{})
	base := gridSpec(3, 2, 10, 8)
	// Every run must call the simulator: with the cache, the later runs would be answered by the first.
	base.Run.Cache = experiment.CacheOff
	var want [][]string
	for _, c := range []struct{ conc, par int }{{1, 1}, {16, 1}, {1, 4}, {16, 4}} {
		spec := base
		spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = c.conc, c.par
		id := fmt.Sprintf("e2e-c%d-p%d", c.conc, c.par)
		res := s.run(t, id, spec)
		if res.Summary.Cells != 480 || res.Summary.OK+res.Summary.Unparsed != 480 {
			t.Fatalf("%s: summary %+v, want 480 cells answered", id, res.Summary)
		}
		got := cellColumns(t, res.OutputDir)
		if want == nil {
			want = got
			if *recordHistory != "" {
				writeHistory(t, s.client, id, *recordHistory)
			}
			continue
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", id, len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("%s: row %d differs from max_concurrency 1, max_parallel_passes 1:\n got %v\nwant %v", id, i, got[i], want[i])
			}
		}
	}
	// Every cell was requested exactly once per run.
	seen := map[string]int{}
	for _, r := range s.sim.Requests() {
		seen[r.Cell]++
	}
	if len(seen) != 480 {
		t.Errorf("%d distinct cells requested, want 480", len(seen))
	}
	for cell, n := range seen {
		if n != 4 {
			t.Errorf("cell %s requested %d times over 4 runs, want 4", cell, n)
		}
	}
}

func writeHistory(t *testing.T, c client.Client, id, path string) {
	t.Helper()
	writeHistoryRun(t, c, id, "", path)
}

// writeHistoryRun writes the history of one run of workflow id ("": the latest) as JSON for the replayer.
func writeHistoryRun(t *testing.T, c client.Client, id, runID, path string) {
	t.Helper()
	iter := c.GetWorkflowHistory(context.Background(), id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []json.RawMessage
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, err := protojson.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, b)
	}
	b, err := json.MarshalIndent(map[string]any{"events": events}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBudgetHoldsWithManyCallsInFlight runs four passes of 50 concurrent calls each (200 in flight) against a
// budget that runs out mid-run: what the simulator served, priced at the model's price, must stay within the
// budget, and every cell not called is recorded as BudgetExhausted.
func TestBudgetHoldsWithManyCallsInFlight(t *testing.T) {
	s := newStack(t, sim.Config{Latency: sim.Latency{Fixed: 30 * time.Millisecond, Jitter: 20 * time.Millisecond}})
	spec := gridSpec(1, 4, 30, 20) // 2,400 cells in 4 passes
	price := experiment.Price{InputPerMTok: 1000, OutputPerMTok: 1000}
	spec.Models[0].Price = &price
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = 50, 4
	spec.BudgetUSD = usage.Dollars(40)
	res := s.run(t, "budget", spec)

	var served usage.USD
	for _, r := range s.sim.Requests() {
		served += usage.PerMTok(r.PromptTokens, price.InputPerMTok, r.CompletionTokens, price.OutputPerMTok)
	}
	if served > spec.BudgetUSD || res.Summary.CostUSD > spec.BudgetUSD {
		t.Fatalf("the simulator served $%v and the run recorded $%v; budget $%v", served, res.Summary.CostUSD, spec.BudgetUSD)
	}
	if served < spec.BudgetUSD/2 {
		t.Errorf("only $%v of a $%v budget used: the shares waste it", served, spec.BudgetUSD)
	}
	if res.Stopped == "" || res.Summary.Failed == 0 || res.Summary.OK+res.Summary.Unparsed+res.Summary.Failed != 2400 {
		t.Fatalf("result %+v: want a stop, failed cells, and every cell accounted for", res)
	}
	f, err := os.Open(filepath.Join(res.OutputDir, results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exhausted := 0
	_ = results.ReadJSONL(f, func(r results.Row) error {
		if r.ErrorClass == "BudgetExhausted" {
			exhausted++
		}
		return nil
	})
	if exhausted != res.Summary.Failed {
		t.Errorf("%d cells BudgetExhausted of %d failed", exhausted, res.Summary.Failed)
	}
	t.Logf("served $%v, recorded $%v of $%v; %d cells not run", served, res.Summary.CostUSD, spec.BudgetUSD, exhausted)
}

// TestLimitsHoldAcrossWorkers runs four passes of one model on two workers against a simulator that enforces
// the model's RPM with a small bucket: the workflow's shares keep the fleet under it, so no call is refused.
func TestLimitsHoldAcrossWorkers(t *testing.T) {
	s := newStackWorkers(t, sim.Config{RPM: 1200, Burst: 0.05}, 2) // 20 requests/s, a bucket of 60
	spec := gridSpec(1, 4, 10, 10)                                 // 400 calls in 4 passes: about 20 s at 1200 RPM
	spec.Models[0].RPM = 1200
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = 64, 4
	res := s.run(t, "limits", spec)
	if res.Summary.OK+res.Summary.Unparsed != 400 {
		t.Fatalf("summary %+v", res.Summary)
	}
	if n := s.sim.Counters().RateLimited; n != 0 {
		t.Errorf("the simulator refused %d calls: the shares exceed the model's RPM", n)
	}
}

// TestStoppingWorkerLetsCallsLand stops the only worker mid-run, as Ctrl-C or a deploy would, and starts another:
// the calls in flight at the stop land and are recorded, so the run finishes without asking for any cell twice.
func TestStoppingWorkerLetsCallsLand(t *testing.T) {
	s := newStackWorkers(t, sim.Config{Latency: sim.Latency{Fixed: 150 * time.Millisecond, Jitter: 50 * time.Millisecond}}, 0)
	first := s.newWorker(t)
	spec := gridSpec(1, 2, 20, 10) // 400 cells in 2 passes
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = 16, 2
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "stop", TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, specInput(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, time.Minute, 10*time.Millisecond, "100 requests at the simulator", func() bool {
		return len(s.sim.Requests()) >= 100
	})
	first.Stop() // returns once the passes have let their calls land
	if n := len(s.sim.Requests()); n >= 400 {
		t.Fatalf("the run finished (%d requests) before the worker stopped; the test needs a stop mid-run", n)
	}
	s.newWorker(t)
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.OK+res.Summary.Unparsed != 400 {
		t.Fatalf("summary %+v", res.Summary)
	}
	seen := map[string]int{}
	for _, r := range s.sim.Requests() {
		if seen[r.Cell]++; seen[r.Cell] > 1 {
			t.Errorf("cell %s requested twice", r.Cell)
		}
	}
}

// TestHeartbeatsCarryProgress reads a running pass's heartbeat details from the server, as `starter status` does
// for remote runs.
func TestHeartbeatsCarryProgress(t *testing.T) {
	s := newStack(t, sim.Config{Latency: sim.Latency{Fixed: 100 * time.Millisecond}})
	spec := gridSpec(1, 1, 40, 10) // 400 cells at 8 in flight: about 5 s
	spec.Run.MaxConcurrency = 8
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "hb", TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, specInput(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	var got wire.PassProgress
	for got.Done == 0 {
		if ctx.Err() != nil {
			t.Fatal("no heartbeat with progress while the pass ran")
		}
		d, err := s.client.DescribeWorkflowExecution(ctx, "hb", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetActivityType().GetName() == "RunSeedPass" && pa.GetHeartbeatDetails() != nil {
				if err := converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &got); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.Cells != 400 || got.Done > 400 || got.PromptTokens == 0 {
		t.Errorf("heartbeat %+v: want the pass's 400 cells, some done, their tokens", got)
	}
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
}
