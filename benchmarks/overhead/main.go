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
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
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
	if err := spec.Validate(); err != nil {
		return err
	}
	n := spec.NumCells()
	reqs, err := bareRequests(&spec)
	if err != nil {
		return err
	}
	oc := bareClient(st.SimURL)
	act, err := newActivities(st)
	if err != nil {
		return err
	}

	// Warm-up: connections, tokenizers, the worker's caches, the server's task queue.
	if _, err := bare(ctx, oc, reqs[:min(len(reqs), 200)], conc); err != nil {
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
			d, err = bare(ctx, oc, reqs, conc)
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
	return nil
}

// bareRequests are the requests the runner sends for every cell of spec: same model, messages, seed, max_tokens.
func bareRequests(spec *experiment.Spec) ([]openai.ChatCompletionRequest, error) {
	m := spec.Models[0]
	var out []openai.ChatCompletionRequest
	for i := range spec.NumCells() {
		c := spec.Cell(i)
		msgs, err := spec.Render(c, nil)
		if err != nil {
			return nil, err
		}
		var om []openai.ChatCompletionMessage
		for _, x := range msgs {
			om = append(om, openai.ChatCompletionMessage{Role: x.Role, Content: x.Content})
		}
		seed := int(spec.Seeds[c.Seed])
		out = append(out, openai.ChatCompletionRequest{Model: m.Name, Messages: om, Seed: &seed,
			MaxTokens: m.Params.MaxTokens})
	}
	return out, nil
}

func bareClient(baseURL string) *openai.Client {
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = baseURL
	cfg.HTTPClient = workerhost.NewHTTPClient()
	return openai.NewClientWithConfig(cfg)
}

// bare sends every request with conc goroutines and returns the wall time.
func bare(ctx context.Context, oc *openai.Client, reqs []openai.ChatCompletionRequest, conc int) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				resp, err := oc.CreateChatCompletion(ctx, reqs[i])
				if err == nil && len(resp.Choices) == 0 {
					err = fmt.Errorf("no choices")
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), firstErr
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
	if _, err := env.ExecuteActivity(a.PrepareRun, activities.RunInput{RunID: runID, Spec: spec}); err != nil {
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
