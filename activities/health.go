package activities

import (
	"fmt"
	"sync"
	"time"

	"github.com/silicolab/silico/llm"
)

// Tries is what the transient failures of one cell have cost so far. Heartbeats carry it for every unfinished
// cell that failed, so a new attempt continues each cell's count instead of starting over.
type Tries struct {
	// Transient counts failures that use up the cell's tries (server errors, transport errors, timeouts,
	// malformed bodies); rate limits never do.
	Transient int `json:"transient"`
	// Sent counts every request made for the cell, rate-limited ones included.
	Sent int `json:"sent"`
	// LatencyMS is the latency of the last try.
	LatencyMS float64 `json:"latency_ms"`
}

// Pacing of retries inside an attempt.
const (
	// cellRetryBase and cellRetryMax bound the delay before a cell that failed transiently is tried again:
	// base doubled per try. Short, because an isolated 5xx or reset is usually gone at once; a provider that
	// keeps failing is caught by stormCells instead.
	cellRetryBase = 250 * time.Millisecond
	cellRetryMax  = 8 * time.Second
	// stormCells is how many distinct cells must fail one after the other, with no answer in between, before
	// the failures are taken for the provider's state rather than the cells': the attempt then ends, their
	// tries are given back, and Temporal's retry policy backs the whole pass off (visible in the UI as attempts
	// and their last failure). One cell failing again and again never makes a storm, except by rate limits:
	// that many 429s in a row with no answer make one too.
	stormCells = 8
	// unreachableFor is how long an endpoint that never answered (connection refused, DNS or TLS failure) is
	// tried before its model is given up. Long enough to ride out a server that is starting.
	unreachableFor = 2 * time.Second
	// defaultRateLimitPause is the pause after a 429 that names no Retry-After.
	defaultRateLimitPause = time.Second
)

// cellRetryDelay is the delay before the next try of a cell that failed transiently for the n-th time (n ≥ 1).
func cellRetryDelay(n int) time.Duration {
	if n > 6 {
		return cellRetryMax
	}
	return min(cellRetryMax, cellRetryBase<<(n-1))
}

// health follows the failures of a pass's calls and decides what each means: a cell to try again, a cell that
// used up its tries, a storm that ends the attempt, an endpoint that cannot be reached, or a pass that stalled.
type health struct {
	maxTries int
	stall    time.Duration

	mu    sync.Mutex
	tries map[int]Tries // unfinished cells that failed
	// streak holds the cells that failed since the last answer, with the tries each was charged meanwhile;
	// limited counts the rate-limited requests since the last answer (a pass at concurrency 1 retries one cell
	// again and again under a 429 storm, so distinct cells alone would never show it).
	streak  map[int]int
	limited int
	// answered says the endpoint sent an HTTP response at least once in this pass (any status), or the
	// workflow says the model answered in an earlier pass.
	answered bool
	// firstRefused is when a never-answered endpoint first refused a call.
	firstRefused time.Time
	lastFinished time.Time
	// storms counts attempts in a row that ended in a storm without finishing a cell: the backoff exponent.
	storms   int
	progress bool // a cell finished in this attempt
	last     *llm.Error
}

// verdict is what a failure means for the pass.
type verdict int

const (
	retryCell   verdict = iota // try the cell again after its delay
	cellFailed                 // the cell used up its tries: record it failed
	storm                      // end the attempt; Temporal retries the pass
	unreachable                // the endpoint never answered: give the model up
)

func newHealth(maxTries int, stall time.Duration, prev Progress, modelAnswered bool, now time.Time) *health {
	h := &health{
		maxTries:     max(1, maxTries),
		stall:        stall,
		tries:        prev.Tries,
		streak:       map[int]int{},
		answered:     prev.Answered || modelAnswered,
		lastFinished: prev.LastFinished,
		storms:       prev.Storms,
	}
	if h.tries == nil {
		h.tries = map[int]Tries{}
	}
	if h.lastFinished.IsZero() {
		h.lastFinished = now
	}
	if prev.LastClass != "" {
		h.last = &llm.Error{Class: llm.Class(prev.LastClass), Message: prev.LastMessage}
	}
	return h
}

// answer notes an answered call of cell and returns the requests it took.
func (h *health) answer(cell int, now time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answered = true
	h.lastFinished = now
	h.progress = true
	h.storms = 0
	clear(h.streak)
	h.limited = 0
	t := h.tries[cell]
	delete(h.tries, cell)
	return t.Sent + 1
}

// served notes a cell finished from the response cache: progress, but no sign of the endpoint's health.
func (h *health) served(cell int, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastFinished = now
	h.progress = true
	delete(h.tries, cell)
}

// finished notes a cell finished without an answer (a permanent failure) and returns what its tries were.
func (h *health) finished(cell int, now time.Time) Tries {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastFinished = now
	h.progress = true
	t := h.tries[cell]
	delete(h.tries, cell)
	t.Sent++
	return t
}

// failure decides what a transient failure (rate limit included) of cell means, and charges the cell's tries.
func (h *health) failure(cell int, e *llm.Error, latency time.Duration, now time.Time) (verdict, Tries) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = e
	t := h.tries[cell]
	t.Sent++
	t.LatencyMS = float64(latency.Microseconds()) / 1000
	if e.Status != 0 {
		h.answered = true
	}
	if !h.answered && neverConnected(e) {
		// A refused connection says nothing about the cell: no try is charged.
		h.tries[cell] = t
		if h.firstRefused.IsZero() {
			h.firstRefused = now
		}
		if now.Sub(h.firstRefused) >= unreachableFor {
			return unreachable, t
		}
		return retryCell, t
	}
	charged := 0
	if e.Class != llm.ClassRateLimited {
		t.Transient++
		charged = 1
	}
	h.tries[cell] = t
	if t.Transient >= h.maxTries {
		delete(h.tries, cell)
		delete(h.streak, cell)
		return cellFailed, t
	}
	h.streak[cell] += charged
	if e.Class == llm.ClassRateLimited {
		h.limited++
	}
	if len(h.streak) >= stormCells || h.limited >= stormCells {
		// The provider is failing, not these cells: give their tries back.
		for c, n := range h.streak {
			tc := h.tries[c]
			tc.Transient -= n
			h.tries[c] = tc
		}
		clear(h.streak)
		h.limited = 0
		return storm, t
	}
	return retryCell, t
}

// refusing reports whether the endpoint has refused connections and never answered: its retries are spaced out
// like transient ones, though they use no tries.
func (h *health) refusing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.answered && !h.firstRefused.IsZero()
}

// neverConnected reports failures that mean no connection to the endpoint could be made at all.
func neverConnected(e *llm.Error) bool {
	if e.Status != 0 {
		return false
	}
	switch e.Code {
	case llm.CodeConnectionRefused, llm.CodeDNS, llm.CodeTLS:
		return true
	}
	return false
}

// stalled reports whether nothing finished for the stall timeout.
func (h *health) stalled(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stall > 0 && now.Sub(h.lastFinished) >= h.stall
}

// lastError is the last failure seen, over all attempts; nil when none.
func (h *health) lastError() *llm.Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// triesOf returns the tries cell has used so far.
func (h *health) triesOf(cell int) Tries {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tries[cell]
}

// endAttempt counts a storm that ended the attempt and returns how many attempts in a row ended so.
func (h *health) endAttempt() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.progress {
		h.storms = 0
	}
	h.storms++
	return h.storms
}

// save writes what the next attempt must know into p.
func (h *health) save(p *Progress) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p.Tries = make(map[int]Tries, len(h.tries))
	for c, t := range h.tries {
		p.Tries[c] = t
	}
	p.Answered = h.answered
	p.LastFinished = h.lastFinished
	p.Storms = h.storms
	if h.last != nil {
		p.LastClass, p.LastMessage = string(h.last.Class), h.last.Message
	}
}

// stallMessage says why a stalled pass gave up.
func (h *health) stallMessage(model string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := fmt.Sprintf("gave up: no cell of model %s finished for %s", model, h.stall)
	if h.last != nil {
		msg += "; last failure: " + h.last.Error()
	}
	return msg
}
