package main

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"time"
)

// floorCase is what the floor of a shed case depends on: n cells sent by conc slots, each call taking latency,
// a share p of calls refused with Retry-After retryAfter, drawn independently per call (as the simulator draws).
type floorCase struct {
	n, conc    int
	latency    time.Duration
	p          float64
	retryAfter time.Duration
}

// floorWall is the wall time of an ideal runner on one draw of the refusals: no overhead at all, a slot never
// idle while some cell may be sent, a refused cell sent again the instant its Retry-After ends and before any
// cell not yet sent (so the longest chains of refusals start as early as they can). It is the reference below
// which no runner that honours each call's Retry-After can go by scheduling alone; only the draws decide it.
func floorWall(c floorCase, rng *rand.Rand) time.Duration {
	slots := make(durHeap, c.conc) // when each slot is next free
	var retries durHeap            // when each refused cell may be sent again
	fresh, end := c.n, time.Duration(0)
	for fresh > 0 || len(retries) > 0 {
		free := heap.Pop(&slots).(time.Duration)
		var start time.Duration
		switch {
		case len(retries) > 0 && retries[0] <= free:
			heap.Pop(&retries)
			start = free
		case fresh > 0:
			fresh--
			start = free
		default: // only refused cells are left, none ready yet: the slot waits for the first
			start = heap.Pop(&retries).(time.Duration)
		}
		done := start + c.latency
		heap.Push(&slots, done)
		if rng.Float64() < c.p {
			heap.Push(&retries, done+c.retryAfter)
			continue
		}
		end = max(end, done)
	}
	return end
}

// floorQuantiles returns the 10th, 50th and 90th percentiles of floorWall over trials draws from seed.
func floorQuantiles(c floorCase, trials int, seed uint64) (p10, p50, p90 time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 0))
	walls := make([]time.Duration, trials)
	for i := range walls {
		walls[i] = floorWall(c, rng)
	}
	slices.Sort(walls)
	q := func(f float64) time.Duration { return walls[min(trials-1, int(f*float64(trials)))] }
	return q(0.1), q(0.5), q(0.9)
}

// durHeap is a min-heap of times.
type durHeap []time.Duration

func (h durHeap) Len() int           { return len(h) }
func (h durHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h durHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *durHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *durHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
