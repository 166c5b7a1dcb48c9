// Package breaker is the circuit breaker of a model endpoint: it notices when the provider, not the cells, is
// failing (an outage), stops every call to it but one probe at growing intervals, and lets the calls go again at
// the first answer.
//
// The state machine is gobreaker's (closed → open → half-open with one request → closed, and a generation that
// changes with every state, so that the outcome of a request admitted in an earlier state is known to be stale).
// What gobreaker does not do, and a durable pass needs, is here: the wait before a probe grows (1 s, 2 s, 4 s …
// about a minute, with jitter) instead of being fixed; admission blocks until a call may go instead of refusing
// it; the clock is injected; and the state can be saved in an activity's heartbeat and restored by the next
// attempt, on any worker, so that an outage's backoff continues instead of starting over.
//
// The caller classifies each outcome (its Kind, passed to Report); the breaker holds the rule of what trips it
// (Policy: distinct cells failing transiently in a row with no answer between, a refused connection to an
// endpoint that answered before, a wall of rate limits) and counts the outcomes against it.
package breaker

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/silicolab/silico/ratelimit"
)

// Kind is what an outcome says about the endpoint.
type Kind int

const (
	// Answered is any response that shows the endpoint serving: an answer, or a refusal of the request itself
	// (400, 404, 422). It closes an open breaker.
	Answered Kind = iota
	// Transient is a failure that may be the cell's or the provider's: a 5xx, a reset, a timeout, a malformed
	// body. Distinct cells failing so in a row, with no answer between, trip the breaker.
	Transient
	// RateLimited is a 429 that is not a quota: the account's state, never a cell's. A wall of them trips it.
	RateLimited
	// Refused is a refused connection to an endpoint that answered before: it trips the breaker at once.
	Refused
)

// Policy says when the breaker trips and how it probes. The zero value of a field means its default.
type Policy struct {
	// StormCells is how many distinct cells must fail transiently in a row, with no answer in between, before
	// the failures are taken for the provider's (default 8). Failures that say the provider is unavailable
	// trip it on fewer when the pass has fewer unfinished cells (Outcome.Unavailable); others never do, so one
	// or two cells that always get a 500 are recorded failed after their tries instead of waited on.
	StormCells int
	// StormRateLimits is how many rate limits in a row, with no answer between, trip it (default 8).
	StormRateLimits int
	// ProbeFirst is the wait before the first probe (default 1 s); each failed probe doubles it, up to ProbeMax
	// (default 1 min).
	ProbeFirst, ProbeMax time.Duration
	// Jitter spreads each wait by up to ± this fraction of it (default 0.2), so that the breakers of many
	// workers do not probe a recovering provider at the same instant.
	Jitter float64
	// Rand returns a number in [0, 1) for the jitter. Optional: math/rand/v2.
	Rand func() float64
}

// Defaults of Policy.
const (
	DefaultStormCells      = 8
	DefaultStormRateLimits = 8
	DefaultProbeFirst      = time.Second
	DefaultProbeMax        = time.Minute
	DefaultJitter          = 0.2
)

func (p Policy) withDefaults() Policy {
	if p.StormCells <= 0 {
		p.StormCells = DefaultStormCells
	}
	if p.StormRateLimits <= 0 {
		p.StormRateLimits = DefaultStormRateLimits
	}
	if p.ProbeFirst <= 0 {
		p.ProbeFirst = DefaultProbeFirst
	}
	if p.ProbeMax <= 0 {
		p.ProbeMax = DefaultProbeMax
	}
	if p.Jitter == 0 {
		p.Jitter = DefaultJitter
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	return p
}

// Wait is the wait before the probe after step failed probes (step 0: the first probe), without jitter.
func (p Policy) Wait(step int) time.Duration {
	p = p.withDefaults()
	d := p.ProbeFirst
	for range step {
		if d >= p.ProbeMax {
			break
		}
		d *= 2
	}
	return min(d, p.ProbeMax)
}

// Cause describes the failure that opened the breaker, for people: "HTTP 503", "connection refused".
type Cause struct {
	Class   string `json:"class,omitempty"`
	Status  int    `json:"status,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// String is the cause as a progress line shows it: "503 service unavailable", "connection refused".
func (c Cause) String() string {
	switch {
	case c.Status != 0 && c.Code != "":
		return fmt.Sprintf("%d %s", c.Status, c.Code)
	case c.Status != 0:
		return fmt.Sprint(c.Status)
	case c.Code != "":
		return c.Code
	case c.Class != "":
		return c.Class
	}
	return "failing"
}

// State is what a breaker knows of an outage: the zero value is a closed breaker. It travels in heartbeat
// details, so a new attempt of a pass continues the backoff where the last one was.
type State struct {
	// Open says the endpoint is taken to be down: no call goes but the probe.
	Open bool `json:"open,omitempty"`
	// Since is when the outage began (the first trip; failed probes do not move it).
	Since time.Time `json:"since,omitzero"`
	// Step counts the probes that failed in this outage: the backoff exponent.
	Step int `json:"step,omitempty"`
	// NextProbe is when the next probe may be sent.
	NextProbe time.Time `json:"next_probe,omitzero"`
	// Probes counts the probes sent in this outage.
	Probes int   `json:"probes,omitempty"`
	Cause  Cause `json:"cause,omitzero"`
	// Few says the outage showed on fewer cells than Policy.StormCells (the last cells of a pass answered "503"):
	// it cannot be told from those cells' own failure, so they are charged as they fail, at the probes' pace.
	Few bool `json:"few,omitempty"`
}

// Describe is the state at now as people read it: "provider down for 2m10s (503), next probe in 8s", "" when
// closed. A duration, not a clock time: "since 18:22:05" said neither the day nor the zone.
func (s State) Describe(now time.Time) string {
	if !s.Open {
		return ""
	}
	next := "now"
	if d := s.NextProbe.Sub(now); d > 0 {
		next = "in " + d.Round(time.Second).String()
	}
	charged := "no cell charged"
	if s.Few {
		charged = "the cells probed are charged"
	}
	return fmt.Sprintf("provider down for %s (%s), next probe %s, %s",
		max(0, now.Sub(s.Since)).Round(time.Second), s.Cause, next, charged)
}

// Ticket is the admission of one request: the generation it was admitted in, and whether it is the probe.
// Every ticket Admit returns must end in exactly one Report or Release.
type Ticket struct {
	gen   uint64
	probe bool
	at    time.Time // when it was admitted: an answer to it says the endpoint served from then on
}

// Probe says the ticket's request is the probe of an open breaker.
func (t Ticket) Probe() bool { return t.probe }

// At is when the ticket was admitted.
func (t Ticket) At() time.Time { return t.at }

// Outcome is what one request's result says, as the caller classified it.
type Outcome struct {
	// Key names the cell (unique across the passes sharing the breaker).
	Key  string
	Kind Kind
	// Unavailable says the failure's status is the provider saying it cannot serve (502, 503, 504, 529), not
	// one that a cell's own request can cause (500, a timeout, a reset). Only such failures trip the breaker on
	// fewer than Policy.StormCells distinct cells: on Pool of them, down to one.
	Unavailable bool
	// Pool is how many unfinished units (cells, or an embed pass's requests) the reporting pass has.
	Pool int
	// RetryAfter is the provider's requested wait, if any: the next probe waits at least so long.
	RetryAfter time.Duration
	// Shed says a RateLimited outcome was taken by the caller for a call the provider shed, not for the account's
	// limit: it counts in the wall of rate limits (so that the first 429 taken for the limit can complete it) but
	// never trips the breaker itself.
	Shed  bool
	Cause Cause
}

// Verdict is what the breaker makes of a reported outcome.
type Verdict struct {
	// Charge says the failure counts against the cell's tries: its ticket was admitted while the breaker was
	// closed, in the current generation, and the failure did not trip the breaker. Rate limits and refused
	// connections are never charged, nor anything that lands after the breaker opened.
	Charge bool
	// Tripped says this outcome opened the breaker (or, for a probe, kept it open).
	Tripped bool
}

// Breaker is the circuit breaker of one endpoint, safe for concurrent use. Create it with New.
type Breaker struct {
	clk ratelimit.Clock
	pol Policy

	mu  sync.Mutex
	st  State
	gen uint64
	// outages counts the trips that were not Few: the tries charged before one of them are given back.
	outages uint64
	probe   bool // the probe of this open period is out
	// seen says an outcome was reported: a restored state then no longer applies. served says an answer was.
	seen, served bool
	// streak holds the cells that failed transiently with no answer since, each with the time of its last
	// failure; limited holds the times of the rate limits. An answer clears only what failed before its request
	// was admitted: a call sent before the provider went down and answered after says nothing of now.
	streak  map[string]time.Time
	limited []time.Time
	changed chan struct{} // closed and replaced on every change of state
}

// New returns a closed breaker.
func New(clk ratelimit.Clock, p Policy) *Breaker {
	return &Breaker{clk: clk, pol: p.withDefaults(), streak: map[string]time.Time{}, changed: make(chan struct{})}
}

// notify wakes the waiters of Admit. Call with b.mu held.
func (b *Breaker) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Admit returns once a request may be sent: at once while the breaker is closed; while it is open, when this
// caller is the probe (the first to ask once NextProbe has come) or when the breaker closed. It returns ctx's
// error when ctx ends first.
func (b *Breaker) Admit(ctx context.Context) (Ticket, error) {
	b.mu.Lock()
	for {
		if !b.st.Open {
			t := Ticket{gen: b.gen, at: b.clk.Now()}
			b.mu.Unlock()
			return t, nil
		}
		now := b.clk.Now()
		if !b.probe && !now.Before(b.st.NextProbe) {
			b.probe = true
			b.st.Probes++
			t := Ticket{gen: b.gen, probe: true, at: now}
			b.mu.Unlock()
			return t, nil
		}
		ch := b.changed
		var timer <-chan time.Time
		if !b.probe {
			timer = b.clk.After(b.st.NextProbe.Sub(now))
		}
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return Ticket{}, ctx.Err()
		case <-ch:
		case <-timer:
		}
		b.mu.Lock()
	}
}

// Current reports whether t may still be sent: the breaker is closed in t's generation, or t is the probe of
// the open period it was admitted in. A request admitted while closed must not be sent once the breaker opened.
func (b *Breaker) Current(t Ticket) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return t.gen == b.gen && (t.probe || !b.st.Open)
}

// Release ends a ticket whose request was never sent. A probe's turn passes to the next caller at once.
func (b *Breaker) Release(t Ticket) {
	if !t.probe {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.gen == b.gen && b.probe {
		b.probe = false
		b.st.Probes--
		b.notify()
	}
}

// Report tells the breaker how t's request ended and returns what that means for its cell.
func (b *Breaker) Report(t Ticket, o Outcome) Verdict {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = true
	now := b.clk.Now()
	if o.Kind == Answered {
		b.served = true
		switch {
		case t.probe && t.gen == b.gen, b.st.Open && t.at.After(b.st.Since):
			// The probe, or a request admitted after the outage began, was answered: the endpoint is back.
			b.st = State{}
			b.gen++
			b.probe = false
			clear(b.streak)
			b.limited = nil
			b.notify()
		case !b.st.Open:
			maps.DeleteFunc(b.streak, func(_ string, failed time.Time) bool { return !failed.After(t.at) })
			b.limited = slices.DeleteFunc(b.limited, func(limited time.Time) bool { return !limited.After(t.at) })
		}
		return Verdict{}
	}
	if t.gen != b.gen {
		return Verdict{} // admitted before the breaker last changed: it says nothing of the cell or of now
	}
	if t.probe {
		b.probe = false
		b.st.Step++
		b.st.NextProbe = now.Add(b.wait(b.st.Step, o.RetryAfter))
		b.st.Cause = o.Cause
		b.notify()
		// An outage seen by few cells cannot be told from those cells' own failure: they pay as they fail, at
		// the probes' pace, so that cells that always fail end after their tries instead of keeping it open.
		return Verdict{Tripped: true, Charge: b.st.Few}
	}
	if b.st.Open {
		return Verdict{} // cannot happen: closed-state tickets of this generation are not admitted while open
	}
	switch o.Kind {
	case Refused:
		b.trip(now, o, false)
		return Verdict{Tripped: true}
	case RateLimited:
		b.limited = append(b.limited, now)
		if !o.Shed && len(b.limited) >= b.pol.StormRateLimits {
			b.trip(now, o, false)
			return Verdict{Tripped: true}
		}
		return Verdict{}
	}
	b.streak[o.Key] = now
	need := b.pol.StormCells
	if o.Unavailable && o.Pool > 0 {
		// A pass with few cells left would never see StormCells of them fail; a cell's own failure is a 500 or
		// a timeout, never a 503, so "unavailable" from all that is left is the provider's.
		need = max(1, min(need, o.Pool))
	}
	few := need < b.pol.StormCells
	if len(b.streak) >= need {
		b.trip(now, o, few)
		return Verdict{Tripped: true, Charge: few}
	}
	return Verdict{Charge: true}
}

// trip opens the breaker; few says fewer than StormCells cells showed the outage. Call with b.mu held.
func (b *Breaker) trip(now time.Time, o Outcome, few bool) {
	b.st = State{Open: true, Since: now, NextProbe: now.Add(b.wait(0, o.RetryAfter)), Cause: o.Cause, Few: few}
	b.gen++
	if !few {
		b.outages++
	}
	b.probe = false
	clear(b.streak)
	b.limited = nil
	b.notify()
}

// wait is the jittered wait before the probe after step failed probes, at least retryAfter.
func (b *Breaker) wait(step int, retryAfter time.Duration) time.Duration {
	d := b.pol.Wait(step)
	j := 1 + b.pol.Jitter*(2*b.pol.Rand()-1)
	return max(retryAfter, time.Duration(float64(d)*j))
}

// Served reports whether the endpoint ever answered a request of this breaker (any pass, any run on this
// worker), or a restored state said it was down after answering: a refused connection is then an outage.
func (b *Breaker) Served() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.served || b.st.Open
}

// State returns the breaker's state now.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st
}

// Outages counts the outages seen by at least StormCells cells (or by a refused connection, or a wall of rate
// limits): a caller that charged cells' tries before a change of it gives them back, for they were the
// provider's failures.
func (b *Breaker) Outages() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.outages
}

// Generation changes whenever the breaker opens or closes: a caller that saw one generation knows from another
// that an outage began or ended meanwhile.
func (b *Breaker) Generation() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gen
}

// Restore puts an open state saved by an earlier attempt into a breaker that has heard of no request yet (a new
// worker, or one whose breaker nothing used): the outage and its backoff continue where they were. A breaker
// that has heard of requests knows better than a saved state, and keeps its own. It reports whether it applied.
func (b *Breaker) Restore(s State) bool {
	if !s.Open {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen || b.st.Open {
		return false
	}
	s.Probes = max(0, s.Probes)
	b.st = s
	b.gen++
	if !s.Few {
		b.outages++
	}
	b.probe = false
	b.seen = true
	b.notify()
	return true
}

// Set holds the breakers of a worker, one per endpoint key, so that every pass calling an endpoint shares one
// breaker. Safe for concurrent use; the zero value is not usable: create it with NewSet.
type Set struct {
	clk ratelimit.Clock
	pol Policy

	mu sync.Mutex
	m  map[string]*Breaker
}

// NewSet returns an empty Set whose breakers run on clk with policy p.
func NewSet(clk ratelimit.Clock, p Policy) *Set {
	return &Set{clk: clk, pol: p, m: map[string]*Breaker{}}
}

// For returns the breaker of key, creating it closed.
func (s *Set) For(key string) *Breaker {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[key]
	if !ok {
		b = New(s.clk, s.pol)
		s.m[key] = b
	}
	return b
}
