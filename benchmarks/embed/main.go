// Command embed measures what micro-batching buys an embeddings run: two embed specs run side by side in one
// process against the simulator, at the same RPM and latency, one packing up to --batch texts per request, the
// other one text per request. Each spec's model is limited to --rpm (the simulator enforces the same limit),
// and its pass times come from Temporal's history. It prints inputs/s of both, their ratio, and the fraction of
// the packed run's bound it reaches, as a markdown table:
//
//	bound = batch × min(rpm/60, max_concurrency/latency) inputs/s
//
// the most a pass can send when every request is full and either the rpm or the latency with max_concurrency
// requests in flight binds.
//
//	go run ./benchmarks/embed            # rpm 3000, latency 200ms, ~30 s per pass
//	go run ./benchmarks/embed --quick    # ~10 s per pass
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"sync"
	"time"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/wire"
)

func main() {
	quick := flag.Bool("quick", false, "about 10 s per pass instead of 30 s")
	rpm := flag.Int("rpm", 3000, "the simulator's RPM and each model's rpm")
	latency := flag.Duration("latency", 200*time.Millisecond, "simulator latency of every request")
	batch := flag.Int("batch", 64, "max_inputs_per_request of the packed run")
	conc := flag.Int("concurrency", 16, "max_concurrency of both runs")
	secs := flag.Float64("seconds", 30, "how long each pass should take at its bound")
	flag.Parse()
	if *quick {
		*secs = 10
	}
	if err := run(*rpm, *latency, *batch, *conc, *secs); err != nil {
		log.Fatal(err)
	}
}

// embedSpec embeds the rendered prompts of a grid of about n texts (items × 40 personas) with one model.
func embedSpec(model string, n, batch, rpm, conc int) experiment.Spec {
	const personas = 40
	s := bench.GridSpec(1, 1, max(1, n/personas), personas)
	s.Name = "embed bench " + model
	s.Kind = experiment.KindEmbed
	s.Models[0].Name, s.Models[0].RPM = model, rpm
	s.Embed = &experiment.EmbedSettings{Texts: experiment.EmbedPrompts, MaxInputsPerRequest: batch, Dimensions: 16}
	s.Run.MaxConcurrency, s.Run.MaxParallelPasses = conc, 1
	s.Run.Cache = experiment.CacheOff
	s.ApplyDefaults()
	return s
}

type result struct {
	name      string
	batch     int
	texts     int
	requests  int
	passWall  time.Duration
	inputsSec float64
	bound     float64
	ok        int
}

func run(rpm int, latency time.Duration, batch, conc int, secs float64) error {
	ctx := context.Background()
	st, err := bench.Start(sim.Config{Latency: sim.Latency{Fixed: latency}, RPM: rpm})
	if err != nil {
		return err
	}
	defer st.Close()
	reqPerSec := min(float64(rpm)/60, float64(conc)/latency.Seconds())
	runs := []*result{
		{name: "packed", batch: batch, texts: int(secs * reqPerSec * float64(batch))},
		{name: "unpacked", batch: 1, texts: int(secs * reqPerSec)},
	}
	loadStart := bench.Load()
	fmt.Fprintf(os.Stderr, "rpm %d, latency %v, max_concurrency %d: packed %d texts, unpacked %d texts (load %s)\n",
		rpm, latency, conc, runs[0].texts, runs[1].texts, loadStart)
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, r := range runs {
		spec := embedSpec("embed-"+r.name, r.texts, r.batch, rpm, conc)
		r.texts = spec.NumCells()
		r.bound = float64(r.batch) * reqPerSec
		wg.Go(func() {
			var res wire.Result
			res, errs[i] = st.Run(ctx, "embed-"+r.name, spec)
			if errs[i] != nil {
				return
			}
			pt, err := st.Passes(ctx, "embed-"+r.name)
			if err != nil {
				errs[i] = err
				return
			}
			r.passWall, r.ok = pt.Wall, res.Summary.OK
			r.inputsSec = float64(r.texts) / pt.Wall.Seconds()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, q := range st.Sim.Requests() {
		for _, r := range runs {
			if q.Model == "embed-"+r.name && q.Answered() {
				r.requests++
			}
		}
	}
	c := st.Sim.Counters()
	fmt.Printf("### Embeddings: packed vs unpacked, rpm %d, latency %v, max_concurrency %d, side by side\n\n", rpm, latency, conc)
	fmt.Printf("%s · load at start %s · 429s: %d\n\n", bench.Machine(), loadStart, c.RateLimited)
	fmt.Println("| run | texts per request | texts | requests | pass wall (s) | inputs/s | bound (inputs/s) | fraction of bound | vectors ok |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range runs {
		fmt.Printf("| %s | %d | %d | %d | %.1f | %.0f | %.0f | %.2f | %d |\n", r.name, r.batch, r.texts, r.requests,
			r.passWall.Seconds(), r.inputsSec, r.bound, r.inputsSec/r.bound, r.ok)
	}
	fmt.Printf("\npacked / unpacked: %.1f× the inputs/s\n", runs[0].inputsSec/math.Max(runs[1].inputsSec, 1e-9))
	return nil
}
