package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func stored(t *testing.T, s *SQLite, run string) int {
	t.Helper()
	c, err := s.Counts(context.Background(), run)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	return c.Records
}

func TestWriterFlushesFullBatches(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := s.NewWriter("run", WriterOptions{BatchSize: 10, Interval: time.Hour})
	defer func() { _ = w.Close(ctx) }()
	for i := range 9 {
		if err := w.Add(ctx, rec(i)); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	if n := stored(t, s, "run"); n != 0 {
		t.Fatalf("%d records stored before the batch was full; want 0", n)
	}
	if err := w.Add(ctx, rec(9)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	waitFor(t, "the full batch to be written", func() bool { return stored(t, s, "run") == 10 })
}

func TestWriterFlushesOnInterval(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := s.NewWriter("run", WriterOptions{BatchSize: 1000, Interval: 5 * time.Millisecond})
	defer func() { _ = w.Close(ctx) }()
	for i := range 3 {
		if err := w.Add(ctx, rec(i)); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	waitFor(t, "the interval flush", func() bool { return stored(t, s, "run") == 3 })
}

func TestWriterFlushAndCloseMakeDurable(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := s.NewWriter("run", WriterOptions{BatchSize: 1000, Interval: time.Hour})
	for i := range 5 {
		if err := w.Add(ctx, rec(i)); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if n := stored(t, s, "run"); n != 5 {
		t.Fatalf("after Flush %d records stored, want 5", n)
	}
	if err := w.Add(ctx, rec(5)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := stored(t, s, "run"); n != 6 {
		t.Fatalf("after Close %d records stored, want 6", n)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Add(ctx, rec(6)); !errors.Is(err, ErrWriterClosed) {
		t.Fatalf("Add after Close: got %v, want ErrWriterClosed", err)
	}
}

func TestWriterSurfacesBackgroundFlushError(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	// Only the interval flush can write: the batch is never full, so Add never writes by itself.
	w := s.NewWriter("run", WriterOptions{BatchSize: 1 << 30, Interval: 5 * time.Millisecond})
	if err := s.Close(); err != nil { // the database goes away under the writer
		t.Fatalf("Close store: %v", err)
	}
	if err := w.Add(ctx, rec(0)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	var addErr error
	waitFor(t, "Add to report the background flush error", func() bool {
		addErr = w.Add(ctx, rec(2))
		return addErr != nil
	})
	if err := w.Flush(ctx); err == nil || err.Error() != addErr.Error() {
		t.Fatalf("Flush after a failed flush: got %v, want %v", err, addErr)
	}
	if err := w.Close(ctx); err == nil || err.Error() != addErr.Error() {
		t.Fatalf("Close after a failed flush: got %v, want %v", err, addErr)
	}
}

func TestWriterFlushReportsErrorOfClosedStore(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := s.NewWriter("run", WriterOptions{BatchSize: 100, Interval: time.Hour})
	if err := w.Add(ctx, rec(0)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	_ = s.Close()
	if err := w.Flush(ctx); err == nil {
		t.Fatal("Flush to a closed store: got nil error")
	}
	if err := w.Close(ctx); err == nil {
		t.Fatal("Close after a failed Flush: got nil error")
	}
}

func TestWriterKeepsBatchWhenFlushContextEnds(t *testing.T) {
	s := openTemp(t)
	w := s.NewWriter("run", WriterOptions{BatchSize: 100, Interval: time.Hour})
	if err := w.Add(context.Background(), rec(0)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Flush(ctx); err == nil {
		t.Fatal("Flush with a cancelled context: got nil error")
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatalf("Close after a cancelled Flush: %v", err)
	}
	if n := stored(t, s, "run"); n != 1 {
		t.Fatalf("%d records stored, want 1", n)
	}
}

func TestWriterConcurrentAdds(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := s.NewWriter("run", WriterOptions{BatchSize: 16, Interval: time.Millisecond})
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if err := w.Add(ctx, rec(g*each+i)); err != nil {
					errs <- err
					return
				}
				if i%100 == 0 {
					if err := w.Flush(ctx); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Add/Flush: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	got, err := s.Records(ctx, "run", 0, goroutines*each)
	if err != nil || len(got) != goroutines*each {
		t.Fatalf("Records = %d, %v; want %d", len(got), err, goroutines*each)
	}
	for i, r := range got {
		if r != rec(i) {
			t.Fatalf("record %d = %+v, want %+v", i, r, rec(i))
		}
	}
}
