// Package bench is the shared setup of the benchmark programs under benchmarks/: an in-process Temporal server
// (temporaltest), the simulator on 127.0.0.1, a results store on a temporary file and a worker (workerhost), plus
// the helpers that read results back and describe the machine.
package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workerhost"
	"github.com/silicolab/silico/workflows"
)

// Stack is everything a benchmark run needs, in this process, on 127.0.0.1.
type Stack struct {
	Client client.Client
	Sim    *sim.Server
	// SimURL is the simulator's base URL, ending in /v1.
	SimURL string
	Store  *store.SQLite
	Dir    string

	ts     *temporaltest.TestServer
	httpS  *http.Server
	worker worker.Worker
}

// Start stands up a Temporal server, the simulator with cfg, a store and a worker. Close undoes it.
func Start(cfg sim.Config) (*Stack, error) {
	s := &Stack{}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	dir, err := os.MkdirTemp("", "silico-bench-")
	if err != nil {
		return nil, err
	}
	s.Dir = dir
	s.Sim, err = sim.New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.httpS = &http.Server{Handler: s.Sim, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.httpS.Serve(ln) }()
	s.SimURL = "http://" + ln.Addr().String() + "/v1"

	s.ts = temporaltest.NewServer()
	s.Client = s.ts.GetDefaultClient()
	s.Store, err = store.OpenSQLite(context.Background(), filepath.Join(dir, "results.db"))
	if err != nil {
		return nil, err
	}
	s.worker, err = workerhost.New(s.Client, workerhost.Config{
		Store:      s.Store,
		Getenv:     func(string) string { return "" },
		SimURL:     s.SimURL,
		OutputRoot: filepath.Join(dir, "out"),
	})
	if err != nil {
		return nil, err
	}
	if err := s.worker.Start(); err != nil {
		s.worker = nil
		return nil, err
	}
	ok = true
	return s, nil
}

// Close stops the worker, the servers and removes the temporary directory.
func (s *Stack) Close() {
	if s.worker != nil {
		s.worker.Stop()
	}
	if s.ts != nil {
		func() {
			// temporaltest logs a shutdown error through its *testing.T, which is nil here.
			defer func() { _ = recover() }()
			s.ts.Stop()
		}()
	}
	if s.Store != nil {
		_ = s.Store.Close()
	}
	if s.httpS != nil {
		_ = s.httpS.Close()
	}
	if s.Dir != "" {
		_ = os.RemoveAll(s.Dir)
	}
}

// Run executes ExperimentWorkflow with spec under workflow id id, waits for its result, and fails if any cell was
// answered from the response cache: the benchmarks time model calls, and a cached cell makes none, so a setting
// served from an earlier one's answers would measure nothing (GridSpec turns the cache off; a spec built otherwise
// must too). RunWithCache is the one for runs that mean to read the cache.
func (s *Stack) Run(ctx context.Context, id string, spec experiment.Spec) (wire.Result, error) {
	res, err := s.RunWithCache(ctx, id, spec)
	if err != nil {
		return res, err
	}
	return res, NoneCached(id, res.Summary)
}

// NoneCached fails when some cell of run id was answered from the response cache: a benchmark that times model
// calls would time fewer calls than it says.
func NoneCached(id string, sum wire.Summary) error {
	if sum.Cached > 0 {
		return fmt.Errorf("run %s: %d of %d cells were answered from the response cache, so its times are not of "+
			"model calls; turn the cache off in the spec (run.cache: off), or call RunWithCache if the cache is measured",
			id, sum.Cached, sum.Cells)
	}
	return nil
}

// RunWithCache is Run without the check that no cell came from the response cache.
func (s *Stack) RunWithCache(ctx context.Context, id string, spec experiment.Spec) (wire.Result, error) {
	in, err := wire.NewInput(&spec, "", "")
	if err != nil {
		return wire.Result{}, err
	}
	run, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, in)
	if err != nil {
		return wire.Result{}, err
	}
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		return wire.Result{}, fmt.Errorf("run %s: %w", id, err)
	}
	return res, nil
}

// PassTimes are the server's timestamps of the RunSeedPass activities of one workflow.
type PassTimes struct {
	// Passes is the number of RunSeedPass activities completed, Attempts the attempts they took.
	Passes, Attempts int
	// Wall is from the first pass's start to the last pass's completion (Temporal's event times).
	Wall time.Duration
}

// Passes reads the history of workflow id and times its RunSeedPass activities: ActivityTaskStarted (its event
// time is when a worker picked the task up) to ActivityTaskCompleted.
func (s *Stack) Passes(ctx context.Context, id string) (PassTimes, error) {
	iter := s.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	passes := map[int64]bool{}
	var first, last time.Time
	var out PassTimes
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return PassTimes{}, err
		}
		t := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == "RunSeedPass" {
				passes[ev.GetEventId()] = true
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := ev.GetActivityTaskStartedEventAttributes()
			if passes[a.GetScheduledEventId()] {
				out.Attempts += int(a.GetAttempt())
				if first.IsZero() || t.Before(first) {
					first = t
				}
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			if passes[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] {
				out.Passes++
				if t.After(last) {
					last = t
				}
			}
		}
	}
	if out.Passes == 0 {
		return out, errors.New("no RunSeedPass completed")
	}
	out.Wall = last.Sub(first)
	return out, nil
}

// GridSpec is models × seeds × items × personas on the simulator, as in tests/e2e_test.go, with the response
// cache off: every cell is a call, however many runs of the same grid a benchmark makes in one store.
func GridSpec(models, seeds, items, personas int) experiment.Spec {
	s := experiment.Spec{Name: "bench grid", Run: experiment.RunSettings{Cache: experiment.CacheOff}}
	for m := range models {
		s.Models = append(s.Models, experiment.Model{ID: fmt.Sprintf("m%d", m), Name: fmt.Sprintf("sim-%d", m),
			Provider: "sim", Params: experiment.Params{MaxTokens: 16}})
	}
	for sd := range seeds {
		s.Seeds = append(s.Seeds, int64(100+sd))
	}
	for it := range items {
		s.Questionnaire.Items = append(s.Questionnaire.Items, experiment.Item{ID: fmt.Sprint(it + 1),
			Text: fmt.Sprintf("Statement number %d about myself.", it+1), Reversed: it%3 == 0})
	}
	for p := range personas {
		s.Personas = append(s.Personas, experiment.Persona{ID: fmt.Sprintf("p%d", p),
			Attributes: map[string]string{"name": fmt.Sprint("Person", p), "age": fmt.Sprint(20 + 5*p)}})
	}
	s.Questionnaire.Name = "bench"
	s.Questionnaire.Instruction = "Rate each statement."
	for w := 1; w <= 5; w++ {
		s.Questionnaire.Options.Options = append(s.Questionnaire.Options.Options,
			experiment.Option{ID: fmt.Sprint(w), Text: fmt.Sprintf("%d. Level %d", w, w), Weight: w})
	}
	s.ApplyDefaults()
	return s
}

// CellColumns reads dir/results.jsonl and keeps the columns that are facts of the cell (every column but run_id, latency_ms and attempts).
func CellColumns(dir string) ([][]string, error) {
	f, err := os.Open(filepath.Join(dir, results.JSONLFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows [][]string
	err = results.ReadJSONL(f, func(r results.Row) error {
		rows = append(rows, results.CellColumns(r))
		return nil
	})
	return rows, err
}

// SameRows reports whether two exports have identical cell columns, row by row.
func SameRows(a, b [][]string) bool { return reflect.DeepEqual(a, b) }

// Load is the 1-minute load average from /proc/loadavg ("?" when unreadable).
func Load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Machine describes the machine in one markdown line: CPUs, CPU model, Go version, OS.
func Machine() string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	nproc := fmt.Sprint(runtime.NumCPU())
	if out, err := exec.Command("nproc").Output(); err == nil {
		nproc = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("nproc %s · %s · %s %s/%s · GOMAXPROCS %d · load %s", nproc, model, runtime.Version(),
		runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), Load())
}

// Median of xs (0 for none); xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
