// Package ratelimit gates the model calls of one seed pass: a concurrency cap, a requests-per-minute token
// bucket, a tokens-per-minute token bucket (fed by estimates and trued up with reported usage), and a pause
// that the provider can impose with Retry-After. Which 429s pause every call (the account's limit) and which
// only the refused one (a call the provider shed), and how the concurrency follows their share, is the rule in
// shed.go. Across a fleet, the workflow hands each pass its share of a
// model's limits; a Limiter enforces one share.
//
// By default buckets start full, as providers' buckets do. With an RPM limit of R and Burst 1, the first minute
// can then see up to about 2R requests (the full bucket plus a minute of refill); the steady-state rate is R and
// is best read over a sliding 60 s window, not as an average over the whole run. With StartEmpty a bucket fills
// from zero: no first-minute burst, the steady rate from the start. Seed passes use StartEmpty: a pass that starts
// after another pass of its model (or a retried attempt) cannot know how much of the provider's bucket the
// earlier one used, and an empty start keeps the sum of the passes' buckets below the provider's at every moment.
package ratelimit

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// Clock is the limiter's view of time; SystemClock in production, a fake in tests.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock returns the real clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Limits are the gates of a limiter. Zero values mean unlimited.
type Limits struct {
	// Concurrency caps permits held at once.
	Concurrency int
	// RPM is requests per minute.
	RPM int
	// TPM is tokens per minute.
	TPM int
	// Burst is each bucket's capacity as a fraction of one minute's limit. Optional: 0 means 1.0 (a bucket holds
	// one minute of requests or tokens). A bucket always holds at least one request.
	Burst float64
	// StartEmpty makes the buckets start empty instead of full (see the package doc).
	StartEmpty bool `json:",omitempty"`
}

// Stats describe how much a limiter has held calls back.
type Stats struct {
	// Acquired counts permits handed out.
	Acquired int64
	// Waits counts acquisitions that could not proceed at once.
	Waits int64
	// WaitTime is the total time acquisitions spent waiting (including those cancelled).
	WaitTime time.Duration
	// PausedTime is the total length of pauses (overlapping pauses counted once).
	PausedTime time.Duration
	// InFlight is the number of permits currently held.
	InFlight int
	// Backoffs counts the times Backoff lowered the concurrency.
	Backoffs int64
}

// Limiter enforces Limits on the calls of one pass. Acquire waits until every gate admits a call; waiters are
// served in arrival order, so none starves (a large request at the head holds back smaller ones behind it). It
// is safe for concurrent use and starts no goroutines.
type Limiter struct {
	clk Clock

	mu          sync.Mutex
	limits      Limits
	inFlight    int
	rpm, tpm    bucket
	pausedUntil time.Time
	queue       []*waiter
	stats       Stats
	// lowered is the concurrency Backoff set below the limit, 0 when none; successes counts the calls that
	// succeeded since it last changed, and lastBackoff is when Backoff last lowered it.
	lowered     int
	successes   int
	lastBackoff time.Time
	// seen holds the latest outcomes for the 429 rule (shed.go); exhaustedUntil is when the account's budget,
	// used up by an answer's account, refills.
	seen           outcomes
	exhaustedUntil time.Time
}

// waiter is one blocked Acquire. wake (capacity 1) is signalled when the waiter may have become able to
// proceed: it reached the head of the queue, or a permit was released, or the limits changed.
type waiter struct {
	wake chan struct{}
}

// bucket is a token bucket refilled continuously at rate per second up to capacity. tokens may be negative
// (debt): an oversized request or a usage true-up can overdraw it.
type bucket struct {
	limited  bool
	rate     float64 // tokens per second
	capacity float64
	tokens   float64
	last     time.Time
}

func newBucket(perMinute int, burst float64, empty bool, now time.Time) bucket {
	if perMinute <= 0 {
		return bucket{}
	}
	b := bucket{limited: true, last: now}
	b.configure(perMinute, burst)
	if !empty {
		b.tokens = b.capacity
	}
	return b
}

func (b *bucket) configure(perMinute int, burst float64) {
	b.rate = float64(perMinute) / 60
	b.capacity = max(float64(perMinute)*burst, 1)
}

func (b *bucket) refill(now time.Time) {
	if !b.limited {
		return
	}
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(b.capacity, b.tokens+dt.Seconds()*b.rate)
		b.last = now
	}
}

// wait is how long until n tokens can be taken: when the bucket holds n, or, for n above the capacity, when it
// is full (the request then overdraws it instead of waiting for ever).
func (b *bucket) wait(n float64) time.Duration {
	if !b.limited {
		return 0
	}
	need := min(n, b.capacity)
	// The epsilon absorbs float rounding of the refill, which would otherwise cost an extra 1 ns timer.
	if b.tokens+1e-9 >= need {
		return 0
	}
	secs := (need - b.tokens) / b.rate
	// Round up so that the bucket really holds enough when the timer fires.
	return time.Duration(math.Ceil(secs * float64(time.Second)))
}

func (b *bucket) take(n float64) {
	if b.limited {
		b.tokens -= n
	}
}

// give returns n tokens (or takes -n) after the fact, capped at the capacity.
func (b *bucket) give(n float64) {
	if b.limited {
		b.tokens = min(b.capacity, b.tokens+n)
	}
}

// New returns a limiter enforcing l, reading time from clk (SystemClock() in production).
func New(l Limits, clk Clock) *Limiter {
	l = normalize(l)
	now := clk.Now()
	return &Limiter{
		clk:    clk,
		limits: l,
		rpm:    newBucket(l.RPM, l.Burst, l.StartEmpty, now),
		tpm:    newBucket(l.TPM, l.Burst, l.StartEmpty, now),
	}
}

func normalize(l Limits) Limits {
	if l.Burst <= 0 {
		l.Burst = 1
	}
	l.Concurrency = max(l.Concurrency, 0)
	l.RPM = max(l.RPM, 0)
	l.TPM = max(l.TPM, 0)
	return l
}

// Permit is one admitted call. Release it exactly once when the call is over (further Releases do nothing).
type Permit struct {
	l        *Limiter
	reserved int
	released bool
}

// Acquire waits until a call needing about tokens tokens (prompt estimate plus the completion budget) may
// start: a concurrency slot is free, the RPM bucket holds a request, the TPM bucket holds the tokens (a request
// larger than the bucket goes once the bucket is full, leaving it in debt), and no pause is active. It returns
// ctx.Err() if ctx ends first, leaving nothing held.
func (l *Limiter) Acquire(ctx context.Context, tokens int) (*Permit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tokens = max(tokens, 0)

	l.mu.Lock()
	now := l.clk.Now()
	if len(l.queue) == 0 {
		if ok, _ := l.admissible(now, tokens); ok {
			p := l.grant(tokens)
			l.mu.Unlock()
			return p, nil
		}
	}

	w := &waiter{wake: make(chan struct{}, 1)}
	l.queue = append(l.queue, w)
	l.stats.Waits++
	start := now
	for {
		var timer <-chan time.Time
		if l.queue[0] == w {
			ok, delay := l.admissible(now, tokens)
			if ok {
				l.queue[0] = nil
				l.queue = l.queue[1:]
				l.wakeHead()
				l.stats.WaitTime += now.Sub(start)
				p := l.grant(tokens)
				l.mu.Unlock()
				return p, nil
			}
			if delay > 0 {
				timer = l.clk.After(delay)
			}
			// delay 0: only the concurrency cap holds us; a Release wakes us.
		}
		l.mu.Unlock()

		select {
		case <-ctx.Done():
			l.mu.Lock()
			l.remove(w)
			l.stats.WaitTime += l.clk.Now().Sub(start)
			l.mu.Unlock()
			return nil, ctx.Err()
		case <-w.wake:
		case <-timer:
		}

		l.mu.Lock()
		now = l.clk.Now()
	}
}

// admissible reports whether a call of tokens tokens may start now, and if not, how long until the rate gates
// and the pause allow it (0 when only the concurrency cap holds it back). Call with l.mu held.
func (l *Limiter) admissible(now time.Time, tokens int) (bool, time.Duration) {
	l.rpm.refill(now)
	l.tpm.refill(now)
	var delay time.Duration
	if now.Before(l.pausedUntil) {
		delay = l.pausedUntil.Sub(now)
	}
	delay = max(delay, l.rpm.wait(1), l.tpm.wait(float64(tokens)))
	conc := l.concurrency()
	slot := conc == 0 || l.inFlight < conc
	return slot && delay == 0, delay
}

// concurrency is the cap in force: the limit, or lower after Backoff. 0 means unlimited. Call with l.mu held.
func (l *Limiter) concurrency() int {
	if l.lowered > 0 && (l.limits.Concurrency == 0 || l.lowered < l.limits.Concurrency) {
		return l.lowered
	}
	return l.limits.Concurrency
}

// backoffEpisode is how close together rate-limit answers count as one: the calls in flight when the first came
// were sent at the old rate and answer within about a latency, so lowering again for each of them would
// collapse the concurrency for one burst.
const backoffEpisode = time.Second

// Backoff lowers the concurrency: to half the calls in flight, at least one (multiplicative decrease). Answered
// raises it back. Lowerings within backoffEpisode of the last count as one. RateLimited calls it by the 429 rule;
// a pass calls it itself when an outage ends, to start again low.
func (l *Limiter) Backoff() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.backoffLocked(l.clk.Now())
}

// backoffLocked is Backoff at now; it reports whether it lowered the concurrency. Call with l.mu held.
func (l *Limiter) backoffLocked(now time.Time) bool {
	if !l.lastBackoff.IsZero() && now.Sub(l.lastBackoff) < backoffEpisode {
		return false
	}
	l.lastBackoff = now
	cur := l.inFlight
	if c := l.concurrency(); c > 0 {
		cur = min(cur, c)
	}
	l.lowered = max(1, cur/2)
	l.successes = 0
	l.seen.changed()
	l.stats.Backoffs++
	return true
}

// Answered notes a call that was answered (not rate limited), for the share of 429s. After as many of them as
// the lowered concurrency, the concurrency grows by one (additive increase), until it is back at the limit.
func (l *Limiter) Answered() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen.add(false)
	if l.lowered == 0 {
		return
	}
	l.successes++
	if l.successes < l.lowered {
		return
	}
	l.successes = 0
	l.lowered++
	if l.limits.Concurrency > 0 && l.lowered >= l.limits.Concurrency {
		l.lowered = 0
	}
	l.wakeHead()
}

// grant takes a slot and the tokens. Call with l.mu held, after admissible said yes.
func (l *Limiter) grant(tokens int) *Permit {
	l.inFlight++
	l.rpm.take(1)
	l.tpm.take(float64(tokens))
	l.stats.Acquired++
	return &Permit{l: l, reserved: tokens}
}

// wakeHead signals the first waiter, if any, to re-check the gates. Call with l.mu held.
func (l *Limiter) wakeHead() {
	if len(l.queue) > 0 {
		select {
		case l.queue[0].wake <- struct{}{}:
		default:
		}
	}
}

// remove drops a cancelled waiter; if it was the head, the next waiter takes over. Call with l.mu held.
func (l *Limiter) remove(w *waiter) {
	i := slices.Index(l.queue, w)
	if i < 0 {
		return
	}
	l.queue = slices.Delete(l.queue, i, i+1)
	if i == 0 {
		l.wakeHead()
	}
}

// Release ends the call: it frees the concurrency slot and trues up the TPM bucket with the tokens the call
// really used (actualTokens - reserved; the bucket may go into debt, so estimation errors do not accumulate).
// actualTokens 0 (a failed call that used nothing) refunds the whole reservation; a negative value means the
// usage is unknown and keeps the reservation as it was. Releasing more than once does nothing.
func (p *Permit) Release(actualTokens int) {
	if p == nil {
		return
	}
	l := p.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.released {
		return
	}
	p.released = true
	l.inFlight--
	if actualTokens >= 0 {
		l.tpm.refill(l.clk.Now())
		l.tpm.give(float64(p.reserved - actualTokens))
	}
	l.wakeHead()
}

// SetLimits changes the limits while calls run (the workflow rebalancing a model's shares). Later acquisitions
// see the new limits; permits already held are unaffected. A bucket keeps its current level, cut to the new
// capacity, so raising a limit causes no sudden burst; a gate that was unlimited starts full.
func (l *Limiter) SetLimits(nl Limits) {
	nl = normalize(nl)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	reconfigure := func(b *bucket, perMinute int) {
		switch {
		case perMinute <= 0:
			*b = bucket{}
		case !b.limited:
			*b = newBucket(perMinute, nl.Burst, nl.StartEmpty, now)
		default:
			b.refill(now)
			b.configure(perMinute, nl.Burst)
			b.tokens = min(b.tokens, b.capacity)
		}
	}
	reconfigure(&l.rpm, nl.RPM)
	reconfigure(&l.tpm, nl.TPM)
	l.limits = nl
	l.wakeHead()
}

// Limits returns the limits in force.
func (l *Limiter) Limits() Limits {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limits
}

// PauseUntil holds every acquisition until t (a provider's Retry-After, or an x-ratelimit-remaining of 0 until
// its reset). Of several pauses the later end wins; a pause never shortens one already set.
func (l *Limiter) PauseUntil(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pauseLocked(l.clk.Now(), t)
}

// pauseLocked is PauseUntil at now. Call with l.mu held.
func (l *Limiter) pauseLocked(now, t time.Time) {
	if !t.After(now) || !t.After(l.pausedUntil) {
		return
	}
	from := now
	if l.pausedUntil.After(now) {
		from = l.pausedUntil
	}
	l.stats.PausedTime += t.Sub(from)
	l.pausedUntil = t
	// The head may be sleeping towards an earlier time; it re-checks on waking, so no signal is needed.
}

// Stats returns the limiter's counters.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.InFlight = l.inFlight
	return s
}
