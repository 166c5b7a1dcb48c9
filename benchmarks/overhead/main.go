// Command overhead measures what silico adds per model call: cells/s of a whole run (ExperimentWorkflow against
// the simulator at zero latency), of its RunSeedPass as the server's history times it, and of one RunSeedPass
// activity alone, beside a bare loop of go-openai calls with the same messages, the same HTTP client settings and
// the same concurrency, against the same simulator, in the same process. Each is measured three ways: with the
// response cache off, with the default policy on an empty cache (every cell called and written to the cache), and
// as a new run served entirely from the cache the empty-cache run filled in the same round. Every round starts a
// new server, simulator, worker and results store, and every run has a run id of its own; each ratio is taken to
// the bare loop of the same round. Beside cells/s it reports the process's CPU time per cell, which, unlike
// cells/s, holds whatever else the machine runs. It prints a markdown table.
//
//	go run ./benchmarks/overhead            # 5 rounds
//	go run ./benchmarks/overhead --quick    # 1 round
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workerhost"
)

func main() {
	var o options
	quick := flag.Bool("quick", false, "one round instead of --rounds")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; each runs the bare loop, then the workflow and the pass alone in every cache mode")
	flag.IntVar(&o.items, "items", 50, "items of the grid")
	flag.IntVar(&o.personas, "personas", 40, "personas of the grid")
	flag.IntVar(&o.conc, "concurrency", 16, "max_concurrency of the run and goroutines of the bare loop")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write CPU profiles of the first round to `prefix`.{bare,workflow-<mode>,activity-<mode>}.pprof")
	flag.Parse()
	if *quick {
		o.rounds = 1
	}
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

type options struct {
	rounds, items, personas, conc int
	cpuProfile                    string
}

// profile runs f under the CPU profiler when round is 0 and --cpuprofile is set.
func (o options) profile(round int, name string, f func() error) error {
	if o.cpuProfile == "" || round != 0 {
		return f()
	}
	out, err := os.Create(o.cpuProfile + "." + name + ".pprof")
	if err != nil {
		return err
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	return f()
}

// cacheMode is one way a run meets the response cache. Each round measures the three in this order on a store of
// its own, so that fill starts from an empty cache and hit is served by what fill wrote in the same round.
type cacheMode struct {
	name   string
	policy experiment.CachePolicy
	// cached is whether every cell must come from the cache (hit) or none may (off, fill).
	cached bool
	label  string
}

const nModes = 3

// cacheModes are the modes in the order a round runs them.
func cacheModes() [nModes]cacheMode {
	return [nModes]cacheMode{
		{"off", experiment.CacheOff, false, "off"},
		{"fill", experiment.CacheReadWrite, false, "empty (default `read_write`: every cell called and written)"},
		{"hit", experiment.CacheReadWrite, true, "all hits (a new run served from what the empty-cache run wrote: 0 calls)"},
	}
}

// sample is one round's cells/s: the bare loop, and per cache mode the whole run, its pass in the server's
// history, and the pass alone.
type sample struct {
	bare             float64
	run, pass, alone [nModes]float64
	// The CPU time of this process per cell (user and system, the simulator's and the server's share included)
	// of the bare loop, the runs and the passes alone: unlike cells/s, it holds whatever else the machine runs.
	bareCPU          float64
	runCPU, aloneCPU [nModes]float64
}

func run(o options) error {
	spec := bench.GridSpec(1, 1, o.items, o.personas)
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = o.conc, 1
	spec.Run.ChunkSize = max(spec.Run.ChunkSize, spec.NumCells()) // one pass
	if err := spec.Validate(); err != nil {
		return err
	}
	reqs, err := bench.BareRequests(&spec)
	if err != nil {
		return err
	}
	var samples []sample
	for r := range o.rounds {
		s, err := round(o, r, spec, reqs)
		if err != nil {
			return fmt.Errorf("round %d: %w", r+1, err)
		}
		samples = append(samples, s)
	}

	med := func(f func(sample) float64) float64 {
		var xs []float64
		for _, s := range samples {
			xs = append(xs, f(s))
		}
		return bench.Median(xs)
	}
	fmt.Printf("### Overhead: %d calls (1 model × 1 seed × %d items × %d personas), simulator at zero latency, concurrency %d\n\n",
		spec.NumCells(), o.items, o.personas, o.conc)
	fmt.Printf("%s · rounds %d (median)\n\n", bench.Machine(), o.rounds)
	fmt.Println("| what | response cache | cells/s | ratio to bare loop | CPU µs per cell | bare loop's CPU / this |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	row := func(name, cache string, f, cpu func(sample) float64) {
		c, cr := "–", "–"
		if cpu != nil {
			c = fmt.Sprintf("%.0f", med(cpu))
			cr = fmt.Sprintf("%.2f", med(func(s sample) float64 { return s.bareCPU / cpu(s) }))
		}
		fmt.Printf("| %s | %s | %.0f | %.2f | %s | %s |\n", name, cache, med(f), med(func(s sample) float64 { return f(s) / s.bare }), c, cr)
	}
	fmt.Printf("| bare go-openai loop, %d goroutines | none | %.0f | 1.00 | %.0f | 1.00 |\n", o.conc,
		med(func(s sample) float64 { return s.bare }), med(func(s sample) float64 { return s.bareCPU }))
	modes := cacheModes()
	for _, what := range []struct {
		name   string
		f, cpu func(sample, int) float64
	}{
		{"run: ExperimentWorkflow start → result (prepare, pass, export)", func(s sample, i int) float64 { return s.run[i] },
			func(s sample, i int) float64 { return s.runCPU[i] }},
		{"run: its RunSeedPass (server's started → completed)", func(s sample, i int) float64 { return s.pass[i] }, nil},
		{"RunSeedPass alone (testsuite activity environment)", func(s sample, i int) float64 { return s.alone[i] },
			func(s sample, i int) float64 { return s.aloneCPU[i] }},
	} {
		for i, m := range modes {
			var cpu func(sample) float64
			if what.cpu != nil {
				cpu = func(s sample) float64 { return what.cpu(s, i) }
			}
			row(what.name, m.label, func(s sample) float64 { return what.f(s, i) }, cpu)
		}
	}

	validated, decoded, err := renderCost(&spec)
	if err != nil {
		return err
	}
	fmt.Printf("\n| Spec.Render of every cell, one goroutine | µs per call |\n|---|---:|\n")
	fmt.Printf("| spec after Validate (templates compiled once) | %.1f |\n", validated)
	fmt.Printf("| spec decoded from JSON as RunSeedPass loads it, not validated | %.1f |\n", decoded)
	return nil
}

// round measures one round on a stack of its own (a new server, simulator, worker and results store, and a second
// store for the pass alone): the bare loop, then the three cache modes as whole runs, then as passes alone.
func round(o options, r int, spec experiment.Spec, reqs []openai.ChatCompletionRequest) (sample, error) {
	ctx := context.Background()
	var s sample
	st, err := bench.Start(sim.Config{})
	if err != nil {
		return s, err
	}
	defer st.Close()
	oc := bench.BareClient(st.SimURL)
	alone, err := store.OpenSQLite(ctx, filepath.Join(st.Dir, "alone.db"))
	if err != nil {
		return s, err
	}
	defer alone.Close()
	act, err := newActivities(alone, st.SimURL)
	if err != nil {
		return s, err
	}

	// Warm-up: connections, tokenizers, the worker's caches, the server's task queue. Its cells are requests of
	// the measured grid too, so it must not fill the cache.
	if _, err := bench.Bare(ctx, oc, reqs[:min(len(reqs), 200)], o.conc); err != nil {
		return s, err
	}
	warm := bench.GridSpec(1, 1, 5, 8)
	warm.Run.MaxConcurrency, warm.Run.Cache = o.conc, experiment.CacheOff
	if _, err := st.Run(ctx, fmt.Sprintf("overhead-r%d-warmup", r), warm); err != nil {
		return s, err
	}

	n := spec.NumCells()
	var d time.Duration
	cpu0 := processCPU()
	if err := o.profile(r, "bare", func() (err error) {
		d, err = bench.Bare(ctx, oc, reqs, o.conc)
		return err
	}); err != nil {
		return s, err
	}
	s.bare, s.bareCPU = float64(n)/d.Seconds(), perCell(processCPU()-cpu0, n)

	modes := cacheModes()
	var first [][]string
	for i, m := range modes {
		sp := spec
		sp.Run.Cache = m.policy
		id := fmt.Sprintf("overhead-r%d-%s", r, m.name)
		var res wire.Result
		cpu0 := processCPU()
		if err := o.profile(r, "workflow-"+m.name, func() (err error) {
			start := time.Now()
			res, err = st.RunWithCache(ctx, id, sp) // cachedWant checks the cells from the cache below
			s.run[i] = float64(n) / time.Since(start).Seconds()
			return err
		}); err != nil {
			return s, err
		}
		s.runCPU[i] = perCell(processCPU()-cpu0, n)
		if got := res.Summary.OK + res.Summary.Unparsed; got != n {
			return s, fmt.Errorf("%s: %d of %d cells answered: %+v", id, got, n, res.Summary.Errors)
		}
		if want := cachedWant(m, n); res.Summary.Cached != want {
			return s, fmt.Errorf("%s: %d cells from the cache, want %d", id, res.Summary.Cached, want)
		}
		cols, err := bench.CellColumns(res.OutputDir)
		if err != nil {
			return s, err
		}
		if first == nil {
			first = cols
		} else if !bench.SameRows(first, cols) {
			return s, fmt.Errorf("%s: cell columns differ from the %s run's", id, modes[0].name)
		}
		pt, err := st.Passes(ctx, id)
		if err != nil {
			return s, err
		}
		s.pass[i] = float64(n) / pt.Wall.Seconds()
	}
	for i, m := range modes {
		sp := spec
		sp.Run.Cache = m.policy
		var cpu time.Duration
		if err := o.profile(r, "activity-"+m.name, func() (err error) {
			d, cpu, err = passAlone(act, fmt.Sprintf("overhead-r%d-activity-%s", r, m.name), sp, o.conc, cachedWant(m, n))
			return err
		}); err != nil {
			return s, err
		}
		s.alone[i], s.aloneCPU[i] = float64(n)/d.Seconds(), perCell(cpu, n)
	}
	fmt.Fprintf(os.Stderr, "round %d: bare %.0f; run off/fill/hit %.0f/%.0f/%.0f; its pass %.0f/%.0f/%.0f; pass alone %.0f/%.0f/%.0f cells/s (load %s)\n",
		r+1, s.bare, s.run[0], s.run[1], s.run[2], s.pass[0], s.pass[1], s.pass[2], s.alone[0], s.alone[1], s.alone[2], bench.Load())
	return s, nil
}

// cachedWant is how many of n cells a run in mode m must take from the cache.
func cachedWant(m cacheMode, n int) int {
	if m.cached {
		return n
	}
	return 0
}

// renderCost times Spec.Render over every cell of a validated spec and of the same spec decoded from its JSON, as
// Activities.spec loads it for RunSeedPass.
func renderCost(spec *experiment.Spec) (validated, decoded float64, err error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return 0, 0, err
	}
	dec, err := specfile.ParseSaved(b, "overhead")
	if err != nil {
		return 0, 0, err
	}
	each := func(s *experiment.Spec) (float64, error) {
		start := time.Now()
		for i := range s.NumCells() {
			if _, err := s.Render(s.Cell(i), nil); err != nil {
				return 0, err
			}
		}
		return float64(time.Since(start).Microseconds()) / float64(s.NumCells()), nil
	}
	if validated, err = each(spec); err != nil {
		return 0, 0, err
	}
	decoded, err = each(dec)
	return validated, decoded, err
}

func newActivities(st *store.SQLite, simURL string) (*activities.Activities, error) {
	tok, err := llm.NewTokenizer()
	if err != nil {
		return nil, err
	}
	return &activities.Activities{
		Store:     st,
		Models:    llm.NewRegistry(workerhost.NewHTTPClient(), func(string) string { return "" }, simURL),
		Tokenizer: tok,
	}, nil
}

// passAlone runs PrepareRun, then times RunSeedPass of the spec's only pass in Temporal's test activity
// environment (no server involved); cached is how many cells must come from the response cache.
func passAlone(a *activities.Activities, runID string, spec experiment.Spec, conc, cached int) (time.Duration, time.Duration, error) {
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	raw, err := json.Marshal(spec)
	if err != nil {
		return 0, 0, err
	}
	if _, err := env.ExecuteActivity(a.PrepareRun, wire.PrepareInput{RunID: runID, Spec: raw}); err != nil {
		return 0, 0, err
	}
	passes := spec.Passes()
	if len(passes) != 1 {
		return 0, 0, fmt.Errorf("%d passes, want 1", len(passes))
	}
	start, cpu0 := time.Now(), processCPU()
	v, err := env.ExecuteActivity(a.RunSeedPass, wire.PassInput{RunID: runID, Pass: passes[0],
		Limits: ratelimit.Limits{Concurrency: conc}})
	d, cpu := time.Since(start), processCPU()-cpu0
	if err != nil {
		return 0, 0, err
	}
	var res wire.PassResult
	if err := v.Get(&res); err != nil {
		return 0, 0, err
	}
	if res.OK+res.Unparsed != passes[0].Len() || res.Cached != cached {
		return 0, 0, fmt.Errorf("pass alone %s: %+v, want every cell answered and %d from the cache", runID, res, cached)
	}
	return d, cpu, nil
}

// processCPU is the CPU time this process has used so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perCell is cpu per cell of n, in microseconds.
func perCell(cpu time.Duration, n int) float64 { return float64(cpu.Nanoseconds()) / 1e3 / float64(n) }
