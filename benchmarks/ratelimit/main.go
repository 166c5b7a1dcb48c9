// Command ratelimit measures how a run brakes for 429s, side by side in one run, with the response cache off: a
// provider that sheds calls at random (20 % answered 429 with Retry-After 1 s; 5 % with Retry-After 20 s), and
// an account whose RPM limit is really used up (the simulator's own rpm 600, undeclared in the spec, then
// declared). Each case has its own simulator and runs, one after the other:
//
//   - floor: the wall time of an ideal runner on the same refusal rate, computed without a server (floorWall): what
//     no runner that honours each call's Retry-After goes below;
//   - loop: a plain loop of max_concurrency goroutines that sends the same requests and re-sends only a 429'd one,
//     after its Retry-After (the reference);
//   - old: the rule before this benchmark (every 429 paused every call of the model and halved the concurrency),
//     when --old names a binary of this command built from a tree that has it (see docs/performance.md);
//   - silico: the run as built;
//   - clean: the run against the same simulator without faults (the shed cases), or with the rpm declared in the
//     spec (the rpm case).
//
// It prints wall time, requests and 429s the simulator got, cells ok, and for the rpm case the steady-state
// requests per minute (bench.SteadyRate), as a markdown table.
//
//	go run ./benchmarks/ratelimit                                   # every case, without the old rule
//	go run ./benchmarks/ratelimit --old /tmp/ratelimit-old          # with it
//	go run ./benchmarks/ratelimit --cases shed20 --only silico      # one row
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/sim"
)

// benchCase is one case of the table.
type benchCase struct {
	name, desc string
	items      int
	personas   int
	faults     sim.Faults
	retryAfter time.Duration // of the injected 429s
	rpm        int           // the simulator's own limit
}

var allCases = []benchCase{
	{name: "shed20", desc: "20 % 429, Retry-After 1 s", items: 50, personas: 20, faults: sim.Faults{RateLimit: 0.2}, retryAfter: time.Second},
	{name: "long5", desc: "5 % 429, Retry-After 20 s", items: 50, personas: 20, faults: sim.Faults{RateLimit: 0.05}, retryAfter: 20 * time.Second},
	// 2,400 cells: a bucket of 600 at once, then 3 minutes at 600/min.
	{name: "rpm600", desc: "simulator rpm 600", items: 60, personas: 40, rpm: 600},
}

// result is one row, as the subprocess of --old prints it in JSON.
type result struct {
	Row      string  `json:"row"`
	Wall     float64 `json:"wall_s"`
	Requests int     `json:"requests"`
	Limited  int64   `json:"limited"`
	OK       int     `json:"ok"`
	Cells    int     `json:"cells"`
	Steady   float64 `json:"steady_rpm"`       // median of 60 s windows, rpm case only
	Spread   string  `json:"spread,omitempty"` // the floor row: its 10th and 90th percentiles
	Err      string  `json:"err,omitempty"`
}

func main() {
	names := make([]string, len(allCases))
	for i, c := range allCases {
		names[i] = c.name
	}
	list := flag.String("cases", strings.Join(names, ","), "cases to run, comma-separated: "+strings.Join(names, ", "))
	only := flag.String("only", "", "run only these rows, comma-separated: floor, loop, old, silico, clean")
	old := flag.String("old", "", "a binary of this command built with the old rule, run for the old row")
	asJSON := flag.Bool("json", false, "print the rows as JSON lines instead of a table (how --old is read)")
	latency := flag.Duration("latency", 50*time.Millisecond, "simulator latency of every call")
	conc := flag.Int("concurrency", 16, "max_concurrency, and the loop's goroutines")
	flag.Parse()
	cases, err := bench.Cases(*list, allCases, func(c benchCase) string { return c.name })
	if err != nil {
		log.Fatal(err)
	}
	rows := []string{"floor", "loop", "old", "silico", "clean"}
	if *only != "" {
		rows = strings.Split(*only, ",")
	}
	if *old == "" {
		rows = slices.DeleteFunc(rows, func(r string) bool { return r == "old" })
	}
	if err := run(cases, rows, *old, *asJSON, *latency, *conc); err != nil {
		log.Fatal(err)
	}
}

func run(cases []benchCase, rows []string, old string, asJSON bool, latency time.Duration, conc int) error {
	var st *bench.Stack
	if slices.Contains(rows, "silico") || slices.Contains(rows, "clean") {
		var err error
		if st, err = bench.Start(sim.Config{}); err != nil { // each case brings its own simulator
			return err
		}
		defer st.Close()
	}
	loadStart := bench.Load()
	out := make([][]result, len(cases))
	for i, c := range cases {
		for _, row := range rows {
			var r result
			switch row {
			case "loop":
				r = runLoop(c, latency, conc)
			case "old":
				r = runOld(old, c, latency, conc)
			case "silico", "clean":
				r = runSilico(st, c, row, latency, conc)
			case "floor":
				if c.faults.RateLimit == 0 {
					continue // a real limit: no random refusals to draw
				}
				r = runFloor(c, latency, conc)
			default:
				return fmt.Errorf("--only: unknown row %q", row)
			}
			r.Row = row
			out[i] = append(out[i], r)
			fmt.Fprintf(os.Stderr, "%s %s: %.1fs, %d requests, %d 429s, %d/%d ok, steady %.0f rpm (err %q, load %s)\n",
				c.name, row, r.Wall, r.Requests, r.Limited, r.OK, r.Cells, r.Steady, r.Err, bench.Load())
			if asJSON {
				b, _ := json.Marshal(r)
				fmt.Println(string(b))
			}
		}
	}
	if asJSON {
		return nil
	}
	fmt.Printf("### 429s: %v latency, max_concurrency %d, max_tokens 8, response cache off\n\n", latency, conc)
	fmt.Printf("%s · load at start %s\n\n", bench.Machine(), loadStart)
	fmt.Println("| case | row | wall (s) | vs loop | vs clean | requests | 429s | cells ok | steady RPM |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for i, c := range cases {
		ref := func(name string) float64 {
			for _, r := range out[i] {
				if r.Row == name && r.Err == "" {
					return r.Wall
				}
			}
			return 0
		}
		loop, clean := ref("loop"), ref("clean")
		for _, r := range out[i] {
			ratio := func(d float64) string {
				if d == 0 || r.Err != "" {
					return "–"
				}
				return fmt.Sprintf("%.2f×", r.Wall/d)
			}
			steady := "–"
			if c.rpm > 0 {
				steady = fmt.Sprintf("%.0f", r.Steady)
			}
			ok := fmt.Sprintf("%d / %d", r.OK, r.Cells)
			if r.Err != "" {
				ok += " (" + r.Err + ")"
			}
			requests, limited := strconv.Itoa(r.Requests), strconv.FormatInt(r.Limited, 10)
			if r.Row == "floor" {
				requests, limited = "–", "–" // computed, not sent
			}
			fmt.Printf("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s |\n", c.desc, rowName(c, r.Row, r.Spread), r.Wall,
				ratio(loop), ratio(clean), requests, limited, ok, steady)
		}
	}
	return nil
}

// rowName says what a row ran for case c.
func rowName(c benchCase, row, spread string) string {
	switch {
	case row == "floor":
		return "floor: an ideal runner, computed (median of 2,000 draws; 10th–90th percentile " + spread + ")"
	case row == "loop":
		return "plain retrying loop"
	case row == "old":
		return "old rule"
	case row == "clean" && c.rpm > 0:
		return "silico, rpm declared"
	case row == "clean":
		return "silico, no faults"
	case c.rpm > 0:
		return "silico, rpm undeclared"
	}
	return "silico"
}

// simFor is the simulator of case c for row.
func simFor(c benchCase, row string, latency time.Duration) (*sim.Server, string, func(), error) {
	cfg := sim.Config{Latency: sim.Latency{Fixed: latency}, FaultSeed: 7, RPM: c.rpm,
		Faults: c.faults, RateLimitRetryAfter: c.retryAfter}
	if row == "clean" {
		cfg.Faults = sim.Faults{}
	}
	s, err := sim.New(cfg)
	if err != nil {
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	stop := func() {
		_ = srv.Close()
		<-served
	}
	return s, "http://" + ln.Addr().String() + "/v1", stop, nil
}

// specFor is case c's grid; the clean row of the rpm case declares the rpm.
func specFor(c benchCase, row string, conc int) experiment.Spec {
	spec := bench.GridSpec(1, 1, c.items, c.personas)
	spec.Models[0].Params.MaxTokens = 8
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = conc, 1
	if row == "clean" && c.rpm > 0 {
		spec.Models[0].RPM = c.rpm
	}
	return spec
}

// fill completes r from the simulator's log.
func fill(r *result, c benchCase, s *sim.Server) {
	reqs := s.Requests()
	r.Requests = len(reqs)
	r.Limited = s.Counters().RateLimited
	if c.rpm > 0 {
		ev := bench.Admitted(reqs, func(sim.Request) float64 { return 1 })
		r.Steady = bench.SteadyRate(ev, sim.DefaultBurst*float64(c.rpm), float64(c.rpm), time.Minute, time.Second).Median
	}
}

func runSilico(st *bench.Stack, c benchCase, row string, latency time.Duration, conc int) result {
	s, url, stop, err := simFor(c, row, latency)
	if err != nil {
		return result{Err: err.Error()}
	}
	defer stop()
	spec := specFor(c, row, conc)
	spec.Models[0].BaseURL = url
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	id := fmt.Sprintf("ratelimit-%s-%s-%d", c.name, row, time.Now().UnixNano())
	start := time.Now()
	res, err := st.Run(ctx, id, spec)
	r := result{Wall: time.Since(start).Seconds(), Cells: spec.NumCells()}
	if err != nil {
		r.Err = err.Error()
		_ = st.Client.TerminateWorkflow(context.Background(), id, "", "benchmark case failed")
	}
	r.OK = res.Summary.OK + res.Summary.Unparsed
	fill(&r, c, s)
	return r
}

// runLoop sends the case's requests from conc goroutines, each re-sending a 429'd request after the Retry-After
// it named (retry-after-ms when given) and nothing else.
func runLoop(c benchCase, latency time.Duration, conc int) result {
	s, url, stop, err := simFor(c, "loop", latency)
	if err != nil {
		return result{Err: err.Error()}
	}
	defer stop()
	spec := specFor(c, "loop", conc)
	if err := spec.Validate(); err != nil {
		return result{Err: err.Error()}
	}
	reqs, err := bench.BareRequests(&spec)
	if err != nil {
		return result{Err: err.Error()}
	}
	bodies := make([][]byte, len(reqs))
	for i, q := range reqs {
		if bodies[i], err = json.Marshal(q); err != nil {
			return result{Err: err.Error()}
		}
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	var next atomic.Int64
	var ok atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				for {
					wait, err := post(hc, url+"/chat/completions", bodies[i])
					if err != nil {
						mu.Lock()
						firstErr = cmpOr(firstErr, err)
						mu.Unlock()
						break
					}
					if wait < 0 {
						ok.Add(1)
						break
					}
					time.Sleep(wait)
				}
			}
		})
	}
	wg.Wait()
	r := result{Wall: time.Since(start).Seconds(), Cells: len(bodies), OK: int(ok.Load())}
	if firstErr != nil {
		r.Err = firstErr.Error()
	}
	fill(&r, c, s)
	return r
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// post sends one request: -1 when answered, the wait it asked for when refused with 429, an error otherwise.
func post(hc *http.Client, url string, body []byte) (time.Duration, error) {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return -1, nil
	case http.StatusTooManyRequests:
		if ms, err := strconv.ParseFloat(resp.Header.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond)), nil
		}
		if s, err := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); err == nil && s > 0 {
			return time.Duration(s * float64(time.Second)), nil
		}
		return time.Second, nil
	}
	return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
}

// runOld runs the silico row of case c with the binary old, which prints it as a JSON line.
func runOld(old string, c benchCase, latency time.Duration, conc int) result {
	cmd := exec.Command(old, "--json", "--only", "silico", "--cases", c.name,
		"--latency", latency.String(), "--concurrency", strconv.Itoa(conc))
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return result{Err: fmt.Sprintf("%s: %v", old, err)}
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	var r result
	if err := json.Unmarshal(lines[len(lines)-1], &r); err != nil {
		return result{Err: fmt.Sprintf("%s: %v", old, err)}
	}
	if r.Row != "silico" {
		return result{Err: fmt.Sprintf("%s: %v", old, errors.New("no silico row"))}
	}
	return r
}

// runFloor is the floor row of shed case c: floorWall's median over 2,000 draws.
func runFloor(c benchCase, latency time.Duration, conc int) result {
	fc := floorCase{n: c.items * c.personas, conc: conc, latency: latency, p: c.faults.RateLimit, retryAfter: c.retryAfter}
	p10, p50, p90 := floorQuantiles(fc, 2000, 1)
	clean := fc
	clean.p = 0
	_, c50, _ := floorQuantiles(clean, 1, 1)
	return result{Wall: p50.Seconds(), Cells: fc.n, OK: fc.n,
		Spread: fmt.Sprintf("%.1f–%.1f s; %.2f× its own clean floor of %.2f s", p10.Seconds(), p90.Seconds(),
			p50.Seconds()/c50.Seconds(), c50.Seconds())}
}
