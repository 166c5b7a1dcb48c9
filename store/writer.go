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
	// CacheFailed is told when a batch's cache entries could not be written. The Writer then writes the batch's
	// records without them, so that no answer is lost for the cache's sake; the callback should log loudly.
	// Optional.
	CacheFailed func(entries int, err error)
}

// BatchWriter writes a batch in one transaction; every Store is one.
type BatchWriter interface {
	Write(ctx context.Context, run string, b Batch) error
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
// Cache entries of fresh answers and cache lookup counts ride in the same transactions as the records.
//
// A Writer is safe for use by several goroutines. It owns one goroutine, which Close stops and waits for; a
// Writer that is never closed leaks it.
type Writer struct {
	p           BatchWriter
	run         string
	maxPending  int
	cacheFailed func(int, error)
	// ctx is the background commits' context; cancel aborts a commit when Close's context ends first.
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // buffered 1: records are pending, or the writer was closed
	done   chan struct{} // closed when the background goroutine has returned

	mu      sync.Mutex
	pending Batch
	// added numbers the records added so far; committed is the number of them that are durable. Records
	// commit in the order they were added, so "record n is durable" is "committed >= n".
	added, committed uint64
	// progress is closed (and replaced) when the loop takes the pending records and after every commit attempt,
	// waking a blocked Add and Flush (which checks again what it waits for).
	progress  chan struct{}
	err       error // first commit error, sticky
	closed    bool
	closeOnce sync.Once
}

// NewWriter starts a Writer for the records of run, committed through p. Close it when done.
func NewWriter(p BatchWriter, run string, opts WriterOptions) *Writer {
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		p:           p,
		run:         run,
		maxPending:  opts.MaxPending,
		cacheFailed: opts.CacheFailed,
		ctx:         ctx,
		cancel:      cancel,
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
		progress:    make(chan struct{}),
	}
	go w.loop()
	return w
}

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
			w.pending = Batch{}
			if !batch.empty() {
				// Taking the records makes room: an Add blocked at MaxPending may go on now, not only once
				// this commit ends.
				close(w.progress)
				w.progress = make(chan struct{})
			}
			w.mu.Unlock()
			if batch.empty() {
				if closed {
					return
				}
				break
			}
			err := w.write(batch)
			w.mu.Lock()
			switch {
			case err == nil:
				w.committed = seq
			case w.ctx.Err() != nil:
				// Close gave up waiting: the transaction rolled back, so the batch is pending again and
				// Close reports it unwritten.
				w.pending = joinBatches(batch, w.pending)
			default:
				w.err = fmt.Errorf("store: writer %s: %d records not written: %w", w.run, len(batch.Records), err)
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

// write commits a batch; when that fails and the batch carries cache entries, it commits the batch without them,
// so that the cache can never cost an answer.
func (w *Writer) write(b Batch) error {
	err := w.p.Write(w.ctx, w.run, b)
	if err == nil || len(b.Cache) == 0 || w.ctx.Err() != nil {
		return err
	}
	if w.cacheFailed != nil {
		w.cacheFailed(len(b.Cache), err)
	}
	b.Cache = nil
	return w.p.Write(w.ctx, w.run, b)
}

// joinBatches returns a followed by b.
func joinBatches(a, b Batch) Batch {
	out := Batch{Records: append(a.Records, b.Records...), Cache: append(a.Cache, b.Cache...)}
	for _, t := range []map[string]CacheTally{a.Tally, b.Tally} {
		for m, v := range t {
			out.addTally(m, v)
		}
	}
	return out
}

func (b *Batch) addTally(model string, t CacheTally) {
	if b.Tally == nil {
		b.Tally = map[string]CacheTally{}
	}
	v := b.Tally[model]
	v.Add(t)
	b.Tally[model] = v
}

// Tally adds cache lookup counts of model to the next commit. It never blocks.
func (w *Writer) Tally(model string, t CacheTally) {
	if t.IsZero() {
		return
	}
	w.mu.Lock()
	w.pending.addTally(model, t)
	w.mu.Unlock()
	w.signal()
}

// Add queues r to be committed. It returns the error of an earlier failed commit, if any. While MaxPending
// records are waiting, Add blocks until a commit makes room or ctx ends.
func (w *Writer) Add(ctx context.Context, r Record) error {
	return w.add(ctx, r, nil)
}

// AddAnswer queues r and the cache entry of its answer, to be committed together.
func (w *Writer) AddAnswer(ctx context.Context, r Record, e CacheEntry) error {
	return w.add(ctx, r, &e)
}

func (w *Writer) add(ctx context.Context, r Record, e *CacheEntry) error {
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
		case len(w.pending.Records) < w.maxPending:
			w.pending.Records = append(w.pending.Records, r)
			if e != nil {
				w.pending.Cache = append(w.pending.Cache, *e)
			}
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
	if len(w.pending.Records) > 0 {
		return fmt.Errorf("store: writer %s: closed with %d records unwritten", w.run, len(w.pending.Records))
	}
	return nil
}
