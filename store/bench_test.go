package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkInsert100k inserts 100,000 records into a fresh file: in batches (one transaction per batch, as
// Writer does) and with one transaction per record (what a cache that commits each entry does). Run it with
//
//	go test -run '^$' -bench Insert100k -benchtime 3x ./store/
func BenchmarkInsert100k(b *testing.B) {
	const n = 100_000
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = rec(i)
	}
	for _, bc := range []struct {
		name  string
		batch int
	}{
		{"one-tx-per-record", 1},
		{"batch-256", 256},
		{"batch-4096", 4096},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				s, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "bench.db"))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for start := 0; start < n; start += bc.batch {
					if err := s.Put(ctx, "run", recs[start:min(start+bc.batch, n)]); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				_ = s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
	b.Run("writer", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			b.StopTimer()
			s, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			w := NewWriter(s, "run", WriterOptions{})
			for _, r := range recs {
				if err := w.Add(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			_ = s.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkPostgresPut100k writes 100,000 records in batches three ways: Put's single statement over one array
// per column (what Postgres.Put does), a pgx.Batch of one upsert per record (pipelined, one round trip), and
// COPY into a temporary table followed by one upsert (one transaction, four round trips). Run it with
//
//	SILICO_TEST_POSTGRES=postgres://... go test -run '^$' -bench PostgresPut100k -benchtime 3x ./store/
func BenchmarkPostgresPut100k(b *testing.B) {
	const n = 100_000
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = rec(i)
	}
	ways := []struct {
		name string
		put  func(p *Postgres, ctx context.Context, run string, recs []Record) error
	}{
		{"unnest", (*Postgres).Put},
		{"pgx-batch", putBatch},
		{"copy-upsert", putCopy},
	}
	for _, batch := range []int{256, 4096} {
		for _, way := range ways {
			b.Run(fmt.Sprintf("%s-%d", way.name, batch), func(b *testing.B) {
				ctx := context.Background()
				for b.Loop() {
					b.StopTimer()
					p, err := OpenPostgres(ctx, pgTestDSN(b))
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					for start := 0; start < n; start += batch {
						if err := way.put(p, ctx, "run", recs[start:min(start+batch, n)]); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					if c, err := p.Counts(ctx, "run"); err != nil || c.Records != n {
						b.Fatalf("%d records, %v; want %d", c.Records, err, n)
					}
					_ = p.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkPostgresWriter100k adds 100,000 records one by one to a Writer over PostgreSQL, as a pass does: the
// writer commits whatever arrived during the previous commit. Compare BenchmarkInsert100k/writer (SQLite).
func BenchmarkPostgresWriter100k(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		p, err := OpenPostgres(ctx, pgTestDSN(b))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		w := NewWriter(p, "run", WriterOptions{})
		for i := range n {
			if err := w.Add(ctx, rec(i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if c, err := p.Counts(ctx, "run"); err != nil || c.Records != n {
			b.Fatalf("%d records, %v; want %d", c.Records, err, n)
		}
		_ = p.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// benchCellColumns are the columns putBatch and putCopy write (the first schema's); the others keep their
// defaults, which is all that comparing ways of writing a batch needs.
const benchCellColumns = `idx, status, option_id, raw, candidates, error_class, error_message, prompt_tokens,
	completion_tokens, cost_usd, latency_ms, attempts, cached`

// putBatch is Put as a pgx.Batch: the run's row and one upsert per record, sent at once and run in one
// implicit transaction.
func putBatch(p *Postgres, ctx context.Context, run string, recs []Record) error {
	var bt pgx.Batch
	bt.Queue("INSERT INTO silico_runs (run) VALUES ($1) ON CONFLICT (run) DO NOTHING", run)
	for _, r := range mergeByIndex(recs) {
		bt.Queue(`INSERT INTO silico_cells (run, `+benchCellColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (run, idx) DO UPDATE SET status = excluded.status, option_id = excluded.option_id, raw = excluded.raw,
			candidates = excluded.candidates, error_class = excluded.error_class, error_message = excluded.error_message,
			prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, cost_usd = excluded.cost_usd,
			latency_ms = excluded.latency_ms, attempts = excluded.attempts, cached = excluded.cached
			WHERE excluded.status <> 'failed' OR silico_cells.status = 'failed'`,
			run, r.Index, r.Status, r.OptionID, r.Raw, r.Candidates, r.ErrorClass, r.ErrorMessage,
			r.PromptTokens, r.CompletionTokens, r.CostUSD, r.LatencyMS, r.Attempts, r.Cached)
	}
	return p.pool.SendBatch(ctx, &bt).Close()
}

// putCopy is Put as COPY into a temporary table and one upsert from it, in one transaction.
func putCopy(p *Postgres, ctx context.Context, run string, recs []Record) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS cells_in (LIKE silico_cells INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO silico_runs (run) VALUES ($1) ON CONFLICT (run) DO NOTHING", run); err != nil {
			return err
		}
		merged := mergeByIndex(recs)
		cols := strings.Fields(strings.ReplaceAll("run, "+benchCellColumns, ",", " "))
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"cells_in"}, cols, pgx.CopyFromSlice(len(merged), func(i int) ([]any, error) {
			r := merged[i]
			return []any{run, int64(r.Index), r.Status, r.OptionID, r.Raw, r.Candidates, r.ErrorClass, r.ErrorMessage,
				int64(r.PromptTokens), int64(r.CompletionTokens), r.CostUSD, r.LatencyMS, int64(r.Attempts), r.Cached}, nil
		})); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO silico_cells (run, `+benchCellColumns+`) SELECT run, `+benchCellColumns+` FROM cells_in
			ON CONFLICT (run, idx) DO UPDATE SET status = excluded.status, option_id = excluded.option_id, raw = excluded.raw,
			candidates = excluded.candidates, error_class = excluded.error_class, error_message = excluded.error_message,
			prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, cost_usd = excluded.cost_usd,
			latency_ms = excluded.latency_ms, attempts = excluded.attempts, cached = excluded.cached
			WHERE excluded.status <> 'failed' OR silico_cells.status = 'failed'`)
		return err
	})
}

// BenchmarkWriterAnswers adds 20,000 records with the cache entries of their answers and a lookup count each to a
// Writer over a fresh SQLite file from 16 goroutines, as a pass with the default cache policy does, and reports
// the CPU time per record (this process's user and system time), which holds whatever else the machine runs. Run
// it with
//
//	go test -run '^$' -bench WriterAnswers -benchtime 5x -benchmem ./store/
func BenchmarkWriterAnswers(b *testing.B) {
	const n, writers = 20_000, 16
	recs := make([]Record, n)
	entries := make([]CacheEntry, n)
	for i := range recs {
		recs[i] = rec(i)
		entries[i] = benchEntry(i)
	}
	ctx := context.Background()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		s, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := cpuTime(b)
		w := NewWriter(s, "run", WriterOptions{})
		var next atomic.Int64
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					if err := w.AddAnswer(ctx, recs[i], entries[i]); err != nil {
						b.Error(err)
						return
					}
					w.Tally("bench-model", CacheTally{Misses: 1})
				}
			})
		}
		wg.Wait()
		if err := w.Close(ctx); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - cpu0
		b.StopTimer()
		_ = s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/record")
}
