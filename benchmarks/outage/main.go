// Command outage runs a grid through provider outages: 300 cells (1 model × 2 seeds × 30 items × 5 personas,
// max_concurrency 8, max_parallel_passes 2, run.max_attempts 10 or --max-attempts, call_timeout 3s) on provider openai, whose
// base_url is the simulator (50 ms ± 30 ms) served by sim.Serve, with one outage per case starting --after (500 ms:
// the grid takes about a second without an outage) past the first call: 503s, nginx 502 pages and refused connections for 20 s, 90 s and 5 min, and a 60 s wall of 429s
// without Retry-After. For each case it prints the cells answered and failed (with the error classes), the model
// requests the simulator saw in all and during the outage, the most tries one cell was charged (results.jsonl's
// attempts, and the simulator's requests per cell), the RunSeedPass attempts Temporal made, the wall time and the
// time from the outage's end to the run's, as a markdown table.
//
//	go run ./benchmarks/outage                                     # every case, one after the other
//	go run ./benchmarks/outage --cases none,503-20s,429-60s        # some of them
//	go run ./benchmarks/outage --scale 0.1                         # every outage a tenth as long: a quick look
//	go run ./benchmarks/outage --cases 503-20s --max-attempts 1    # one try per cell: the outage must fail none
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
)

// outageCase is one row of the table; a zero outage.For is the case without an outage.
type outageCase struct {
	name, desc string
	outage     sim.Outage
}

func cases() []outageCase {
	out := []outageCase{{name: "none", desc: "no outage"}}
	for _, k := range []struct {
		name, desc string
		kind       sim.OutageKind
	}{{"503", "503 JSON", sim.OutageStatus}, {"html", "502 HTML (nginx)", sim.OutageHTML}, {"refuse", "refused connections", sim.OutageRefuse}} {
		for _, d := range []struct {
			name string
			d    time.Duration
		}{{"20s", 20 * time.Second}, {"90s", 90 * time.Second}, {"5m", 5 * time.Minute}} {
			out = append(out, outageCase{name: k.name + "-" + d.name, desc: k.desc, outage: sim.Outage{For: d.d, Kind: k.kind}})
		}
	}
	return append(out, outageCase{name: "429-60s", desc: "429 wall, no Retry-After",
		outage: sim.Outage{For: time.Minute, Status: 429}})
}

func main() {
	all := cases()
	names := make([]string, len(all))
	for i, c := range all {
		names[i] = c.name
	}
	list := flag.String("cases", strings.Join(names, ","), "cases to run, comma-separated: "+strings.Join(names, ", "))
	after := flag.Duration("after", 500*time.Millisecond, "start of each outage, from the simulator's first model call "+
		"(the grid takes about a second without one: a later start would miss it)")
	scale := flag.Float64("scale", 1, "multiply every outage's length by this (0.1: a 90s outage lasts 9s)")
	latency := flag.Duration("latency", 50*time.Millisecond, "simulator latency of every call")
	jitter := flag.Duration("jitter", 30*time.Millisecond, "uniform ± jitter of the latency")
	timeout := flag.Duration("timeout", 20*time.Minute, "give a case up (and terminate its workflow) after this long")
	maxAttempts := flag.Int("max-attempts", 10, "run.max_attempts of the grid")
	flag.Parse()
	if *scale <= 0 || *after < 0 {
		log.Fatalf("--scale %v, --after %v: want a positive scale and a start >= 0", *scale, *after)
	}
	run, err := bench.Cases(*list, all, func(c outageCase) string { return c.name })
	if err != nil {
		log.Fatal(err)
	}
	for i := range run {
		run[i].outage.After = *after
		run[i].outage.For = time.Duration(float64(run[i].outage.For) * *scale)
	}
	if err := runAll(run, sim.Latency{Fixed: *latency, Jitter: *jitter}, *scale, *maxAttempts, *timeout); err != nil {
		log.Fatal(err)
	}
}

// outcome is what one case measured.
type outcome struct {
	bench.Rows
	// requests are the model calls the simulator saw; inOutage those answered with the outage (none of a refuse
	// outage reach it: the kernel refuses them).
	requests, inOutage int
	// maxPerCell is the most requests the simulator saw for one cell (Rows.MaxAttempts: the largest attempts of
	// a row of results.jsonl).
	maxPerCell   int
	passAttempts []int
	wall         time.Duration
	// afterOutage is from the outage's end to the run's end (negative: the run ended first); valid when hasOutage.
	afterOutage time.Duration
	hasOutage   bool
	err         error
}

func runAll(cases []outageCase, lat sim.Latency, scale float64, maxAttempts int, timeout time.Duration) error {
	st, err := bench.Start(sim.Config{}) // the stack's own simulator is unused: each case brings its own
	if err != nil {
		return err
	}
	defer st.Close()
	loadStart := bench.Load()
	out := make([]outcome, len(cases))
	for i, c := range cases {
		out[i] = runCase(st, c, lat, maxAttempts, timeout, fmt.Sprintf("outage-%s-%d", c.name, time.Now().UnixNano()))
		o := out[i]
		fmt.Fprintf(os.Stderr, "%s: %d ok, %d failed %v, %d requests (%d in the outage), max attempts %d / %d per cell, "+
			"pass attempts %v, %.1fs, %.1fs after the outage (err %v, load %s)\n", c.name, o.OK, o.Failed, o.Classes,
			o.requests, o.inOutage, o.MaxAttempts, o.maxPerCell, o.passAttempts, o.wall.Seconds(),
			o.afterOutage.Seconds(), o.err, bench.Load())
	}

	fmt.Printf("### Outages: 1 model × 2 seeds × 30 items × 5 personas = 300 cells, max_concurrency 8, "+
		"max_parallel_passes 2, run.max_attempts %d, call_timeout 3s, provider openai on the simulator at %v ± %v; "+
		"each outage starts %v after the first call", maxAttempts, lat.Fixed, lat.Jitter, cases[0].outage.After)
	if scale != 1 {
		fmt.Printf("; outage lengths × %v (the names say the unscaled length)", scale)
	}
	fmt.Printf("\n\n%s · load at start %s\n\n", bench.Machine(), loadStart)
	fmt.Println("| outage | cells ok / failed | error classes of failed cells | requests: all / in the outage | " +
		"most tries of one cell: attempts / requests | RunSeedPass attempts | wall (s) | outage end → run end (s) |")
	fmt.Println("|---|---:|---|---:|---:|---|---:|---:|")
	for i, c := range cases {
		o := out[i]
		name := c.desc
		if c.outage.For > 0 {
			name = fmt.Sprintf("%s, %v", c.desc, c.outage.For)
		}
		okFailed := fmt.Sprintf("%d / %d", o.OK, o.Failed)
		if o.err != nil {
			okFailed += fmt.Sprintf(" (run: %v)", o.err)
		}
		inOutage := fmt.Sprint(o.inOutage)
		switch {
		case c.outage.For == 0:
			inOutage = "–"
		case c.outage.Kind == sim.OutageRefuse:
			inOutage = "refused (unseen)"
		}
		attempts := "–"
		if len(o.passAttempts) > 0 {
			parts := make([]string, len(o.passAttempts))
			for j, a := range o.passAttempts {
				parts[j] = fmt.Sprint(a)
			}
			attempts = strings.Join(parts, " + ")
		}
		after := "–"
		if o.hasOutage {
			after = fmt.Sprintf("%.1f", o.afterOutage.Seconds())
		}
		fmt.Printf("| %s | %s | %s | %d / %s | %d / %d | %s | %.1f | %s |\n", name, okFailed, bench.Classes(o.Classes),
			o.requests, inOutage, o.MaxAttempts, o.maxPerCell, attempts, o.wall.Seconds(), after)
	}
	return nil
}

// runCase serves a simulator with the case's outage, runs the grid under workflow id id and reads what happened.
func runCase(st *bench.Stack, c outageCase, lat sim.Latency, maxAttempts int, timeout time.Duration, id string) outcome {
	spec := bench.GridSpec(1, 2, 30, 5)
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses, spec.Run.MaxAttempts = 8, 2, maxAttempts
	spec.Run.CallTimeout = experiment.Duration(3 * time.Second)
	cfg := sim.Config{Latency: lat}
	if c.outage.For > 0 {
		cfg.Outages = []sim.Outage{c.outage}
	}
	s, err := sim.New(cfg)
	if err != nil {
		return outcome{err: err}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return outcome{err: err}
	}
	sv, err := sim.Serve(s, ln)
	if err != nil {
		_ = ln.Close()
		return outcome{err: err}
	}
	defer func() { _ = sv.Close() }()
	spec.Models[0].Provider, spec.Models[0].BaseURL = experiment.ProviderOpenAI, sv.URL()

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	res, runErr := st.Run(ctx, id, spec)
	end := time.Now()
	o := outcome{wall: end.Sub(start), err: runErr}
	bg, cancelBg := context.WithTimeout(context.Background(), time.Minute)
	defer cancelBg()
	if runErr != nil {
		// A run given up here must not go on sending calls into the next case.
		_ = st.Client.TerminateWorkflow(bg, id, "", "benchmark case timed out")
	}
	o.passAttempts, err = bench.PassAttempts(bg, st, id)
	if err != nil && o.err == nil {
		o.err = err
	}
	if first, ok := s.FirstCall(); ok && c.outage.For > 0 {
		o.hasOutage = true
		o.afterOutage = end.Sub(first.Add(c.outage.After + c.outage.For))
	}
	perCell := map[string]int{}
	for _, r := range s.Requests() {
		if r.Endpoint != "/v1/chat/completions" {
			continue
		}
		o.requests++
		if r.Fault == sim.FaultOutage {
			o.inOutage++
		}
		perCell[r.Cell]++
		o.maxPerCell = max(o.maxPerCell, perCell[r.Cell])
	}
	if err := sv.Err(); err != nil && o.err == nil {
		o.err = err
	}
	if runErr == nil {
		rows, err := bench.CountRows(filepath.Join(res.OutputDir, results.JSONLFile))
		o.Rows = rows
		if err != nil && o.err == nil {
			o.err = err
		}
	}
	return o
}
