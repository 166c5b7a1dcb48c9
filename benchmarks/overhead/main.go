// Command overhead measures what silico adds per model call: calls/s of a whole run (ExperimentWorkflow against
// the simulator at zero latency) and of one RunSeedPass activity alone, beside a bare loop of go-openai calls
// with the same messages, the same HTTP client settings and the same concurrency, against the same simulator, in
// the same process. It prints a markdown table.
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
	"runtime/pprof"
	"time"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/workerhost"
	"github.com/silicolab/silico/workflows"
)

func main() {
	quick := flag.Bool("quick", false, "one round instead of --rounds")
	rounds := flag.Int("rounds", 5, "rounds; each runs the bare loop, the workflow and the pass once")
	items := flag.Int("items", 50, "items of the grid")
	personas := flag.Int("personas", 40, "personas of the grid")
	conc := flag.Int("concurrency", 16, "max_concurrency of the run and goroutines of the bare loop")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write CPU profiles of the first round to `prefix`.{bare,workflow,activity}.pprof")
	flag.Parse()
	if *quick {
		*rounds = 1
	}
	if err := run(*rounds, *items, *personas, *conc); err != nil {
		log.Fatal(err)
	}
}

var cpuProfile string

// profile runs f under the CPU profiler when round is 0 and --cpuprofile is set.
func profile(round int, name string, f func() error) error {
	if cpuProfile == "" || round != 0 {
		return f()
	}
	out, err := os.Create(cpuProfile + "." + name + ".pprof")
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

type sample struct{ bare, workflow, pass, activity float64 } // calls/s

func run(rounds, items, personas, conc int) error {
	ctx := context.Background()
	st, err := bench.Start(sim.Config{})
	if err != nil {
		return err
	}
	defer st.Close()

	spec := bench.GridSpec(1, 1, items, personas)
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = conc, 1
	spec.Run.ChunkSize = max(spec.Run.ChunkSize, spec.NumCells()) // one pass
	if err := spec.Validate(); err != nil {
		return err
	}
	n := spec.NumCells()
	reqs, err := bench.BareRequests(&spec)
	if err != nil {
		return err
	}
	oc := bench.BareClient(st.SimURL)
	act, err := newActivities(st)
	if err != nil {
		return err
	}

	// Warm-up: connections, tokenizers, the worker's caches, the server's task queue.
	if _, err := bench.Bare(ctx, oc, reqs[:min(len(reqs), 200)], conc); err != nil {
		return err
	}
	warm := bench.GridSpec(1, 1, 5, 8)
	warm.Run.MaxConcurrency = conc
	if _, err := st.Run(ctx, "overhead-warmup", warm); err != nil {
		return err
	}

	var samples []sample
	for r := range rounds {
		var s sample
		var d time.Duration
		if err := profile(r, "bare", func() (err error) {
			d, err = bench.Bare(ctx, oc, reqs, conc)
			return err
		}); err != nil {
			return err
		}
		s.bare = float64(n) / d.Seconds()

		id := fmt.Sprintf("overhead-%d", r)
		var res workflows.Result
		if err := profile(r, "workflow", func() (err error) {
			start := time.Now()
			res, err = st.Run(ctx, id, spec)
			s.workflow = float64(n) / time.Since(start).Seconds()
			return err
		}); err != nil {
			return err
		}
		if got := res.Summary.OK + res.Summary.Unparsed; got != n {
			return fmt.Errorf("%s: %d of %d cells answered: %+v", id, got, n, res.Summary.Errors)
		}
		pt, err := st.Passes(ctx, id)
		if err != nil {
			return err
		}
		s.pass = float64(n) / pt.Wall.Seconds()

		if err := profile(r, "activity", func() (err error) {
			d, err = passAlone(act, fmt.Sprintf("overhead-activity-%d", r), spec, conc)
			return err
		}); err != nil {
			return err
		}
		s.activity = float64(n) / d.Seconds()
		samples = append(samples, s)
		fmt.Fprintf(os.Stderr, "round %d: bare %.0f, workflow %.0f, pass %.0f, activity %.0f calls/s (load %s)\n",
			r+1, s.bare, s.workflow, s.pass, s.activity, bench.Load())
	}

	med := func(f func(sample) float64) float64 {
		var xs []float64
		for _, s := range samples {
			xs = append(xs, f(s))
		}
		return bench.Median(xs)
	}
	bareM := med(func(s sample) float64 { return s.bare })
	fmt.Printf("### Overhead: %d calls (1 model × 1 seed × %d items × %d personas), simulator at zero latency, concurrency %d\n\n",
		n, items, personas, conc)
	fmt.Printf("%s · rounds %d (median)\n\n", bench.Machine(), rounds)
	fmt.Println("| what | calls/s | ratio to bare loop |")
	fmt.Println("|---|---:|---:|")
	row := func(name string, f func(sample) float64) {
		fmt.Printf("| %s | %.0f | %.2f |\n", name, med(f), med(func(s sample) float64 { return f(s) / s.bare }))
	}
	fmt.Printf("| bare go-openai loop, %d goroutines | %.0f | 1.00 |\n", conc, bareM)
	row("run: ExperimentWorkflow start → result (prepare, pass, export)", func(s sample) float64 { return s.workflow })
	row("run: its RunSeedPass (server's started → completed)", func(s sample) float64 { return s.pass })
	row("RunSeedPass alone (testsuite activity environment)", func(s sample) float64 { return s.activity })

	validated, decoded, err := renderCost(&spec)
	if err != nil {
		return err
	}
	fmt.Printf("\n| Spec.Render of every cell, one goroutine | µs per call |\n|---|---:|\n")
	fmt.Printf("| spec after Validate (templates compiled once) | %.1f |\n", validated)
	fmt.Printf("| spec decoded from JSON as RunSeedPass loads it, not validated | %.1f |\n", decoded)
	return nil
}

// renderCost times Spec.Render over every cell of a validated spec and of the same spec decoded from its JSON, as
// Activities.spec loads it for RunSeedPass.
func renderCost(spec *experiment.Spec) (validated, decoded float64, err error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return 0, 0, err
	}
	var dec experiment.Spec
	if err := json.Unmarshal(b, &dec); err != nil {
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
	decoded, err = each(&dec)
	return validated, decoded, err
}

func newActivities(st *bench.Stack) (*activities.Activities, error) {
	tok, err := llm.NewTokenizer()
	if err != nil {
		return nil, err
	}
	return &activities.Activities{
		Store:     st.Store,
		Models:    llm.NewRegistry(workerhost.NewHTTPClient(), func(string) string { return "" }, st.SimURL),
		Tokenizer: tok,
	}, nil
}

// passAlone runs PrepareRun, then times RunSeedPass of the spec's only pass in Temporal's test activity
// environment (no server involved).
func passAlone(a *activities.Activities, runID string, spec experiment.Spec, conc int) (time.Duration, error) {
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	raw, err := json.Marshal(spec)
	if err != nil {
		return 0, err
	}
	if _, err := env.ExecuteActivity(a.PrepareRun, activities.PrepareInput{RunID: runID, Spec: raw}); err != nil {
		return 0, err
	}
	passes := spec.Passes()
	if len(passes) != 1 {
		return 0, fmt.Errorf("%d passes, want 1", len(passes))
	}
	start := time.Now()
	v, err := env.ExecuteActivity(a.RunSeedPass, activities.PassInput{RunID: runID, Pass: passes[0],
		Limits: ratelimit.Limits{Concurrency: conc}})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	var res activities.PassResult
	if err := v.Get(&res); err != nil {
		return 0, err
	}
	if res.OK+res.Unparsed != passes[0].Len() {
		return 0, fmt.Errorf("pass alone: %+v", res)
	}
	return d, nil
}
