// Command tpm checks that a run holds a model's tokens-per-minute limit: the simulator enforces the account's TPM
// (token bucket, burst 1.0; a call costs its prompt tokens plus max_tokens, counted with tiktoken, as providers
// reserve them) with no RPM limit, and answers after a fixed latency; the spec's model sets tpm to the same value,
// its prompts are long (a long instruction) and max_concurrency is high enough not to bind. It prints the
// steady-state tokens per minute read over sliding 60 s windows after any initial burst (see bench.SteadyRate),
// the 429s the simulator sent and the wall time, as a markdown table.
//
//	go run ./benchmarks/tpm            # TPM 200000, latency 3s, ~4 minutes at the limit
//	go run ./benchmarks/tpm --quick    # latency 1s, ~70 s
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"strings"
	"time"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/sim"
)

func main() {
	quick := flag.Bool("quick", false, "latency 1s and 70 s of calls")
	tpm := flag.Int("tpm", 200000, "the simulator's TPM and the model's tpm")
	latency := flag.Duration("latency", 3*time.Second, "simulator latency of every call")
	dur := flag.Duration("duration", 4*time.Minute, "how long the calls after any initial burst should last at the limit")
	conc := flag.Int("concurrency", 256, "max_concurrency of the run")
	repeat := flag.Int("instruction-sentences", 90, "sentences of the instruction (about 11 tokens each)")
	maxTokens := flag.Int("max-tokens", 16, "max_tokens of the model")
	timeline := flag.Duration("timeline", 0, "also print the admitted tokens per bucket of this width to stderr (e.g. 5s)")
	flag.Parse()
	timelineStep = *timeline
	if *quick {
		*latency, *dur = time.Second, 70*time.Second
	}
	if err := run(*tpm, *latency, *dur, *conc, *repeat, *maxTokens); err != nil {
		log.Fatal(err)
	}
}

var timelineStep time.Duration

func run(tpm int, latency, dur time.Duration, conc, sentences, maxTokens int) error {
	ctx := context.Background()
	st, err := bench.Start(sim.Config{Latency: sim.Latency{Fixed: latency}, TPM: tpm})
	if err != nil {
		return err
	}
	defer st.Close()

	spec := bench.GridSpec(1, 1, 1, 1)
	spec.Models[0].TPM = tpm
	spec.Models[0].Params.MaxTokens = maxTokens
	spec.Questionnaire.Instruction = strings.Repeat("Read each statement carefully and answer it as honestly as you can. ", sentences)
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = conc, 1
	if err := spec.Validate(); err != nil {
		return err
	}
	// The cost of one call as the runner estimates it (its reservation) and as the simulator counts it.
	tok, err := llm.NewTokenizer()
	if err != nil {
		return err
	}
	msgs, err := spec.Render(spec.Cell(0), nil)
	if err != nil {
		return err
	}
	estimate := tok.CountMessages(spec.Models[0].Name, msgs) + maxTokens

	// dur at the limit, in calls of about estimate tokens. Passes start with empty buckets (activities/pass.go):
	// there is no initial burst.
	cells := int(math.Ceil(float64(tpm) * dur.Minutes() / float64(estimate)))
	const personas = 20
	grid := bench.GridSpec(1, 1, (cells+personas-1)/personas, personas)
	grid.Models, grid.Questionnaire.Instruction, grid.Run = spec.Models, spec.Questionnaire.Instruction, spec.Run
	n := grid.NumCells()
	loadStart := bench.Load()
	fmt.Fprintf(os.Stderr, "tpm %d, latency %v, %d cells of ~%d tokens, max_concurrency %d (load %s)\n",
		tpm, latency, n, estimate, conc, loadStart)

	start := time.Now()
	res, err := st.Run(ctx, "tpm", grid)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	pt, err := st.Passes(ctx, "tpm")
	if err != nil {
		return err
	}
	c := st.Sim.Counters()
	reqs := st.Sim.Requests()
	ev := bench.Admitted(reqs, func(r sim.Request) float64 { return float64(r.PromptTokens + maxTokens) })
	if timelineStep > 0 {
		for i, v := range bench.Timeline(ev, timelineStep) {
			fmt.Fprintf(os.Stderr, "t+%v\t%.0f\n", time.Duration(i)*timelineStep, v)
		}
	}
	s := bench.SteadyRate(ev, sim.DefaultBurst*float64(tpm), float64(tpm), time.Minute, time.Second)
	var simCost, usage float64
	for _, r := range reqs {
		if r.Status == 200 && r.Endpoint == "/v1/chat/completions" {
			simCost += float64(r.PromptTokens + maxTokens)
			usage += float64(r.PromptTokens + r.CompletionTokens)
		}
	}
	ok := float64(c.OK)

	fmt.Printf("### TPM: simulator and model tpm %d, no RPM limit, latency %v, max_concurrency %d, %d calls, max_tokens %d\n\n",
		tpm, latency, conc, n, maxTokens)
	fmt.Printf("%s · load at start %s\n\n", bench.Machine(), loadStart)
	fmt.Println("| configured TPM | steady-state TPM (median of windows) | min – max | vs configured | windows | windows start at | 429s | pass attempts | cells ok | wall (s) |")
	fmt.Println("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	burst := s.BurstNote()
	fmt.Printf("| %d | %.0f | %.0f – %.0f | %+.2f%% | %d | %s | %d | %d | %d | %.1f |\n\n",
		tpm, s.Median, s.Min, s.Max, 100*(s.Median/float64(tpm)-1), s.Windows, burst,
		c.RateLimited, pt.Attempts, res.Summary.OK+res.Summary.Unparsed, wall.Seconds())
	fmt.Println("| tokens per call | runner's reservation (estimate + max_tokens) | simulator's charge (prompt + max_tokens) | reported usage (prompt + completion) |")
	fmt.Println("|---|---:|---:|---:|")
	fmt.Printf("| mean | %d (cell 0) | %.1f | %.1f |\n", estimate, simCost/ok, usage/ok)
	return nil
}
