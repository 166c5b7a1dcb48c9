package store

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkInsert100k inserts 100,000 records into a fresh file: in batches (one transaction per batch, as
// Writer does) and with one transaction per record (what seed 004's cache did). Run it with
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
				s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
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
			s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			w := s.NewWriter("run", WriterOptions{})
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
