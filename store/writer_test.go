package store

import (
	"context"
	"errors"
	"reflect"
	"strings"
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

func TestWriterCommitsWithoutFlush(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := NewWriter(s, "run", WriterOptions{})
	defer func() { _ = w.Close(ctx) }()
	for i := range 3 {
		if err := w.Add(ctx, rec(i)); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	// No timer and no batch size: the records are committed as soon as the writer gets to them.
	waitFor(t, "the records to be committed", func() bool { return stored(t, s, "run") == 3 })
}

// gatedPutter records the batches it is given; each Write waits for a value on release first.
type gatedPutter struct {
	release chan struct{}
	entered chan int
	mu      sync.Mutex
	batches [][]Record
}

func (g *gatedPutter) Write(ctx context.Context, _ string, b Batch) error {
	recs := b.Records
	g.entered <- len(recs)
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	g.batches = append(g.batches, append([]Record(nil), recs...))
	g.mu.Unlock()
	return nil
}

func TestWriterGroupsWhatArrivesDuringACommit(t *testing.T) {
	ctx := context.Background()
	g := &gatedPutter{release: make(chan struct{}), entered: make(chan int, 10)}
	w := NewWriter(g, "run", WriterOptions{})
	if err := w.Add(ctx, rec(0)); err != nil {
		t.Fatal(err)
	}
	if n := <-g.entered; n != 1 {
		t.Fatalf("first commit has %d records, want 1", n)
	}
	// While the first commit runs, five more arrive: they must all go into the next commit, together.
	for i := 1; i <= 5; i++ {
		if err := w.Add(ctx, rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	g.release <- struct{}{}
	if n := <-g.entered; n != 5 {
		t.Fatalf("second commit has %d records, want the 5 that arrived during the first", n)
	}
	g.release <- struct{}{}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if len(g.batches) != 2 {
		t.Fatalf("%d commits, want 2", len(g.batches))
	}
}

func TestWriterAddBlocksAtMaxPending(t *testing.T) {
	ctx := context.Background()
	g := &gatedPutter{release: make(chan struct{}), entered: make(chan int, 10)}
	w := NewWriter(g, "run", WriterOptions{MaxPending: 2})
	if err := w.Add(ctx, rec(0)); err != nil {
		t.Fatal(err)
	}
	<-g.entered // the first commit holds record 0
	for i := 1; i <= 2; i++ {
		if err := w.Add(ctx, rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := w.Add(short, rec(3)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Add beyond MaxPending: got %v, want it to block until its context ends", err)
	}
	added := make(chan error, 1)
	go func() { added <- w.Add(ctx, rec(3)) }()
	g.release <- struct{}{} // the first commit ends and takes records 1 and 2: room again
	if err := <-added; err != nil {
		t.Fatalf("Add after a commit made room: %v", err)
	}
	go func() {
		for range g.entered {
			g.release <- struct{}{}
		}
	}()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	close(g.entered)
	total := 0
	for _, b := range g.batches {
		total += len(b)
	}
	if total != 4 {
		t.Fatalf("%d records committed, want 4", total)
	}
}

func TestWriterCloseReportsRecordsItCouldNotWrite(t *testing.T) {
	g := &gatedPutter{release: make(chan struct{}), entered: make(chan int, 10)}
	w := NewWriter(g, "run", WriterOptions{})
	if err := w.Add(context.Background(), rec(0)); err != nil {
		t.Fatal(err)
	}
	<-g.entered // the commit never ends by itself
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := w.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 records unwritten") {
		t.Fatalf("Close whose context ended during a commit: got %v, want 1 record reported unwritten", err)
	}
}

func TestWriterFlushAndCloseMakeDurable(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := NewWriter(s, "run", WriterOptions{})
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
	w := NewWriter(s, "run", WriterOptions{})
	if err := s.Close(); err != nil { // the database goes away under the writer
		t.Fatalf("Close store: %v", err)
	}
	if err := w.Add(ctx, rec(0)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	var addErr error
	waitFor(t, "Add to report the background commit error", func() bool {
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
	w := NewWriter(s, "run", WriterOptions{})
	_ = s.Close()
	if err := w.Add(ctx, rec(0)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if err := w.Flush(ctx); err == nil {
		t.Fatal("Flush to a closed store: got nil error")
	}
	if err := w.Close(ctx); err == nil {
		t.Fatal("Close after a failed Flush: got nil error")
	}
}

func TestWriterKeepsRecordsWhenFlushContextEnds(t *testing.T) {
	s := openTemp(t)
	w := NewWriter(s, "run", WriterOptions{})
	if err := w.Add(context.Background(), rec(0)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = w.Flush(ctx) // nil when the commit was already done, the context's error otherwise: either way nothing is lost
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
	w := NewWriter(s, "run", WriterOptions{})
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
		if !reflect.DeepEqual(r, rec(i)) {
			t.Fatalf("record %d = %+v, want %+v", i, r, rec(i))
		}
	}
}
