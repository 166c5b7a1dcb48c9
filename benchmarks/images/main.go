// Command images checks that fetching pictures does not slow a run below its model's RPM when the pass has
// enough download slots, and shows how it drops when it has too few. Every item shows a picture served by a
// local server that answers after a fixed latency (100 ms); the simulator enforces the RPM and the spec's model
// sets the same rpm. Each case is one run: its steady-state requests per minute are read over sliding 60 s
// windows (bench.SteadyRate). "Fetch cache" says whether cells share pictures: with it, each item's picture is
// shown to every persona (one download per item, the worker's LRU serves the rest); without it, every cell has a
// picture of its own (a download per cell). It prints a markdown table.
//
//	go run ./benchmarks/images            # RPM 1000, model latency 1s, ~75 s of calls per case
//	go run ./benchmarks/images --quick    # ~40 s per case (windows of 30 s)
//
// The sizing rule the table checks: max_concurrent_downloads ≥ ⌈RPM/60 × pictures per cell × download latency⌉
// (here ⌈1000/60 × 1 × 0.1⌉ = 2 without the fetch cache).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/sim"
)

func main() {
	quick := flag.Bool("quick", false, "40 s of calls per case, 30 s windows")
	rpm := flag.Int("rpm", 1000, "the simulator's RPM and the model's rpm")
	latency := flag.Duration("latency", time.Second, "simulator latency of every call")
	fetch := flag.Duration("fetch-latency", 100*time.Millisecond, "latency of every picture download")
	dur := flag.Duration("duration", 75*time.Second, "how long the calls of each case should last at the limit")
	flag.Parse()
	window := time.Minute
	if *quick {
		*dur, window = 40*time.Second, 30*time.Second
	}
	if err := run(*rpm, *latency, *fetch, *dur, window); err != nil {
		log.Fatal(err)
	}
}

// pictureServer serves one small PNG at every path after latency, and counts the downloads.
func pictureServer(latency time.Duration) (string, *atomic.Int64, func(), error) {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 512, 512))); err != nil {
		return "", nil, nil, err
	}
	pic := b.Bytes()
	var n atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(latency)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pic)
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), &n, func() { _ = srv.Close() }, nil
}

func run(rpm int, latency, fetch, dur, window time.Duration) error {
	ctx := context.Background()
	st, err := bench.Start(sim.Config{Latency: sim.Latency{Fixed: latency}, RPM: rpm})
	if err != nil {
		return err
	}
	defer st.Close()
	picURL, downloads, stop, err := pictureServer(fetch)
	if err != nil {
		return err
	}
	defer stop()

	cells := int(math.Ceil(float64(rpm) * dur.Minutes()))
	const personas = 40
	items := (cells + personas - 1) / personas
	need := int(math.Ceil(float64(rpm) / 60 * fetch.Seconds()))
	loadStart := bench.Load()
	fmt.Fprintf(os.Stderr, "rpm %d, latency %v, fetch latency %v, %d cells per case (load %s)\n", rpm, latency, fetch, items*personas, loadStart)

	type result struct {
		slots     int
		shared    bool
		s         bench.Steady
		downloads int64
		ok        int
		wall      time.Duration
	}
	var rows []result
	for i, c := range []struct {
		slots  int
		shared bool
	}{{8, false}, {8, true}, {need, false}, {1, false}, {1, true}} {
		// With the fetch cache, each item's picture is shown to its 40 personas; without it, every cell is an item
		// of its own (one persona) with a picture of its own.
		spec := bench.GridSpec(1, 1, items*personas, 1)
		if c.shared {
			spec = bench.GridSpec(1, 1, items, personas)
		}
		spec.Models[0].RPM = rpm
		spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses = 256, 1
		spec.Run.Cache = experiment.CacheOff // every cell is called, in every case
		spec.Image.MaxConcurrentDownloads = c.slots
		for it := range spec.Questionnaire.Items {
			spec.Questionnaire.Items[it].Images = []string{fmt.Sprintf("%s/case%d/%d.png", picURL, i, it)}
		}
		id := fmt.Sprintf("images-%d", i)
		spec.ApplyDefaults()
		from := len(st.Sim.Requests())
		before := downloads.Load()
		start := time.Now()
		res, err := st.Run(ctx, id, spec)
		if err != nil {
			return err
		}
		wall := time.Since(start)
		ev := bench.Admitted(st.Sim.Requests()[from:], func(sim.Request) float64 { return 1 })
		s := bench.SteadyRate(ev, sim.DefaultBurst*float64(rpm), float64(rpm), window, time.Second)
		s.Median, s.Min, s.Max = s.Median*float64(time.Minute)/float64(window), s.Min*float64(time.Minute)/float64(window), s.Max*float64(time.Minute)/float64(window)
		rows = append(rows, result{c.slots, c.shared, s, downloads.Load() - before, res.Summary.OK + res.Summary.Unparsed, wall})
		fmt.Fprintf(os.Stderr, "case %d done: slots %d, shared %v, steady %.0f RPM\n", i, c.slots, c.shared, s.Median)
	}

	fmt.Printf("### Pictures: simulator and model rpm %d, model latency %v, picture download latency %v, %d calls per case\n\n", rpm, latency, fetch, items*personas)
	fmt.Printf("%s · load at start %s · windows of %v\n\n", bench.Machine(), loadStart, window)
	fmt.Println("| max_concurrent_downloads | fetch cache | steady-state RPM (median of windows) | min – max | vs configured | downloads | cells ok | wall (s) |")
	fmt.Println("|---:|---|---:|---|---:|---:|---:|---:|")
	for _, r := range rows {
		cache := "no (a picture per cell)"
		if r.shared {
			cache = "yes (a picture per item, 40 cells each)"
		}
		fmt.Printf("| %d | %s | %.0f | %.0f – %.0f | %+.1f%% | %d | %d | %.1f |\n", r.slots, cache, r.s.Median, r.s.Min, r.s.Max,
			100*(r.s.Median/float64(rpm)-1), r.downloads, r.ok, r.wall.Seconds())
	}
	return nil
}
