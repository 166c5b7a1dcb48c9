// Command faults runs the fault matrix: a grid of 300 cells (1 model × 2 seeds × 30 items × 5 personas,
// max_concurrency 8, max_parallel_passes 2, run.max_attempts 10, call_timeout 3s) against the simulator at
// 300 ms ± 200 ms with one kind of fault injected on every request, an endpoint on a closed port, a base_url
// without /v1 (every call a 404), a server that refuses every json_schema request alike, and a 100-cell pass in
// which one cell's request always gets a 500. For each case it prints how many cells were answered and failed,
// the error classes of the failed ones, the RunSeedPass attempts Temporal made, the cells whose call was sent
// again after an HTTP 200 with a usable body, and the wall time, as a markdown table; the calls the simulator got
// (requests) go to stderr.
//
//	go run ./benchmarks/faults                                # every case, one after the other
//	go run ./benchmarks/faults --cases 429,cell-500           # some of them
//	go run ./benchmarks/faults --latency 20ms --jitter 5ms    # a quick look
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
)

// faultCase is one row of the matrix.
type faultCase struct {
	name, desc string
	faults     sim.Faults
	// closedPort points the model at a port nobody listens on instead of the simulator.
	closedPort bool
	// failCell makes one cell of a 100-cell pass fail with a 500 on every request.
	failCell bool
	// noV1 writes the simulator's base_url without /v1, so every call is a 404.
	noV1 bool
	// refuseSchema asks for json_schema answers of a simulator that refuses every such request alike.
	refuseSchema bool
}

var allCases = []faultCase{
	{name: "429", desc: "30% 429 with Retry-After: 1", faults: sim.Faults{RateLimit: 0.3}},
	{name: "503", desc: "10% 503", faults: sim.Faults{ServerError503: 0.1}},
	{name: "drop", desc: "5% connections dropped", faults: sim.Faults{Drop: 0.05}},
	{name: "malformed", desc: "5% malformed bodies", faults: sim.Faults{Malformed: 0.05}},
	{name: "closed-port", desc: "base_url on a closed port", closedPort: true},
	{name: "no-v1", desc: "base_url without /v1 (404)", noV1: true},
	{name: "refused-schema", desc: "json_schema refused alike (400)", refuseSchema: true},
	{name: "cell-500", desc: "one cell always 500, 100-cell pass", failCell: true},
}

func main() {
	names := make([]string, len(allCases))
	for i, c := range allCases {
		names[i] = c.name
	}
	list := flag.String("cases", strings.Join(names, ","), "cases to run, comma-separated: "+strings.Join(names, ", "))
	latency := flag.Duration("latency", 300*time.Millisecond, "simulator latency of every call")
	jitter := flag.Duration("jitter", 200*time.Millisecond, "uniform ± jitter of the latency")
	seed := flag.Int64("fault-seed", 7, "seed of the simulator's fault sequence")
	timeout := flag.Duration("timeout", 10*time.Minute, "give a case up (and terminate its workflow) after this long")
	flag.Parse()
	cases, err := bench.Cases(*list, allCases, func(c faultCase) string { return c.name })
	if err != nil {
		log.Fatal(err)
	}
	if err := run(cases, sim.Latency{Fixed: *latency, Jitter: *jitter}, *seed, *timeout); err != nil {
		log.Fatal(err)
	}
}

// outcome is what one case measured.
type outcome struct {
	cells int
	bench.Rows
	attempts []int // Temporal attempts of each RunSeedPass activity, in schedule order
	resent   int   // cells sent again after a usable 200
	calls    int   // requests the simulator got
	wall     time.Duration
	err      error
}

func run(cases []faultCase, lat sim.Latency, seed int64, timeout time.Duration) error {
	st, err := bench.Start(sim.Config{}) // the stack's own simulator is unused: each case brings its own
	if err != nil {
		return err
	}
	defer st.Close()
	loadStart := bench.Load()
	out := make([]outcome, len(cases))
	for i, c := range cases {
		out[i] = runCase(st, c, lat, seed, timeout, fmt.Sprintf("faults-%s-%d", c.name, time.Now().UnixNano()))
		o := out[i]
		fmt.Fprintf(os.Stderr, "%s: %d ok, %d failed %v, pass attempts %v, %d re-sent after a 200, %d calls, %.1fs (err %v, load %s)\n",
			c.name, o.OK, o.Failed, o.Classes, o.attempts, o.resent, o.calls, o.wall.Seconds(), o.err, bench.Load())
	}

	fmt.Printf("### Faults: 1 model × 2 seeds × 30 items × 5 personas = 300 cells (the last case: one pass of 100), "+
		"max_concurrency 8, max_parallel_passes 2, run.max_attempts 10, call_timeout 3s, simulator latency %v ± %v\n\n",
		lat.Fixed, lat.Jitter)
	fmt.Printf("%s · load at start %s · fault seed %d\n\n", bench.Machine(), loadStart, seed)
	fmt.Println("| fault injected | cells ok / failed | error classes of failed cells | RunSeedPass attempts (max 10) | cells re-sent after a 200 | wall (s) |")
	fmt.Println("|---|---:|---|---|---:|---:|")
	for i, c := range cases {
		o := out[i]
		okFailed := fmt.Sprintf("%d / %d", o.OK, o.Failed)
		if o.err != nil {
			okFailed += fmt.Sprintf(" (run: %v)", o.err)
		}
		attempts := "–"
		if len(o.attempts) > 0 {
			parts := make([]string, len(o.attempts))
			for j, a := range o.attempts {
				parts[j] = fmt.Sprint(a)
			}
			attempts = strings.Join(parts, " + ")
		}
		fmt.Printf("| %s | %s | %s | %s | %d | %.1f |\n", c.desc, okFailed, bench.Classes(o.Classes), attempts, o.resent, o.wall.Seconds())
	}
	return nil
}

// runCase serves a simulator for the case, runs its grid under workflow id id and reads what happened.
func runCase(st *bench.Stack, c faultCase, lat sim.Latency, seed int64, timeout time.Duration, id string) outcome {
	spec := bench.GridSpec(1, 2, 30, 5)
	if c.failCell {
		spec = bench.GridSpec(1, 1, 20, 5)
	}
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses, spec.Run.MaxAttempts = 8, 2, 10
	spec.Run.CallTimeout = experiment.Duration(3 * time.Second)
	cfg := sim.Config{Latency: lat, Faults: c.faults, FaultSeed: seed, RefuseJSONSchema: c.refuseSchema}
	if c.refuseSchema {
		spec.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerJSONSchema}
	}
	if c.failCell {
		cfg.FailCells = []string{spec.CellID(spec.Cell(37))}
	}
	s, err := sim.New(cfg)
	if err != nil {
		return outcome{err: err}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return outcome{err: err}
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	spec.Models[0].BaseURL = "http://" + ln.Addr().String() + "/v1"
	if c.noV1 {
		spec.Models[0].BaseURL = "http://" + ln.Addr().String()
	}
	if c.closedPort {
		port, err := closedPort()
		if err != nil {
			return outcome{err: err}
		}
		spec.Models[0].BaseURL = fmt.Sprintf("http://127.0.0.1:%d/v1", port)
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	res, runErr := st.Run(ctx, id, spec)
	o := outcome{cells: spec.NumCells(), wall: time.Since(start), err: runErr}
	bg, cancelBg := context.WithTimeout(context.Background(), time.Minute)
	defer cancelBg()
	if runErr != nil {
		// A run given up here must not go on sending calls into the next case.
		_ = st.Client.TerminateWorkflow(bg, id, "", "benchmark case timed out")
	}
	o.attempts, err = bench.PassAttempts(bg, st, id)
	if err != nil && o.err == nil {
		o.err = err
	}
	o.resent = len(sim.RequestedAfterAnswer(s.Requests()))
	o.calls = len(s.Requests())
	if runErr == nil {
		rows, err := bench.CountRows(filepath.Join(res.OutputDir, results.JSONLFile))
		o.Rows = rows
		if err != nil && o.err == nil {
			o.err = err
		}
	}
	return o
}

// closedPort returns a loopback port nothing listens on (it was free a moment ago).
func closedPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}
