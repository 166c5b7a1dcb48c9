package ratelimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// record feeds l n outcomes of which every k-th (k > 0) is a 429 asking for retryAfter, and returns the verdicts
// of the 429s.
func record(l *Limiter, n, k int, retryAfter time.Duration) []Verdict {
	var vs []Verdict
	for i := 1; i <= n; i++ {
		if k > 0 && i%k == 0 {
			vs = append(vs, l.RateLimited(retryAfter, false))
		} else {
			l.Answered()
		}
	}
	return vs
}

// admittedAtOnce reports whether an acquisition goes through without waiting, releasing it.
func admittedAtOnce(l *Limiter) bool {
	ctx, cancel := context.WithCancel(context.Background())
	a := goAcquire(ctx, l, 0)
	ok := a.returned()
	cancel()
	<-a.done
	if a.permit != nil {
		a.permit.Release(0)
	}
	return ok
}

func TestShed429DoesNotPauseOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{Concurrency: 16}, clk) // no declared rpm or tpm
		// One call in five refused, Retry-After 20 s: a provider shedding load, not an empty bucket.
		for _, v := range record(l, 200, 5, 20*time.Second) {
			if v.Wall {
				t.Fatalf("a 429 among one in five was taken for the account's limit")
			}
		}
		if !admittedAtOnce(l) {
			t.Fatalf("a shed 429 paused the other calls")
		}
		if s := l.Stats(); s.PausedTime != 0 || s.Backoffs != 0 || l.concurrency() != 16 {
			t.Errorf("stats %+v, concurrency %d; want no pause, no backoff, 16", s, l.concurrency())
		}
	})
}

func TestWallOf429sPausesTheModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{Concurrency: 16}, clk)
		record(l, 20, 0, 0) // the pass was answered at first
		var last Verdict
		for range 20 {
			last = l.RateLimited(2*time.Second, false) // then everything is refused
		}
		if !last.Wall {
			t.Fatalf("20 429s after 20 answers: not taken for a wall")
		}
		a := goAcquire(context.Background(), l, 0)
		clk.Advance(time.Second)
		if a.returned() {
			t.Fatalf("admitted 1 s into a 2 s pause")
		}
		clk.Advance(time.Second)
		if !a.returned() {
			t.Fatalf("not admitted after the pause")
		}
		a.permit.Release(0)
	})
}

func TestRemainingZeroPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{Concurrency: 16}, clk)
		record(l, 40, 0, 0)
		l.Exhausted(clk.Now().Add(3 * time.Second))
		if admittedAtOnce(l) {
			t.Fatalf("admitted while an answer said the account's budget is used up")
		}
		// A single 429 before the reset is the account's limit, though the share of 429s is small.
		if v := l.RateLimited(5*time.Second, false); !v.Wall {
			t.Fatalf("a 429 before the reset of an exhausted budget was taken for shed")
		}
		clk.Advance(4 * time.Second)
		if admittedAtOnce(l) {
			t.Fatalf("admitted before the 429's Retry-After (5 s) ended")
		}
		clk.Advance(2 * time.Second)
		if !admittedAtOnce(l) {
			t.Fatalf("not admitted after the pause")
		}
		// After the reset, a lone 429 is shed again, unless it says itself that the budget is used up.
		if v := l.RateLimited(time.Second, false); v.Wall {
			t.Fatalf("a lone 429 after the reset was taken for a wall")
		}
		if v := l.RateLimited(time.Second, true); !v.Wall {
			t.Fatalf("a 429 with x-ratelimit-remaining 0 was taken for shed")
		}
	})
}

func TestDeclaredLimitMakesA429TheAccounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{Concurrency: 16, RPM: 6000}, clk)
		record(l, 40, 0, 0)
		if v := l.RateLimited(time.Second, false); !v.Wall {
			t.Fatalf("a 429 under a declared rpm was taken for shed")
		}
	})
}

func TestAIMDOnTheShareOf429s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		l := New(Limits{Concurrency: 16}, clk)
		var held []*Permit
		for range 16 {
			held = append(held, mustAcquire(t, l, 0))
		}
		// One in four refused (25 %, under DecreaseShare): the concurrency stays.
		record(l, 64, 4, time.Second)
		if c := l.concurrency(); c != 16 {
			t.Fatalf("concurrency %d after 25 %% 429s; want 16", c)
		}
		// Then one in two for 20 outcomes: the share over the window climbs past DecreaseShare (not to WallShare).
		// The concurrency is halved once, not once per 429.
		var decreased int
		for _, v := range record(l, 20, 2, time.Second) {
			if v.Wall {
				t.Fatalf("a share under WallShare taken for a wall")
			}
			if v.Decreased {
				decreased++
			}
		}
		if c := l.concurrency(); decreased != 1 || c != 8 {
			t.Fatalf("%d decreases, concurrency %d after a high share; want 1 and 8 (half of 16 in flight)", decreased, c)
		}
		// Answers bring it back, one more after as many answers as the current value.
		record(l, 8+9+10+11+12+13+14+15, 0, 0)
		if c := l.concurrency(); c != 16 {
			t.Fatalf("concurrency %d after the answers; want back at 16", c)
		}
		for _, p := range held {
			p.Release(0)
		}
	})
}

func TestShedWait(t *testing.T) {
	seen := map[time.Duration]bool{}
	for key := range uint64(50) {
		w := ShedWait(time.Second, 0, key)
		if w < time.Second || w > time.Second+time.Duration(RetryJitter*float64(time.Second)) {
			t.Fatalf("ShedWait(1s, key %d) = %v; want within [1s, 1s+%v]", key, w, RetryJitter)
		}
		if w != ShedWait(time.Second, 0, key) {
			t.Fatalf("ShedWait is not a function of its key")
		}
		seen[w] = true
	}
	if len(seen) < 40 {
		t.Errorf("50 keys gave %d distinct waits; want them spread", len(seen))
	}
	if w := ShedWait(0, 2*time.Second, 1); w < 2*time.Second {
		t.Errorf("ShedWait without Retry-After = %v; want at least the fallback 2s", w)
	}
}

func TestWallByShareAndByRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Three 429s in four, never WallRun in a row: a wall by the share over the window.
		l := New(Limits{Concurrency: 16}, newFakeClock())
		record(l, 40, 0, 0)
		var wall bool
		for range 12 {
			for _, v := range []Verdict{l.RateLimited(time.Second, false), l.RateLimited(time.Second, false), l.RateLimited(time.Second, false)} {
				wall = wall || v.Wall
			}
			l.Answered()
		}
		if !wall {
			t.Errorf("three 429s in four over the window: not taken for a wall")
		}
		// After a long run of answers, WallRun 429s in a row are a wall at once, and one fewer is not.
		l = New(Limits{Concurrency: 16}, newFakeClock())
		record(l, 40, 0, 0)
		for i := 1; i <= WallRun; i++ {
			if v := l.RateLimited(time.Second, false); v.Wall != (i == WallRun) {
				t.Fatalf("429 %d in a row after 40 answers: wall %v, want %v", i, v.Wall, i == WallRun)
			}
		}
	})
}
