package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// benchGrid is the grid of benchmarks/overhead: one simulated model, one seed, items × personas.
func benchGrid(items, personas int) experiment.Spec {
	s := experimenttest.Grid(1, 1, items, personas, experimenttest.Name("bench grid"), experimenttest.FirstSeed(100),
		experimenttest.Statements(), experimenttest.Model(func(_ int, m *experiment.Model) {
			m.Name, m.Provider, m.Params = "sim-0", "sim", experiment.Params{MaxTokens: 16}
		}), experimenttest.Edit(func(s *experiment.Spec) { s.Questionnaire.Name = "bench" }), experimenttest.Defaults())
	s.Run.MaxConcurrency, s.Run.MaxParallelPasses = 16, 1
	s.Run.ChunkSize = max(s.Run.ChunkSize, s.NumCells())
	return s
}

// BenchmarkRunSeedPass is one RunSeedPass of 2,000 cells against the simulator on 127.0.0.1 at zero latency,
// 16 calls at once, in Temporal's test activity environment, beside a bare go-openai loop of the same requests:
// the CPU each spends per cell (this process's user and system time, the simulator's share included in both) and
// the allocations per cell, which hold whatever else the machine runs. Each iteration has a store and a run id of
// its own; "hit" fills its store with an untimed pass first, then times a new run served from it. Run it with
//
//	go test -run '^$' -bench RunSeedPass -benchtime 5x -benchmem ./activities/
//	go test -run '^$' -bench 'RunSeedPass/fill' -benchtime 10x -cpuprofile cpu.pprof -memprofile mem.pprof ./activities/
func BenchmarkRunSeedPass(b *testing.B) {
	srv, err := sim.New(sim.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	spec := benchGrid(50, 40)
	if err := spec.Validate(); err != nil {
		b.Fatal(err)
	}
	n := spec.NumCells()
	hc := benchHTTPClient()
	b.Run("bare", func(b *testing.B) {
		reqs := bareRequests(b, &spec)
		cfg := openai.DefaultConfig("")
		cfg.BaseURL = ts.URL + "/v1"
		cfg.HTTPClient = hc
		oc := openai.NewClientWithConfig(cfg)
		var m perCell
		for b.Loop() {
			m.start()
			bareLoop(b, oc, reqs, spec.Run.MaxConcurrency)
			m.stop()
		}
		m.report(b, n)
	})
	for _, mode := range []struct {
		name   string
		policy experiment.CachePolicy
		hit    bool
	}{
		{"off", experiment.CacheOff, false},
		{"fill", experiment.CacheReadWrite, false},
		{"hit", experiment.CacheReadWrite, true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			sp := spec
			sp.Run.Cache = mode.policy
			var m perCell
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				st, err := store.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "results.db"))
				if err != nil {
					b.Fatal(err)
				}
				acts := &Activities{Store: st, Models: llm.NewRegistry(hc, func(string) string { return "" }, ts.URL+"/v1")}
				want := 0
				if mode.hit {
					benchPass(b, acts, fmt.Sprintf("fill-%d", i), sp, 0)()
					want = n
				}
				run := benchPass(b, acts, fmt.Sprintf("%s-%d", mode.name, i), sp, want)
				b.StartTimer()
				m.start()
				run()
				m.stop()
				b.StopTimer()
				_ = st.Close()
				b.StartTimer()
			}
			m.report(b, n)
		})
	}
}

// benchHTTPClient has the worker's HTTP client settings (workerhost.NewHTTPClient, which this package cannot
// import).
func benchHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost, t.IdleConnTimeout = 1024, 1024, 90*time.Second
	return &http.Client{Transport: t}
}

// perCell sums the CPU time and allocations of the measured parts of a benchmark.
type perCell struct {
	cpu     time.Duration
	mallocs uint64
	runs    int
	cpu0    time.Duration
	m0      uint64
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

func (m *perCell) start() { m.m0, m.cpu0 = mallocs(), processCPU() }

func (m *perCell) stop() {
	m.cpu += processCPU() - m.cpu0
	m.mallocs += mallocs() - m.m0
	m.runs++
}

// report reports cells/s, CPU microseconds and allocations per cell of runs of n cells each.
func (m *perCell) report(b *testing.B, n int) {
	cells := float64(n * m.runs)
	b.ReportMetric(cells/b.Elapsed().Seconds(), "cells/s")
	b.ReportMetric(float64(m.cpu.Nanoseconds())/1e3/cells, "cpu-µs/cell")
	b.ReportMetric(float64(m.mallocs)/cells, "allocs/cell")
}

// benchPass prepares run id with spec and returns the run of its only pass, which must answer every cell, cached
// of them from the response cache.
func benchPass(b *testing.B, acts *Activities, id string, spec experiment.Spec, cached int) func() {
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	raw, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := env.ExecuteActivity(acts.PrepareRun, wire.PrepareInput{RunID: id, Spec: raw}); err != nil {
		b.Fatal(err)
	}
	return func() {
		p := spec.Passes()[0]
		v, err := env.ExecuteActivity(acts.RunSeedPass, wire.PassInput{RunID: id, Pass: p,
			Limits: ratelimit.Limits{Concurrency: spec.Run.MaxConcurrency}})
		if err != nil {
			b.Fatal(err)
		}
		var res wire.PassResult
		if err := v.Get(&res); err != nil {
			b.Fatal(err)
		}
		if res.OK+res.Unparsed != p.Len() || res.Cached != cached {
			b.Fatalf("%s: %+v, want %d cells answered, %d from the cache", id, res, p.Len(), cached)
		}
	}
}

// bareRequests are the requests a pass sends for spec's cells, as go-openai requests.
func bareRequests(b *testing.B, spec *experiment.Spec) []openai.ChatCompletionRequest {
	var out []openai.ChatCompletionRequest
	for i := range spec.NumCells() {
		c := spec.Cell(i)
		msgs, err := spec.Render(c, nil)
		if err != nil {
			b.Fatal(err)
		}
		var om []openai.ChatCompletionMessage
		for _, x := range msgs {
			om = append(om, openai.ChatCompletionMessage{Role: x.Role, Content: x.Content})
		}
		seed := int(spec.Seeds[c.Seed])
		req := openai.ChatCompletionRequest{Model: spec.Models[0].Name, Messages: om, Seed: &seed}
		//lint:ignore SA1019 the same field llm sends to OpenAI-compatible servers.
		req.MaxTokens = spec.Models[0].Params.MaxTokens
		out = append(out, req)
	}
	return out
}

// bareLoop sends every request from conc goroutines.
func bareLoop(b *testing.B, oc *openai.Client, reqs []openai.ChatCompletionRequest, conc int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				if resp, err := oc.CreateChatCompletion(context.Background(), reqs[i]); err != nil || len(resp.Choices) == 0 {
					b.Errorf("bare call %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
