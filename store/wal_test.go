package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWALStaysBoundedUnderReaders holds that the write-ahead log does not grow with the run while readers never
// stop (a run's cache lookups and progress queries): two readers whose read transactions overlap, so that SQLite
// never finds a moment to start the log over, and a writer. Without trimWAL (the limit out of reach) the same
// load grows the log past the limit, so the test can fail.
func TestWALStaysBoundedUnderReaders(t *testing.T) {
	const limit = 1 << 20
	for _, trim := range []bool{false, true} {
		ctx := context.Background()
		s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "results.db"))
		if err != nil {
			t.Fatal(err)
		}
		s.walLimit, s.trimAt = limit, limit
		if !trim {
			s.walLimit, s.trimAt = 1<<62, 1<<62
		}
		if err := s.Put(ctx, "r", []Record{rec(0)}); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var readers sync.WaitGroup
		// Each reader keeps its query open until the other has opened its own: there is always a reader.
		ready := [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}
		for r := range 2 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for {
					rows, err := s.db.QueryContext(ctx, "SELECT idx FROM cells WHERE run = 'r'")
					if err != nil {
						t.Error(err)
						return
					}
					rows.Next()
					select {
					case ready[1-r] <- struct{}{}:
					default:
					}
					select {
					case <-ready[r]:
					case <-stop:
						_ = rows.Close()
						return
					}
					_ = rows.Close()
				}
			}()
		}
		began := time.Now()
		big := strings.Repeat("x", 2000)
		largest := int64(0)
		for b := range 400 {
			recs := make([]Record, 10)
			for i := range recs {
				recs[i] = rec(1 + b*10 + i)
				recs[i].Raw = big
			}
			if err := s.Put(ctx, "r", recs); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(s.path + "-wal"); err == nil {
				largest = max(largest, fi.Size())
			}
		}
		close(stop)
		readers.Wait()
		t.Logf("trim %v: largest log %d bytes, %v", trim, largest, time.Since(began))
		// 400 batches of about 20 KB of rows: 8 MB and more of log when it is never started over.
		switch {
		case trim && largest > 2*limit:
			t.Errorf("with trimWAL the log reached %d bytes, want at most about the limit, %d", largest, limit)
		case !trim && largest < 2*limit:
			t.Logf("without trimWAL the log stayed at %d bytes: the readers did not starve SQLite's own restart, so this run shows nothing", largest)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
