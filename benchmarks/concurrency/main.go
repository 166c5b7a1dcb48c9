// Command concurrency measures how a pass scales with max_concurrency when every model call waits (the simulator
// answers after a fixed latency, 20 ms by default): the pass's wall time, the speed-up over max_concurrency 1, and
// whether the cell columns of results.jsonl are identical to those of the max_concurrency 1 run, beside a bare
// go-openai loop with as many goroutines against the same simulator. It prints a markdown table.
//
//	go run ./benchmarks/concurrency            # 3 rounds per setting, median
//	go run ./benchmarks/concurrency --quick    # 1 round
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/sim"
)

func main() {
	quick := flag.Bool("quick", false, "one round per setting instead of --rounds")
	rounds := flag.Int("rounds", 3, "rounds per setting (the table shows the median)")
	items := flag.Int("items", 30, "items of the grid")
	personas := flag.Int("personas", 8, "personas of the grid")
	latency := flag.Duration("latency", 20*time.Millisecond, "simulator latency of every call")
	list := flag.String("max-concurrency", "1,2,4,8,16,64,256", "settings to measure, comma-separated")
	flag.Parse()
	if *quick {
		*rounds = 1
	}
	var settings []int
	for f := range strings.SplitSeq(*list, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			log.Fatalf("--max-concurrency: %q is not a positive integer", f)
		}
		settings = append(settings, v)
	}
	if err := run(settings, *rounds, *items, *personas, *latency); err != nil {
		log.Fatal(err)
	}
}

type result struct {
	pass, workflow, bare time.Duration // medians
	same                 bool
}

func run(settings []int, rounds, items, personas int, latency time.Duration) error {
	ctx := context.Background()
	st, err := bench.Start(sim.Config{Latency: sim.Latency{Fixed: latency}})
	if err != nil {
		return err
	}
	defer st.Close()
	base := bench.GridSpec(1, 1, items, personas)
	base.Run.MaxParallelPasses = 1
	n := base.NumCells()
	if err := base.Validate(); err != nil {
		return err
	}
	reqs, err := bench.BareRequests(&base)
	if err != nil {
		return err
	}
	oc := bench.BareClient(st.SimURL)

	warm := bench.GridSpec(1, 1, 2, 8)
	warm.Run.MaxConcurrency = 16
	if _, err := st.Run(ctx, "concurrency-warmup", warm); err != nil {
		return err
	}

	var want [][]string
	out := map[int]result{}
	loadStart := bench.Load()
	for _, mc := range settings {
		var passes, flows, bares []float64
		same := true
		for r := range rounds {
			spec := base
			spec.Run.MaxConcurrency = mc
			id := fmt.Sprintf("concurrency-%d-%d", mc, r)
			res, err := st.Run(ctx, id, spec)
			if err != nil {
				return err
			}
			if got := res.Summary.OK + res.Summary.Unparsed; got != n {
				return fmt.Errorf("%s: %d of %d cells answered: %v", id, got, n, res.Summary.Errors)
			}
			pt, err := st.Passes(ctx, id)
			if err != nil {
				return err
			}
			rows, err := bench.CellColumns(res.OutputDir)
			if err != nil {
				return err
			}
			if want == nil {
				want = rows
			}
			same = same && bench.SameRows(rows, want)
			d, err := bench.Bare(ctx, oc, reqs, min(mc, n))
			if err != nil {
				return err
			}
			bares = append(bares, d.Seconds())
			passes = append(passes, pt.Wall.Seconds())
			flows = append(flows, res.Summary.ElapsedSeconds)
			fmt.Fprintf(os.Stderr, "max_concurrency %d round %d: pass %.3fs, workflow %.3fs, bare loop %.3fs (load %s)\n",
				mc, r+1, pt.Wall.Seconds(), res.Summary.ElapsedSeconds, d.Seconds(), bench.Load())
		}
		out[mc] = result{
			pass:     time.Duration(bench.Median(passes) * float64(time.Second)),
			workflow: time.Duration(bench.Median(flows) * float64(time.Second)),
			bare:     time.Duration(bench.Median(bares) * float64(time.Second)),
			same:     same,
		}
	}

	ref := out[settings[0]]
	fmt.Printf("### Concurrency: %d calls (1 model × 1 seed × %d items × %d personas), simulator latency %v\n\n",
		n, items, personas, latency)
	fmt.Printf("%s · load at start %s · rounds %d (median)\n\n", bench.Machine(), loadStart, rounds)
	fmt.Printf("| max_concurrency | in flight (≤ cells) | pass (s) | ideal (s) | speed-up vs %d | speed-up / in flight | workflow elapsed (s) | bare go-openai loop (s) | bare speed-up | same cell columns as %d |\n",
		settings[0], settings[0])
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, mc := range settings {
		r := out[mc]
		eff := min(mc, n)
		ideal := time.Duration(math.Ceil(float64(n)/float64(eff))) * latency
		speed := ref.pass.Seconds() / r.pass.Seconds()
		same := "yes"
		if !r.same {
			same = "**no**"
		}
		fmt.Printf("| %d | %d | %.3f | %.3f | %.2f× | %.2f | %.3f | %.3f | %.2f× | %s |\n", mc, eff, r.pass.Seconds(),
			ideal.Seconds(), speed, speed/float64(eff)*float64(min(settings[0], n)), r.workflow.Seconds(),
			r.bare.Seconds(), ref.bare.Seconds()/r.bare.Seconds(), same)
	}
	return nil
}
