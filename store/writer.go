package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrWriterClosed is returned by Add after Close.
var ErrWriterClosed = errors.New("store: writer closed")

// Defaults of WriterOptions.
const (
	DefaultBatchSize     = 256
	DefaultFlushInterval = 200 * time.Millisecond
)

// WriterOptions configure a Writer. Zero values mean the defaults.
type WriterOptions struct {
	// BatchSize is the number of pending records that triggers a flush. Optional: defaults to DefaultBatchSize.
	BatchSize int
	// Interval is the longest a record waits before a flush writes it. Optional: defaults to DefaultFlushInterval.
	Interval time.Duration
}

// Writer batches the records of one run into few transactions: it flushes in the background whenever
// BatchSize records are pending and every Interval. It never drops a record silently: once a flush has failed,
// the Writer keeps that error and every later Add, Flush and Close returns it; the records of the failed batch
// and all records added after it are then not written, and their cells must be treated as unfinished.
//
// A Writer is safe for use by several goroutines. It owns one goroutine, which Close stops and waits for; a
// Writer that is never closed leaks it.
type Writer struct {
	s     *SQLite
	run   string
	batch int
	// sem serializes the writing of batches, so that batches commit in the order they were taken and Flush
	// can wait for a batch another goroutine is writing. A channel rather than a mutex so waiting honours ctx.
	sem  chan struct{}
	kick chan struct{} // buffered 1: "a batch is full"
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the background goroutine has returned

	mu        sync.Mutex
	pending   []Record
	err       error // first flush error, sticky
	closed    bool
	closeOnce sync.Once
}

// NewWriter starts a Writer for the records of run. Close it when done.
func (s *SQLite) NewWriter(run string, opts WriterOptions) *Writer {
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultFlushInterval
	}
	w := &Writer{
		s:     s,
		run:   run,
		batch: opts.BatchSize,
		sem:   make(chan struct{}, 1),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go w.loop(opts.Interval)
	return w
}

func (w *Writer) loop(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
		case <-t.C:
		}
		// The background flush has no caller to take a context from; a stuck write lock is bounded by the
		// store's busy timeout. Its error is kept and returned by the next Add, Flush or Close.
		_ = w.flush(context.Background())
	}
}

// Add queues r to be written. It returns the error of an earlier failed flush, if any. When the background
// flushes fall behind (several batches pending), Add writes a batch itself, so memory stays bounded.
func (w *Writer) Add(ctx context.Context, r Record) error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("store: writer %s: %w", w.run, err)
	}
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	if w.closed {
		w.mu.Unlock()
		return ErrWriterClosed
	}
	w.pending = append(w.pending, r)
	n := len(w.pending)
	w.mu.Unlock()
	switch {
	case n >= 4*w.batch:
		return w.flush(ctx)
	case n >= w.batch:
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Flush writes every record added so far. When it returns nil they are all durable.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return w.closeErr()
	}
	return w.flush(ctx)
}

// Close flushes the pending records, stops the background goroutine and waits for it. It returns the first
// flush error, if any. Calling Close again returns the same result.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		close(w.stop)
		<-w.done
		_ = w.flush(ctx)
	})
	return w.closeErr()
}

func (w *Writer) closeErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if len(w.pending) > 0 { // Close's final flush was interrupted by its context
		return fmt.Errorf("store: writer %s: closed with %d records unwritten", w.run, len(w.pending))
	}
	return nil
}

// flush writes the pending records as one batch. Everything added before the call is durable when it returns
// nil: a batch another goroutine is writing completes before this one starts.
func (w *Writer) flush(ctx context.Context) error {
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("store: writer %s: flush: %w", w.run, ctx.Err())
	}
	defer func() { <-w.sem }()
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	batch := w.pending
	w.pending = nil
	w.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := w.s.Put(ctx, w.run, batch)
	if err == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx.Err() != nil {
		// The caller's context ended: the transaction rolled back, so the batch goes back in front of what was
		// added meanwhile, for a later flush or Close. Not sticky: nothing is wrong with the store.
		w.pending = append(batch, w.pending...)
		return fmt.Errorf("store: writer %s: flush: %w", w.run, err)
	}
	w.err = fmt.Errorf("store: writer %s: %d records not written: %w", w.run, len(batch), err)
	return w.err
}
