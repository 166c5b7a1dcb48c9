// Command cache measures the response cache, side by side in one process, and prints markdown tables:
//
//  1. lookups: validated hits per second (respcache.Lookup in batches, as a pass looks up the cells ahead of it, and
//     one key at a time) beside a plain loop of the same store's point reads without validation, the physical
//     limit of one key per query;
//
//  2. writes: cache entries written one transaction per entry beside the batches the results writer commits;
//
//  3. end to end: a run of a 100,000-cell grid (100 items × 100 personas × 10 seeds) against the zero-latency
//     simulator with an empty cache, then the same grid as a new run, every cell in the cache.
//
//     go run ./benchmarks/cache                     # SQLite, 3 rounds of the lookups
//     go run ./benchmarks/cache --postgres DSN      # the lookups and writes on PostgreSQL too
//     go run ./benchmarks/cache --quick             # 1 round, a 10,000-cell grid
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/silicolab/silico/benchmarks/bench"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/store/storetest"
)

func main() {
	quick := flag.Bool("quick", false, "one round and a 10,000-cell grid")
	rounds := flag.Int("rounds", 3, "rounds of the lookup measurements")
	entries := flag.Int("entries", 100_000, "entries in the store for the lookups")
	pg := flag.String("postgres", os.Getenv(storetest.EnvPostgres), "also measure PostgreSQL at this DSN (its silico tables are used and left)")
	skipRun := flag.Bool("no-run", false, "skip the end-to-end runs")
	skipLookups := flag.Bool("no-lookups", false, "skip the lookup and write measurements")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the lookups to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	seeds := 10
	if *quick {
		*rounds, seeds = 1, 1
	}
	ctx := context.Background()
	fmt.Printf("machine: %s\n\n", bench.Machine())
	dir, err := os.MkdirTemp("", "silico-cache-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sq, err := store.OpenSQLite(ctx, filepath.Join(dir, "cache.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer sq.Close()
	stores := []namedStore{{"SQLite", sq}}
	if *pg != "" {
		p, err := store.OpenPostgres(ctx, *pg)
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		if _, err := p.CachePrune(ctx, store.CacheFilter{Run: benchRun}); err != nil {
			log.Fatal(err)
		}
		stores = append(stores, namedStore{"PostgreSQL", p})
	}
	for _, s := range stores {
		if *skipLookups {
			break
		}
		if err := lookups(ctx, s, *entries, *rounds); err != nil {
			log.Fatal(err)
		}
		if err := writes(ctx, s); err != nil {
			log.Fatal(err)
		}
		if s.name == "PostgreSQL" {
			if _, err := s.st.CachePrune(ctx, store.CacheFilter{Run: benchRun}); err != nil {
				log.Fatal(err)
			}
		}
	}
	if !*skipRun {
		if err := endToEnd(ctx, seeds); err != nil {
			log.Fatal(err)
		}
	}
}

// benchRun is the run the benchmark's entries are written by, so that they can be pruned afterwards.
const benchRun = "cache-benchmark"

type namedStore struct {
	name string
	st   store.Store
}

// keysAndEntries makes n entries with answers the size of a short questionnaire answer.
func keysAndEntries(n, offset int) ([]store.CacheKey, []store.CacheEntry) {
	keys := make([]store.CacheKey, n)
	es := make([]store.CacheEntry, n)
	now := time.Now()
	for i := range n {
		req := llm.Request{Model: "bench-model", Seed: int64(i + offset), Messages: []experiment.Message{
			{Role: "system", Content: "You are taking part in a survey."},
			{Role: "user", Content: fmt.Sprintf("Statement %d: I am the life of the party.", i)}}}
		keys[i] = respcache.Key("https://api.example.com/v1", req)
		es[i] = respcache.Entry(keys[i], "bench-model", benchRun, respcache.Answer{Text: "4. Agree: I am fairly outgoing.", PromptTokens: 120, CompletionTokens: 9}, now)
	}
	return keys, es
}

func lookups(ctx context.Context, s namedStore, n, rounds int) error {
	keys, es := keysAndEntries(n, 0)
	for start := 0; start < n; start += 1000 {
		if err := s.st.Write(ctx, benchRun, store.Batch{Cache: es[start:min(n, start+1000)]}); err != nil {
			return err
		}
	}
	// The point-read loops touch a sample: one query per key is slow enough that all n would take long.
	sample := keys[:min(n, 20_000)]
	// One read of every entry first, so that every measurement finds the file in the page cache.
	if _, err := s.st.CacheGet(ctx, keys); err != nil {
		return err
	}
	var point, single, plain, batched []float64
	for range rounds {
		t0 := time.Now()
		for start := 0; start < n; start += 256 {
			got, err := s.st.CacheGet(ctx, keys[start:min(n, start+256)])
			if err != nil || len(got) != min(n, start+256)-start {
				return fmt.Errorf("batched read: %d rows, %v", len(got), err)
			}
		}
		plain = append(plain, float64(n)/time.Since(t0).Seconds())

		t := time.Now()
		for _, k := range sample {
			got, err := s.st.CacheGet(ctx, []store.CacheKey{k})
			if err != nil || len(got) != 1 {
				return fmt.Errorf("point read: %d rows, %v", len(got), err)
			}
		}
		point = append(point, float64(len(sample))/time.Since(t).Seconds())

		t = time.Now()
		for _, k := range sample {
			f, err := respcache.Lookup(ctx, s.st, []store.CacheKey{k})
			if err != nil || len(f.Answers) != 1 {
				return fmt.Errorf("validated lookup: %d answers, %v", len(f.Answers), err)
			}
		}
		single = append(single, float64(len(sample))/time.Since(t).Seconds())

		t = time.Now()
		hits := 0
		for start := 0; start < n; start += 256 {
			f, err := respcache.Lookup(ctx, s.st, keys[start:min(n, start+256)])
			if err != nil {
				return err
			}
			hits += len(f.Answers)
		}
		if hits != n {
			return fmt.Errorf("batched lookups: %d hits of %d", hits, n)
		}
		batched = append(batched, float64(n)/time.Since(t).Seconds())
	}
	p, one, pb, b := bench.Median(point), bench.Median(single), bench.Median(plain), bench.Median(batched)
	fmt.Printf("### Lookups, %s (%d entries, median of %d rounds)\n\n", s.name, n, rounds)
	fmt.Println("| lookup | hits/s | vs point reads |")
	fmt.Println("|---|---:|---:|")
	fmt.Printf("| plain point reads, one key per query, not validated | %.0f | 1.00 |\n", p)
	fmt.Printf("| validated, one key per query | %.0f | %.2f |\n", one, one/p)
	fmt.Printf("| plain reads, 256 keys per query, not validated | %.0f | %.2f |\n", pb, pb/p)
	fmt.Printf("| validated, 256 keys per query (what a pass does) | %.0f | %.2f |\n\n", b, b/p)
	return nil
}

func writes(ctx context.Context, s namedStore) error {
	const n = 5_000
	_, single := keysAndEntries(n, 1_000_000)
	t := time.Now()
	for _, e := range single {
		if err := s.st.Write(ctx, benchRun, store.Batch{Cache: []store.CacheEntry{e}}); err != nil {
			return err
		}
	}
	one := float64(n) / time.Since(t).Seconds()
	_, batched := keysAndEntries(n, 2_000_000)
	t = time.Now()
	for start := 0; start < n; start += 256 {
		if err := s.st.Write(ctx, benchRun, store.Batch{Cache: batched[start:min(n, start+256)]}); err != nil {
			return err
		}
	}
	b := float64(n) / time.Since(t).Seconds()
	fmt.Printf("### Cache writes, %s (%d entries)\n\n", s.name, n)
	fmt.Println("| writes | entries/s | ratio |")
	fmt.Println("|---|---:|---:|")
	fmt.Printf("| one transaction per entry | %.0f | 1.00 |\n", one)
	fmt.Printf("| 256 entries per transaction (group commit) | %.0f | %.2f |\n\n", b, b/one)
	return nil
}

func endToEnd(ctx context.Context, seeds int) error {
	st, err := bench.Start(sim.Config{})
	if err != nil {
		return err
	}
	defer st.Close()
	off := bench.GridSpec(1, seeds, 100, 100)
	cells := off.NumCells()
	spec := off
	spec.Run.Cache = experiment.CacheReadWrite // what this benchmark measures
	t := time.Now()
	if _, err := st.Run(ctx, "cache-off", off); err != nil {
		return err
	}
	uncached := time.Since(t)
	base := len(st.Sim.Requests())
	t = time.Now()
	first, err := st.RunWithCache(ctx, "cache-empty", spec)
	if err != nil {
		return err
	}
	cold := time.Since(t)
	calls := len(st.Sim.Requests()) - base
	t = time.Now()
	second, err := st.RunWithCache(ctx, "cache-full", spec)
	if err != nil {
		return err
	}
	warm := time.Since(t)
	again := len(st.Sim.Requests()) - calls - base
	a, err := bench.CellColumns(first.OutputDir)
	if err != nil {
		return err
	}
	b, err := bench.CellColumns(second.OutputDir)
	if err != nil {
		return err
	}
	fmt.Printf("### End to end: %d cells, zero-latency simulator, default run settings\n\n", cells)
	fmt.Println("| run | wall | cells/s | calls | cached |")
	fmt.Println("|---|---:|---:|---:|---:|")
	fmt.Printf("| cache: off | %s | %.0f | %d | 0 |\n", uncached.Round(10*time.Millisecond), float64(cells)/uncached.Seconds(), base)
	fmt.Printf("| empty cache | %s | %.0f | %d | %d |\n", cold.Round(10*time.Millisecond), float64(cells)/cold.Seconds(), calls, first.Summary.Cached)
	fmt.Printf("| every cell cached (a new run of the same grid) | %s | %.0f | %d | %d |\n\n", warm.Round(10*time.Millisecond), float64(cells)/warm.Seconds(), again, second.Summary.Cached)
	fmt.Printf("cached / empty wall time: %.2f · empty cache / cache off: %.2f · identical cell columns: %v · load %s\n",
		warm.Seconds()/cold.Seconds(), cold.Seconds()/uncached.Seconds(), bench.SameRows(a, b), bench.Load())
	return nil
}
