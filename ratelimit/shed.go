package ratelimit

import (
	"hash/fnv"
	"time"
)

// The 429 rule, in one place. A provider answers 429 for two different reasons, and braking the same way for both
// is wrong for one of them:
//
//   - the account's limit is used up (its RPM or TPM bucket is empty): every call would get a 429 until it
//     refills, so the whole model must wait, and send less at once;
//   - the provider shed this one call under load (a gateway in front of several backends, a local server with a
//     small queue): the next call may well be answered, so only the refused call waits its Retry-After while the
//     others go on. Holding every call for each shed one turned a 20 % shed rate with Retry-After 1 s into a 6×
//     slowdown, and 5 % with Retry-After 20 s into one 20 s stop per 429.
//
// A 429 is taken for the account's limit (RateLimited's Wall) when the evidence says so: the model declares an RPM
// or TPM (the limiter enforces it, so a 429 means the account's budget is shared with someone else or smaller than
// declared), the 429 itself or an earlier answer said a budget of the window is used up (x-ratelimit-remaining of
// 0: RateLimited's exhausted, or Exhausted), at least WallShare of the last OutcomeWindow outcomes were 429s, or
// the last WallRun were. Otherwise it is shed. The concurrency follows AIMD on the share of 429s, not on each one:
// it is halved when more than DecreaseShare of the outcomes since the last change were 429s, and grows by one
// after as many answers as its value (Answered).
const (
	// OutcomeWindow is how many of the latest outcomes (answers and 429s) the shares are read over.
	OutcomeWindow = 32
	// MinOutcomes is how many outcomes a share needs before it is judged: the first calls of a pass say little.
	MinOutcomes = OutcomeWindow / 2
	// WallShare is the share of 429s among the last OutcomeWindow outcomes at which they are taken for the
	// account's limit: most calls refused. A provider shedding 20 % of its calls at random reaches it over 32
	// outcomes about once in 10,000 windows.
	WallShare = 0.5
	// WallRun is how many 429s in a row, with no answer between, are a wall whatever the window holds: a limit
	// that starts after many answers shows at once instead of after half a window. 20 % shed at random makes a
	// run of 8 about once in 400,000 outcomes.
	WallRun = 8
	// DecreaseShare is the share of 429s since the concurrency last changed above which it is halved. A provider
	// that sheds more when sent more sheds less after; a fixed share of random refusals (20 %) rarely crosses it.
	DecreaseShare = 0.35
	// RetryJitter spreads a shed call's Retry-After by up to this fraction of it (later, never earlier), so that
	// calls refused together do not come back together.
	RetryJitter = 0.2
)

// Verdict is what a 429 means for the calls of a limiter.
type Verdict struct {
	// Wall says the 429 was taken for the account's limit: every acquisition pauses for its Retry-After and the
	// concurrency is lowered. Otherwise only the refused call waits.
	Wall bool
	// Decreased says the concurrency was lowered (a wall, or the share of 429s crossed DecreaseShare).
	Decreased bool
}

// outcomes is a ring of the latest OutcomeWindow outcomes, true for a 429.
type outcomes struct {
	ring [OutcomeWindow]bool
	n    int // outcomes recorded, ever
	// since counts the outcomes recorded since the concurrency last changed.
	since int
}

func (o *outcomes) add(limited bool) {
	o.ring[o.n%OutcomeWindow] = limited
	o.n++
	o.since++
}

// last counts the 429s among the latest k outcomes (k at most OutcomeWindow and o.n).
func (o *outcomes) last(k int) int {
	c := 0
	for i := range k {
		if o.ring[(o.n-1-i)%OutcomeWindow] {
			c++
		}
	}
	return c
}

// wall reports whether the latest WallRun outcomes were 429s, or the ring holds at least MinOutcomes outcomes of
// which at least WallShare were.
func (o *outcomes) wall() bool {
	if o.n >= WallRun && o.last(WallRun) == WallRun {
		return true
	}
	k := min(o.n, OutcomeWindow)
	return k >= MinOutcomes && float64(o.last(k)) >= WallShare*float64(k)
}

// overShare reports whether more than DecreaseShare of the outcomes since the concurrency last changed (the
// latest OutcomeWindow of them, at least MinOutcomes) were 429s. Outcomes before the change were of calls sent at
// the old concurrency and say nothing of the new one.
func (o *outcomes) overShare() bool {
	k := min(o.since, OutcomeWindow)
	return k >= MinOutcomes && float64(o.last(k)) > DecreaseShare*float64(k)
}

// changed starts the count since the concurrency changed.
func (o *outcomes) changed() { o.since = 0 }

// RateLimited records a 429 that asked for retryAfter (0 when it named none), exhausted when it said a budget of
// the window is used up, and applies the rule above: for a
// wall it pauses every acquisition until retryAfter from now and lowers the concurrency (Backoff); for a shed call
// it lowers the concurrency only when the share of 429s crossed DecreaseShare, and pauses nothing: the caller
// waits ShedWait before sending that call again.
func (l *Limiter) RateLimited(retryAfter time.Duration, exhausted bool) Verdict {
	l.mu.Lock()
	now := l.clk.Now()
	l.seen.add(true)
	declared := l.limits.RPM > 0 || l.limits.TPM > 0
	wall := declared || exhausted || now.Before(l.exhaustedUntil) || l.seen.wall()
	if wall {
		l.pauseLocked(now, now.Add(retryAfter))
		decreased := l.backoffLocked(now)
		l.mu.Unlock()
		return Verdict{Wall: true, Decreased: decreased}
	}
	decreased := false
	if l.seen.overShare() {
		decreased = l.backoffLocked(now)
	}
	l.mu.Unlock()
	return Verdict{Decreased: decreased}
}

// Exhausted notes an answer saying a budget of the account's window is used up until t (x-ratelimit-remaining
// of 0 until its reset): every acquisition pauses until then, and a 429 before then is the account's limit.
func (l *Limiter) Exhausted(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.exhaustedUntil = later(l.exhaustedUntil, t)
	l.pauseLocked(l.clk.Now(), t)
}

// ShedWait is how long a call refused as shed waits before it is sent again: the provider's retryAfter (or
// fallback when it named none) stretched by a jitter of up to RetryJitter of it, drawn from key (the call's
// identity and try, say), so that the calls refused together spread out while each wait is reproducible.
func ShedWait(retryAfter, fallback time.Duration, key uint64) time.Duration {
	if retryAfter <= 0 {
		retryAfter = fallback
	}
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(key >> (8 * i))
	}
	_, _ = h.Write(b[:])
	frac := float64(h.Sum64()>>11) / float64(1<<53) // uniform in [0, 1)
	return retryAfter + time.Duration(frac*RetryJitter*float64(retryAfter))
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
