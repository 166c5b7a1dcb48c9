package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrWriterClosed is returned by Add after Close.
var ErrWriterClosed = errors.New("store: writer closed")

// DefaultMaxPending is the default of WriterOptions.MaxPending.
const DefaultMaxPending = 4096

// WriterOptions configure a Writer. Zero values mean the defaults.
type WriterOptions struct {
	// MaxPending bounds the records waiting for a commit: Add blocks while that many are waiting, so memory stays
	// bounded when the store is slower than the calls. Optional: defaults to DefaultMaxPending.
	MaxPending int
}

// Putter writes records of a run in one transaction; *SQLite is one.
type Putter interface {
	Put(ctx context.Context, run string, recs []Record) error
}

// Writer makes the records of one run durable with group commit: a background goroutine commits whatever is
// pending as one transaction and, as soon as that commit ends, commits everything that arrived meanwhile. There
// is no timer: a record waits at most for the commit in progress and its own, so an answer that has landed is
// durable within a few milliseconds (a process killed after that never pays for it again), while under load
// the batches grow by themselves and the store sees few transactions.
//
// It never drops a record silently: once a commit has failed, the Writer keeps that error and every later Add,
// Flush and Close returns it; the records of the failed batch and all records added after it are then not
// written, and their cells must be treated as unfinished.
//
// A Writer is safe for use by several goroutines. It owns one goroutine, which Close stops and waits for; a
// Writer that is never closed leaks it.
type Writer struct {
	p          Putter
	run        string
	maxPending int
	// ctx is the background commits' context; cancel aborts a commit when Close's context ends first.
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // buffered 1: records are pending, or the writer was closed
	done   chan struct{} // closed when the background goroutine has returned

	mu      sync.Mutex
	pending []Record
	// added numbers the records added so far; committed is the number of them that are durable. Records
	// commit in the order they were added, so "record n is durable" is "committed >= n".
	added, committed uint64
	// progress is closed (and replaced) after every commit attempt, waking Flush and a blocked Add.
	progress  chan struct{}
	err       error // first commit error, sticky
	closed    bool
	closeOnce sync.Once
}

// NewWriter starts a Writer for the records of run, committed through p. Close it when done.
func NewWriter(p Putter, run string, opts WriterOptions) *Writer {
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		p:          p,
		run:        run,
		maxPending: opts.MaxPending,
		ctx:        ctx,
		cancel:     cancel,
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		progress:   make(chan struct{}),
	}
	go w.loop()
	return w
}

// NewWriter starts a Writer for the records of run in s. See the package function NewWriter.
func (s *SQLite) NewWriter(run string, opts WriterOptions) *Writer { return NewWriter(s, run, opts) }

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// loop commits pending records until the writer is closed and drained, a commit fails, or ctx is cancelled.
func (w *Writer) loop() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
		case <-w.ctx.Done():
			return
		}
		for {
			w.mu.Lock()
			if w.err != nil {
				w.mu.Unlock()
				return
			}
			batch, seq, closed := w.pending, w.added, w.closed
			w.pending = nil
			w.mu.Unlock()
			if len(batch) == 0 {
				if closed {
					return
				}
				break
			}
			err := w.p.Put(w.ctx, w.run, batch)
			w.mu.Lock()
			switch {
			case err == nil:
				w.committed = seq
			case w.ctx.Err() != nil:
				// Close gave up waiting: the transaction rolled back, so the batch is pending again and
				// Close reports it unwritten.
				w.pending = append(batch, w.pending...)
			default:
				w.err = fmt.Errorf("store: writer %s: %d records not written: %w", w.run, len(batch), err)
			}
			close(w.progress)
			w.progress = make(chan struct{})
			stop := w.err != nil || w.ctx.Err() != nil
			w.mu.Unlock()
			if stop {
				return
			}
		}
	}
}

// Add queues r to be committed. It returns the error of an earlier failed commit, if any. While MaxPending
// records are waiting, Add blocks until a commit makes room or ctx ends.
func (w *Writer) Add(ctx context.Context, r Record) error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("store: writer %s: %w", w.run, err)
	}
	w.mu.Lock()
	for {
		switch {
		case w.err != nil:
			err := w.err
			w.mu.Unlock()
			return err
		case w.closed:
			w.mu.Unlock()
			return ErrWriterClosed
		case len(w.pending) < w.maxPending:
			w.pending = append(w.pending, r)
			w.added++
			w.mu.Unlock()
			w.signal()
			return nil
		}
		ch := w.progress
		w.mu.Unlock()
		select {
		case <-ch:
		case <-w.done:
		case <-ctx.Done():
			return fmt.Errorf("store: writer %s: add: %w", w.run, ctx.Err())
		}
		w.mu.Lock()
	}
}

// Flush waits until every record added before the call is durable, or a commit failed, or ctx ended.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	target := w.added
	for w.committed < target {
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return err
		}
		ch := w.progress
		w.mu.Unlock()
		select {
		case <-ch:
		case <-w.done:
			return w.closeErr()
		case <-ctx.Done():
			return fmt.Errorf("store: writer %s: flush: %w", w.run, ctx.Err())
		}
		w.mu.Lock()
	}
	err := w.err
	w.mu.Unlock()
	return err
}

// Close commits the pending records, stops the background goroutine and waits for it. When ctx ends first,
// the commit in progress is aborted and Close reports the records left unwritten. It returns the first commit
// error, if any. Calling Close again returns the same result.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.signal()
		select {
		case <-w.done:
		case <-ctx.Done():
			w.cancel()
			<-w.done
		}
		w.cancel()
	})
	return w.closeErr()
}

func (w *Writer) closeErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if len(w.pending) > 0 {
		return fmt.Errorf("store: writer %s: closed with %d records unwritten", w.run, len(w.pending))
	}
	return nil
}
