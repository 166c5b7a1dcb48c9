package sim

import (
	"math"
	"strconv"
	"sync"
	"time"
)

// bucket is a token bucket: capacity tokens, refilled continuously at perSec, starting full.
type bucket struct {
	limit    int // per minute, for the x-ratelimit-limit-* header
	capacity float64
	perSec   float64
	tokens   float64
	last     time.Time
}

func newBucket(perMinute int, burst float64, now time.Time) *bucket {
	capacity := math.Max(1, burst*float64(perMinute))
	return &bucket{limit: perMinute, capacity: capacity, perSec: float64(perMinute) / 60, tokens: capacity, last: now}
}

func (b *bucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(b.capacity, b.tokens+now.Sub(b.last).Seconds()*b.perSec)
		b.last = now
	}
}

// wait is how long until n tokens are available (0 if they are now).
func (b *bucket) wait(n float64) time.Duration {
	if n <= b.tokens {
		return 0
	}
	return secondsDuration((n - b.tokens) / b.perSec)
}

// reset is how long until the bucket is full again, what providers call the limit's reset.
func (b *bucket) reset() time.Duration {
	return secondsDuration((b.capacity - b.tokens) / b.perSec)
}

func secondsDuration(s float64) time.Duration {
	return time.Duration(math.Ceil(s * float64(time.Second)))
}

// limitState is the state of both buckets after a decision, for the x-ratelimit-* headers.
type limitState struct {
	requests, tokens struct {
		on               bool
		limit, remaining int
		reset            time.Duration
	}
}

// limitDecision says whether a call was admitted and, if not, which limit refused it and for how long.
type limitDecision struct {
	ok       bool
	by       string // "requests" or "tokens"
	tooLarge bool   // the call costs more tokens than the bucket holds: it can never pass
	retry    time.Duration
	state    limitState
}

// limiter holds one RPM and one TPM bucket per model name, as providers do. The zero RPM/TPM means unlimited.
type limiter struct {
	rpm, tpm int
	burst    float64

	mu     sync.Mutex
	models map[string]*modelBuckets
}

type modelBuckets struct{ requests, tokens *bucket }

func newLimiter(rpm, tpm int, burst float64) *limiter {
	if rpm == 0 && tpm == 0 {
		return nil
	}
	return &limiter{rpm: rpm, tpm: tpm, burst: burst, models: make(map[string]*modelBuckets)}
}

// admit takes one request and cost tokens from model's buckets at now, or nothing when either would go below zero.
func (l *limiter) admit(model string, cost int, now time.Time) limitDecision {
	l.mu.Lock()
	defer l.mu.Unlock()
	mb := l.models[model]
	if mb == nil {
		mb = &modelBuckets{}
		if l.rpm > 0 {
			mb.requests = newBucket(l.rpm, l.burst, now)
		}
		if l.tpm > 0 {
			mb.tokens = newBucket(l.tpm, l.burst, now)
		}
		l.models[model] = mb
	}
	var d limitDecision
	d.ok = true
	if b := mb.requests; b != nil {
		b.refill(now)
		if w := b.wait(1); w > 0 {
			d.ok, d.by, d.retry = false, "requests", w
		}
	}
	if b := mb.tokens; b != nil {
		b.refill(now)
		switch {
		case float64(cost) > b.capacity:
			d.ok, d.by, d.tooLarge, d.retry = false, "tokens", true, b.reset()
		case b.wait(float64(cost)) > d.retry:
			d.ok, d.by, d.retry = false, "tokens", b.wait(float64(cost))
		}
	}
	if d.ok {
		if b := mb.requests; b != nil {
			b.tokens--
		}
		if b := mb.tokens; b != nil {
			b.tokens -= float64(cost)
		}
	}
	if b := mb.requests; b != nil {
		d.state.requests.on, d.state.requests.limit = true, b.limit
		d.state.requests.remaining, d.state.requests.reset = int(math.Floor(b.tokens)), b.reset()
	}
	if b := mb.tokens; b != nil {
		d.state.tokens.on, d.state.tokens.limit = true, b.limit
		d.state.tokens.remaining, d.state.tokens.reset = int(math.Floor(b.tokens)), b.reset()
	}
	return d
}

// formatReset writes a reset duration the way OpenAI does ("1s", "6m0s", "17ms", "1.5s").
func formatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return d.Round(time.Millisecond).String()
}

// retryAfterSeconds is d in whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	return strconv.FormatInt(max(s, 1), 10)
}
