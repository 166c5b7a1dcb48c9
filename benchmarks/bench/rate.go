package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/silicolab/silico/sim"
)

// Event is one admitted request at the simulator: when it arrived and what it cost (1 for requests, prompt +
// max_tokens for tokens).
type Event struct {
	Time time.Time
	Cost float64
}

// Admitted returns the chat requests the simulator answered with 200, in arrival order, each costing cost(r).
func Admitted(reqs []sim.Request, cost func(sim.Request) float64) []Event {
	var out []Event
	for _, r := range reqs {
		if r.Endpoint == "/v1/chat/completions" && r.Status == 200 {
			out = append(out, Event{Time: r.Time, Cost: cost(r)})
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.Time.Compare(b.Time) })
	return out
}

// Steady is a rate read over sliding windows, after a token bucket's initial burst if there was one.
type Steady struct {
	// BurstEnd is when, counted from the first request, the cumulative cost first reached a full bucket plus its
	// refill since the first request (less one request's cost): from then on the bucket is empty and every
	// request is paid by the refill, and the windows start there. NoBurst is set when that never happened (the
	// client's bucket started empty, so there was no burst to drain): the windows then start at the first request.
	BurstEnd time.Duration
	NoBurst  bool
	// Windows is the number of windows read; Median, Min and Max are the cost per window.
	Windows          int
	Median, Min, Max float64
	// Span is from the first to the last request; Total the cost of all of them.
	Span  time.Duration
	Total float64
	// MaxGap is the longest time between two consecutive requests after the burst.
	MaxGap time.Duration
}

// SteadyRate reads the steady-state rate of events (sorted by time) under a bucket of capacity refilled at
// perMinute: windows (s, s+window] for s = first request + BurstEnd, then every step, while s+window is not
// after the last request. The cost inside each window is summed.
func SteadyRate(ev []Event, capacity, perMinute float64, window, step time.Duration) Steady {
	var out Steady
	if len(ev) == 0 {
		return out
	}
	t0 := ev[0].Time
	last := ev[len(ev)-1].Time
	out.Span = last.Sub(t0)
	perSec := perMinute / 60
	var cum float64
	start := -1
	for i, e := range ev {
		cum += e.Cost
		out.Total += e.Cost
		if start < 0 && cum >= capacity+perSec*e.Time.Sub(t0).Seconds()-e.Cost {
			start = i
		}
	}
	// The window (s, s+window] leaves out the request at s itself: it drained the burst (or, without a burst,
	// it is the first request, sent before the window's refill began).
	if start < 0 {
		out.NoBurst = true
		start = 0
	}
	s := ev[start].Time
	out.BurstEnd = s.Sub(t0)
	for i := start + 1; i < len(ev); i++ {
		out.MaxGap = max(out.MaxGap, ev[i].Time.Sub(ev[i-1].Time))
	}
	var counts []float64
	for ; !s.Add(window).After(last); s = s.Add(step) {
		end := s.Add(window)
		var c float64
		for _, e := range ev {
			if e.Time.After(s) && !e.Time.After(end) {
				c += e.Cost
			}
		}
		counts = append(counts, c)
	}
	out.Windows = len(counts)
	if len(counts) > 0 {
		out.Median = Median(counts)
		out.Min, out.Max = slices.Min(counts), slices.Max(counts)
	}
	return out
}

// BurstNote describes where the windows of s start, for a table cell.
func (s Steady) BurstNote() string {
	if s.NoBurst {
		return "no burst: first request"
	}
	return fmt.Sprintf("%.1f s", s.BurstEnd.Seconds())
}

// Timeline sums the cost of events per bucket of width step, from the first event; for diagnosis.
func Timeline(ev []Event, step time.Duration) []float64 {
	if len(ev) == 0 {
		return nil
	}
	t0 := ev[0].Time
	var out []float64
	for _, e := range ev {
		i := int(e.Time.Sub(t0) / step)
		for len(out) <= i {
			out = append(out, 0)
		}
		out[i] += e.Cost
	}
	return out
}
