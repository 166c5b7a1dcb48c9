// Command rpm checks that a run holds a model's requests-per-minute limit: the simulator enforces the account's
// RPM (token bucket, burst 1.0, 429 + Retry-After beyond it) and answers after a fixed latency; the spec's model
// sets rpm to the same value and max_concurrency high enough not to bind. It prints the steady-state requests
// per minute read over sliding 60 s windows after any initial burst (see bench.SteadyRate), the 429s the
// simulator sent and the wall time, as a markdown table.
//
//	go run ./benchmarks/rpm            # RPM 600, latency 3s, ~4 minutes at the limit
//	go run ./benchmarks/rpm --quick    # RPM 600, latency 1s, ~70 s
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"time"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/sim"
)

func main() {
	quick := flag.Bool("quick", false, "latency 1s and 70 s of calls")
	rpm := flag.Int("rpm", 600, "the simulator's RPM and the model's rpm")
	latency := flag.Duration("latency", 3*time.Second, "simulator latency of every call")
	dur := flag.Duration("duration", 4*time.Minute, "how long the calls after any initial burst should last at the limit")
	conc := flag.Int("concurrency", 256, "max_concurrency of the run")
	timeline := flag.Duration("timeline", 0, "also print the admitted requests per bucket of this width to stderr (e.g. 5s)")
	flag.BoolVar(&burstCells, "burst-cells", false, "add one full bucket of cells for an initial burst")
	flag.Parse()
	timelineStep = *timeline
	if *quick {
		*latency, *dur = time.Second, 70*time.Second
	}
	if err := run(*rpm, *latency, *dur, *conc); err != nil {
		log.Fatal(err)
	}
}

var (
	timelineStep time.Duration
	burstCells   bool
)

func run(rpm int, latency, dur time.Duration, conc int) error {
	ctx := context.Background()
	st, err := bench.Start(sim.Config{Latency: sim.Latency{Fixed: latency}, RPM: rpm})
	if err != nil {
		return err
	}
	defer st.Close()

	// dur at the limit. Passes start with empty buckets (activities/pass.go), so there is no initial burst; with
	// --burst-cells the grid gets one bucket's worth of extra cells in case a full bucket drains first.
	cells := int(math.Ceil(float64(rpm) * dur.Minutes()))
	if burstCells {
		cells += int(sim.DefaultBurst * float64(rpm))
	}
	const personas = 40
	items := (cells + personas - 1) / personas
	spec := bench.GridSpec(1, 1, items, personas)
	spec.Models[0].RPM = rpm
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = conc, 1
	n := spec.NumCells()
	loadStart := bench.Load()
	fmt.Fprintf(os.Stderr, "rpm %d, latency %v, %d cells, max_concurrency %d (load %s)\n", rpm, latency, n, conc, loadStart)

	start := time.Now()
	res, err := st.Run(ctx, "rpm", spec)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	pt, err := st.Passes(ctx, "rpm")
	if err != nil {
		return err
	}
	c := st.Sim.Counters()
	ev := bench.Admitted(st.Sim.Requests(), func(sim.Request) float64 { return 1 })
	if timelineStep > 0 {
		for i, v := range bench.Timeline(ev, timelineStep) {
			fmt.Fprintf(os.Stderr, "t+%v\t%.0f\n", time.Duration(i)*timelineStep, v)
		}
	}
	s := bench.SteadyRate(ev, sim.DefaultBurst*float64(rpm), float64(rpm), time.Minute, time.Second)

	fmt.Printf("### RPM: simulator and model rpm %d, latency %v, max_concurrency %d, %d calls\n\n", rpm, latency, conc, n)
	fmt.Printf("%s · load at start %s\n\n", bench.Machine(), loadStart)
	fmt.Println("| configured RPM | steady-state RPM (median of windows) | min – max | vs configured | windows | windows start at | longest gap between requests | 429s | pass attempts | cells ok | wall (s) |")
	fmt.Println("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	burst := s.BurstNote()
	fmt.Printf("| %d | %.0f | %.0f – %.0f | %+.2f%% | %d | %s | %.2f s | %d | %d | %d | %.1f |\n",
		rpm, s.Median, s.Min, s.Max, 100*(s.Median/float64(rpm)-1), s.Windows, burst, s.MaxGap.Seconds(),
		c.RateLimited, pt.Attempts, res.Summary.OK+res.Summary.Unparsed, wall.Seconds())
	return nil
}
