package activities

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/silicolab/silico/ratelimit"
)

// cellQueue holds the cells of a pass that still need a call: ready cells (served lowest index first, so a pass
// runs in submission order) and cells waiting out a retry delay. A cell taken with next is "out" until done or
// retry gives it back, so the dispatcher knows when the work is over: nothing ready, nothing waiting, nothing out.
// A held cell (see judge.decide) waits in it too, given back with hold: others tells whether anything else is.
type cellQueue struct {
	clk ratelimit.Clock

	mu      sync.Mutex
	ready   []int // sorted
	delayed delayHeap
	out     int
	held    map[int]bool  // the held cells in ready or delayed
	changed chan struct{} // closed and replaced on every change
}

func newCellQueue(clk ratelimit.Clock, cells []int) *cellQueue {
	return &cellQueue{clk: clk, ready: slices.Clone(cells), changed: make(chan struct{})}
}

// notify wakes next. Call with q.mu held.
func (q *cellQueue) notify() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// next returns the next cell to call, waiting while cells are delayed or out. It returns false when the queue is
// drained (nothing ready, delayed or out) or ctx ends.
func (q *cellQueue) next(ctx context.Context) (int, bool) {
	q.mu.Lock()
	for {
		now := q.clk.Now()
		for len(q.delayed) > 0 && !q.delayed[0].at.After(now) {
			d := heap.Pop(&q.delayed).(delayed)
			q.insertReady(d.cell)
		}
		if len(q.ready) > 0 {
			c := q.ready[0]
			q.ready = q.ready[1:]
			q.out++
			delete(q.held, c)
			q.mu.Unlock()
			return c, true
		}
		if len(q.delayed) == 0 && q.out == 0 {
			q.mu.Unlock()
			return 0, false
		}
		var timer <-chan time.Time
		if len(q.delayed) > 0 {
			timer = q.clk.After(q.delayed[0].at.Sub(now))
		}
		ch := q.changed
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return 0, false
		case <-ch:
		case <-timer:
		}
		q.mu.Lock()
	}
}

func (q *cellQueue) insertReady(c int) {
	i, _ := slices.BinarySearch(q.ready, c)
	q.ready = slices.Insert(q.ready, i, c)
}

// peek returns up to n of the cells next will return first, without taking them.
func (q *cellQueue) peek(n int) []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.ready[:min(n, len(q.ready))])
}

// done ends a cell taken with next: it has a result, or will not be called again in this attempt.
func (q *cellQueue) done() {
	q.mu.Lock()
	q.out--
	q.notify()
	q.mu.Unlock()
}

// retry gives a cell taken with next back, to be called again from at on.
func (q *cellQueue) retry(cell int, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.giveBack(cell, at)
}

// giveBack puts a cell taken with next back, ready from at on. Call with q.mu held.
func (q *cellQueue) giveBack(cell int, at time.Time) {
	q.out--
	if at.After(q.clk.Now()) {
		heap.Push(&q.delayed, delayed{at: at, cell: cell})
	} else {
		q.insertReady(cell)
	}
	q.notify()
}

// hold gives a held cell taken with next back, to be decided again from at on.
func (q *cellQueue) hold(cell int, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.held == nil {
		q.held = map[int]bool{}
	}
	q.held[cell] = true
	q.giveBack(cell, at)
}

// others reports whether the queue has work besides the one cell the caller took with next and the held cells:
// another cell out (a call in flight, or waiting to be admitted), or one ready or waiting out a retry delay.
func (q *cellQueue) others() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.out > 1 || len(q.ready)+len(q.delayed) > len(q.held)
}

type delayed struct {
	at   time.Time
	cell int
}

// delayHeap is a min-heap of delayed cells by time, then index.
type delayHeap []delayed

func (h delayHeap) Len() int { return len(h) }
func (h delayHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].cell < h[j].cell
	}
	return h[i].at.Before(h[j].at)
}
func (h delayHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *delayHeap) Push(x any)   { *h = append(*h, x.(delayed)) }
func (h *delayHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
