package ratelimit

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fakeClock is a manual clock. Tests run inside a synctest bubble, so synctest.Wait tells them when every
// goroutine is blocked (on a fake timer or a wake-up) before they move time on.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves time on by d and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
		} else {
			t.ch <- c.now
		}
	}
	c.timers = kept
}

// acquirer runs Acquire in a goroutine and lets the test ask whether it has returned.
type acquirer struct {
	done   chan struct{}
	permit *Permit
	err    error
}

func goAcquire(ctx context.Context, l *Limiter, tokens int) *acquirer {
	a := &acquirer{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.permit, a.err = l.Acquire(ctx, tokens)
	}()
	synctest.Wait()
	return a
}

func (a *acquirer) returned() bool {
	synctest.Wait()
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

func mustAcquire(t *testing.T, l *Limiter, tokens int) *Permit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, err := l.Acquire(ctx, tokens)
	if err != nil {
		t.Fatalf("Acquire(%d): %v", tokens, err)
	}
	return p
}

func TestRPMBucketRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{RPM: 60}, clk)
		// The bucket starts full: a minute's worth at once.
		for range 60 {
			mustAcquire(t, l, 0).Release(0)
		}
		if s := l.Stats(); s.Waits != 0 || s.Acquired != 60 {
			t.Fatalf("stats after a full bucket = %+v, want 60 acquired without waiting", s)
		}
		// Then one per second (60/min).
		a := goAcquire(context.Background(), l, 0)
		clk.Advance(999 * time.Millisecond)
		if a.returned() {
			t.Fatalf("61st request admitted after 999ms, want 1s")
		}
		clk.Advance(time.Millisecond)
		if !a.returned() || a.err != nil {
			t.Fatalf("61st request not admitted after 1s (err %v)", a.err)
		}
		// A long idle refills to capacity, not beyond.
		clk.Advance(time.Hour)
		for range 60 {
			mustAcquire(t, l, 0)
		}
		if a := goAcquire(context.Background(), l, 0); a.returned() {
			t.Fatalf("bucket held more than its capacity after an idle hour")
		} else {
			clk.Advance(time.Second)
			a.returned()
		}
		s := l.Stats()
		if s.Waits != 2 || s.WaitTime != 2*time.Second {
			t.Errorf("stats = %+v, want 2 waits of 2s in total", s)
		}
	})
}

func TestBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{RPM: 120, Burst: 0.25}, clk) // capacity 30, refill 2/s
		for range 30 {
			mustAcquire(t, l, 0)
		}
		a := goAcquire(context.Background(), l, 0)
		if a.returned() {
			t.Fatalf("request beyond the burst admitted at once")
		}
		clk.Advance(500 * time.Millisecond)
		if !a.returned() {
			t.Fatalf("request not admitted after the 0.5s refill of one token")
		}
		// A tiny burst still admits one request.
		l = New(Limits{RPM: 10, Burst: 0.001}, clk)
		mustAcquire(t, l, 0)
		if a := goAcquire(context.Background(), l, 0); a.returned() {
			t.Fatalf("second request admitted at once with capacity 1")
		} else {
			clk.Advance(6 * time.Second)
			if !a.returned() {
				t.Fatalf("second request not admitted after 6s at 10 RPM")
			}
		}
	})
}

// TestSteadyStateRate runs busy workers for three virtual minutes on the system clock inside a synctest bubble:
// the first minute may reach about twice the RPM (full bucket plus refill), and every later 60 s window stays
// at the RPM.
func TestSteadyStateRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rpm = 300
		l := New(Limits{RPM: rpm, Concurrency: 16}, SystemClock())
		start := time.Now()
		end := start.Add(3 * time.Minute)
		var mu sync.Mutex
		var grants []time.Duration
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					p, err := l.Acquire(context.Background(), 0)
					if err != nil {
						t.Error(err)
						return
					}
					now := time.Now()
					if !now.Before(end) {
						p.Release(0)
						return
					}
					mu.Lock()
					grants = append(grants, now.Sub(start))
					mu.Unlock()
					time.Sleep(50 * time.Millisecond) // the call
					p.Release(0)
				}
			})
		}
		wg.Wait()

		first := 0
		for _, g := range grants {
			if g < time.Minute {
				first++
			}
		}
		if first > 2*rpm || first < 2*rpm-2 {
			t.Errorf("first minute: %d requests, want about %d (full bucket plus a minute of refill)", first, 2*rpm)
		}
		// Sliding windows starting after the first minute.
		maxWin := 0
		j := 0
		for i := range grants {
			if grants[i] < time.Minute {
				continue
			}
			for j < len(grants) && grants[j] < grants[i]+time.Minute {
				j++
			}
			if grants[i]+time.Minute <= 3*time.Minute {
				maxWin = max(maxWin, j-i)
			}
		}
		if maxWin > rpm+1 || maxWin < rpm-1 {
			t.Errorf("steady state: busiest 60s window had %d requests, want %d", maxWin, rpm)
		}
		if total := len(grants); total < 4*rpm-2 || total > 4*rpm {
			t.Errorf("3 minutes: %d requests, want about %d", total, 4*rpm)
		}
	})
}

func TestTPMTrueUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{TPM: 600}, clk) // capacity 600, refill 10/s
		tokens := func() float64 { l.mu.Lock(); defer l.mu.Unlock(); return l.tpm.tokens }

		p := mustAcquire(t, l, 500)
		if got := tokens(); got != 100 {
			t.Fatalf("after reserving 500: %v tokens, want 100", got)
		}
		// Used less than estimated: the difference comes back.
		p.Release(200)
		if got := tokens(); got != 400 {
			t.Fatalf("after using 200 of 500: %v tokens, want 400", got)
		}
		p.Release(0) // idempotent
		if got := tokens(); got != 400 {
			t.Fatalf("second Release changed the bucket: %v tokens, want 400", got)
		}
		// Used more than estimated: the bucket goes into debt.
		p = mustAcquire(t, l, 400)
		p.Release(900)
		if got := tokens(); got != -500 {
			t.Fatalf("after using 900 of 400: %v tokens, want -500", got)
		}
		a := goAcquire(context.Background(), l, 100)
		clk.Advance(59 * time.Second)
		if a.returned() {
			t.Fatalf("admitted while the debt is being paid off")
		}
		clk.Advance(time.Second) // -500 + 60s*10/s = 100
		if !a.returned() {
			t.Fatalf("not admitted once the bucket holds 100 again")
		}
		// Unknown usage keeps the reservation.
		clk.Advance(time.Hour)
		p = mustAcquire(t, l, 250)
		p.Release(-1)
		if got := tokens(); got != 350 {
			t.Fatalf("after unknown usage: %v tokens, want 350", got)
		}
		// A refund never overfills the bucket.
		clk.Advance(time.Hour)
		p = mustAcquire(t, l, 10)
		clk.Advance(time.Hour)
		p.Release(0)
		if got := tokens(); got != 600 {
			t.Fatalf("refund after refill: %v tokens, want the capacity 600", got)
		}
	})
}

func TestOversizedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{TPM: 60}, clk) // capacity 60, refill 1/s
		mustAcquire(t, l, 30).Release(-1)
		// 100 tokens can never fit; it goes as soon as the bucket is full (30s), leaving a debt of 40.
		a := goAcquire(context.Background(), l, 100)
		clk.Advance(29 * time.Second)
		if a.returned() {
			t.Fatalf("oversized request admitted before the bucket is full")
		}
		clk.Advance(time.Second)
		if !a.returned() || a.err != nil {
			t.Fatalf("oversized request not admitted with a full bucket (err %v)", a.err)
		}
		// The next one waits for the debt: -40 → 60 takes 100s.
		b := goAcquire(context.Background(), l, 100)
		clk.Advance(99 * time.Second)
		if b.returned() {
			t.Fatalf("second oversized request admitted during the debt")
		}
		clk.Advance(time.Second)
		if !b.returned() {
			t.Fatalf("second oversized request never admitted")
		}
	})
}

func TestPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{}, clk) // no limits: only the pause gates
		t0 := clk.Now()
		l.PauseUntil(t0.Add(5 * time.Second))
		l.PauseUntil(t0.Add(2 * time.Second)) // an earlier end does not shorten it
		a := goAcquire(context.Background(), l, 0)
		clk.Advance(2 * time.Second)
		if a.returned() {
			t.Fatalf("admitted after 2s; the later pause (5s) must win")
		}
		l.PauseUntil(t0.Add(8 * time.Second)) // extended while active
		clk.Advance(3 * time.Second)
		if a.returned() {
			t.Fatalf("admitted at 5s though the pause was extended to 8s")
		}
		clk.Advance(3 * time.Second)
		if !a.returned() {
			t.Fatalf("not admitted after the pause ended")
		}
		l.PauseUntil(t0) // in the past: ignored
		mustAcquire(t, l, 0)
		if s := l.Stats(); s.PausedTime != 8*time.Second || s.WaitTime != 8*time.Second || s.Waits != 1 {
			t.Errorf("stats = %+v, want 8s paused (overlaps once), one wait of 8s", s)
		}
	})
}

func TestConcurrencyCap(t *testing.T) {
	const limit, workers = 4, 64
	l := New(Limits{Concurrency: limit}, SystemClock())
	var inFlight, peak atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range 20 {
				p, err := l.Acquire(context.Background(), 1)
				if err != nil {
					t.Error(err)
					return
				}
				n := inFlight.Add(1)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				runtime.Gosched()
				inFlight.Add(-1)
				p.Release(1)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > limit || p < 1 {
		t.Errorf("peak in flight = %d, want ≤ %d", p, limit)
	}
	if s := l.Stats(); s.InFlight != 0 || s.Acquired != workers*20 {
		t.Errorf("stats = %+v, want 0 in flight and %d acquired", s, workers*20)
	}
}

func TestFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{Concurrency: 1}, clk)
		held := mustAcquire(t, l, 0)
		var order []int
		var mu sync.Mutex
		for i := range 5 {
			a := goAcquire(context.Background(), l, 0) // goAcquire waits until it is queued
			go func() {
				<-a.done
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				a.permit.Release(0)
			}()
		}
		held.Release(0)
		synctest.Wait()
		for i, got := range order {
			if got != i {
				t.Fatalf("served in order %v, want 0..4", order)
			}
		}
		if len(order) != 5 {
			t.Fatalf("served %d of 5 waiters", len(order))
		}

		// A large request at the head is not overtaken by small ones behind it.
		l = New(Limits{TPM: 60}, clk)
		mustAcquire(t, l, 60)
		big := goAcquire(context.Background(), l, 50)
		small := goAcquire(context.Background(), l, 1)
		clk.Advance(49 * time.Second)
		if big.returned() || small.returned() {
			t.Fatalf("admitted before 50 tokens were back (big %v, small %v)", big.returned(), small.returned())
		}
		clk.Advance(time.Second)
		if !big.returned() {
			t.Fatalf("big request not admitted at 50s")
		}
		clk.Advance(time.Second)
		if !small.returned() {
			t.Fatalf("small request not admitted after the big one")
		}
	})
}

func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{Concurrency: 1, RPM: 60}, clk)

		done, cancelDone := context.WithCancel(context.Background())
		cancelDone()
		if p, err := l.Acquire(done, 0); p != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire with a cancelled ctx = %v, %v; want nil, context.Canceled", p, err)
		}

		held := mustAcquire(t, l, 0)
		ctx, cancel := context.WithCancel(context.Background())
		head := goAcquire(ctx, l, 0)
		next := goAcquire(context.Background(), l, 0)
		cancel()
		if !head.returned() || !errors.Is(head.err, context.Canceled) || head.permit != nil {
			t.Fatalf("cancelled Acquire = %v, %v; want nil, context.Canceled", head.permit, head.err)
		}
		if next.returned() {
			t.Fatalf("waiter behind the cancelled one admitted while the slot is held")
		}
		held.Release(0)
		if !next.returned() || next.err != nil {
			t.Fatalf("waiter behind the cancelled head not admitted after Release (err %v)", next.err)
		}
		l.mu.Lock()
		queued, inFlight := len(l.queue), l.inFlight
		l.mu.Unlock()
		if queued != 0 || inFlight != 1 {
			t.Fatalf("after cancel: %d queued, %d in flight; want 0 and 1", queued, inFlight)
		}

		// Cancelled while waiting for the rate: nothing is taken from the bucket.
		next.permit.Release(0)
		tokensBefore := func() float64 { l.mu.Lock(); defer l.mu.Unlock(); return l.rpm.tokens }()
		for range int(math.Floor(tokensBefore)) {
			mustAcquire(t, l, 0).Release(0)
		}
		ctx, cancel = context.WithTimeout(context.Background(), time.Hour) // a deadline is just a cancellation
		waiting := goAcquire(ctx, l, 0)
		cancel()
		if !waiting.returned() || !errors.Is(waiting.err, context.Canceled) {
			t.Fatalf("Acquire waiting for the RPM bucket = %v, want context.Canceled", waiting.err)
		}
		clk.Advance(time.Second)
		mustAcquire(t, l, 0) // the refilled token is still there
	})
}

func TestSetLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{Concurrency: 1, RPM: 60}, clk)
		for range 60 {
			mustAcquire(t, l, 0).Release(0)
		}
		// Doubling the RPM halves the wait for the next token.
		l.SetLimits(Limits{Concurrency: 1, RPM: 120})
		a := goAcquire(context.Background(), l, 0)
		clk.Advance(500 * time.Millisecond)
		if !a.returned() {
			t.Fatalf("not admitted 0.5s after raising RPM to 120")
		}
		// Raising the concurrency admits a waiter at once.
		l.SetLimits(Limits{Concurrency: 1})
		b := goAcquire(context.Background(), l, 0)
		if b.returned() {
			t.Fatalf("second permit admitted with concurrency 1")
		}
		l.SetLimits(Limits{Concurrency: 2})
		if !b.returned() {
			t.Fatalf("waiter not admitted after raising concurrency to 2")
		}
		// Lowering it holds new acquisitions until enough permits are released.
		l.SetLimits(Limits{Concurrency: 1})
		c := goAcquire(context.Background(), l, 0)
		a.permit.Release(0)
		if c.returned() {
			t.Fatalf("admitted with 1 in flight under the lowered cap 1")
		}
		b.permit.Release(0)
		if !c.returned() {
			t.Fatalf("not admitted after the lowered cap freed")
		}
		// A new TPM gate starts full; lowering a limit cuts the bucket to the new capacity.
		l.SetLimits(Limits{TPM: 600})
		mustAcquire(t, l, 600)
		l.SetLimits(Limits{TPM: 100, RPM: 10})
		if got := l.Limits(); got != (Limits{TPM: 100, RPM: 10, Burst: 1}) {
			t.Errorf("Limits() = %+v", got)
		}
		l.mu.Lock()
		tpm, rpm := l.tpm.tokens, l.rpm.tokens
		l.mu.Unlock()
		if tpm != 0 || rpm != 10 {
			t.Errorf("after SetLimits: tpm %v rpm %v tokens, want 0 (kept) and 10 (new gate, full)", tpm, rpm)
		}
	})
}

func TestReleaseNil(t *testing.T) {
	var p *Permit
	p.Release(5) // no panic
}

func TestStartEmptyHasNoBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{RPM: 60, TPM: 600, StartEmpty: true}, clk) // one request and 10 tokens per second
		a := goAcquire(context.Background(), l, 10)
		if a.returned() {
			t.Fatalf("an empty bucket admitted a request at once")
		}
		clk.Advance(999 * time.Millisecond)
		if a.returned() {
			t.Fatalf("admitted before one request's refill (1s at 60 RPM)")
		}
		clk.Advance(time.Millisecond)
		if !a.returned() || a.err != nil {
			t.Fatalf("not admitted after 1s: %v", a.err)
		}
		a.permit.Release(10)
		// The buckets fill up to their capacity while idle, then behave as usual.
		clk.Advance(2 * time.Minute)
		for range 60 {
			mustAcquire(t, l, 0)
		}
	})
}

// TestScaledClock: a scaled clock's hour passes in a second of real time, and its After waits as long.
func TestScaledClock(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := Scaled(start, 3600)
	select {
	case got := <-c.After(time.Hour / 10): // 100 ms of real time
		if d := got.Sub(start); d < time.Hour/10 {
			t.Errorf("After(6m) fired at %v of the scaled clock, want at least 6m", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("After(6m) did not fire within 10 s at 3600x")
	}
	if d := c.Now().Sub(start); d < time.Hour/10 {
		t.Errorf("the scaled clock advanced %v, want at least 6m", d)
	}
}
