package breaker

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// bubbleClock is the real clock, which inside a synctest bubble is the bubble's fake one.
type bubbleClock struct{}

func (bubbleClock) Now() time.Time                         { return time.Now() }
func (bubbleClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// noJitter makes every wait exactly Policy.Wait.
func noJitter() float64 { return 0.5 }

func newTest() *Breaker { return New(bubbleClock{}, Policy{Rand: noJitter}) }

func admit(t *testing.T, b *Breaker) Ticket {
	t.Helper()
	tk, err := b.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func fail(b *Breaker, tk Ticket, cell int) Verdict {
	return b.Report(tk, Outcome{Key: fmt.Sprint("c", cell), Kind: Transient, Cause: Cause{Status: 503}})
}

func TestDistinctCellsInARowTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTest()
		// One cell failing again and again is the cell's failure: charged, alone, never a trip.
		for range 20 {
			v := fail(b, admit(t, b), 0)
			if !v.Charge || v.Tripped {
				t.Fatalf("one cell failing: verdict %+v, want charged, no trip", v)
			}
		}
		// An answer between failures clears the streak.
		b.Report(admit(t, b), Outcome{Key: "c99", Kind: Answered})
		for i := range DefaultStormCells - 1 {
			if v := fail(b, admit(t, b), i); !v.Charge || v.Tripped {
				t.Fatalf("failure %d of %d: %+v, want charged without a trip", i+1, DefaultStormCells, v)
			}
		}
		b.Report(admit(t, b), Outcome{Key: "c99", Kind: Answered})
		if b.State().Open {
			t.Fatal("open after an answer")
		}
		var last Verdict
		for i := range DefaultStormCells {
			last = fail(b, admit(t, b), i)
		}
		if !last.Tripped || last.Charge || !b.State().Open {
			t.Fatalf("after %d distinct cells in a row: verdict %+v, state %+v; want tripped, not charged, open",
				DefaultStormCells, last, b.State())
		}
		if got := b.State().Cause.String(); got != "503" {
			t.Errorf("cause %q, want 503", got)
		}
	})
}

func TestAPoolSmallerThanTheStormTripsSoonerOnlyWhenUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTest()
		o := Outcome{Key: "a", Kind: Transient, Pool: 3, Unavailable: true}
		b.Report(admit(t, b), o)
		o.Key = "b"
		b.Report(admit(t, b), o)
		o.Key = "c"
		if v := b.Report(admit(t, b), o); !v.Tripped {
			t.Fatalf("3 of a pool of 3 unavailable: %+v, want a trip", v)
		}
		// The last cell of a pass getting 503s trips it at once, but few cells cannot tell an outage from their
		// own failure: they are charged as they fail, at the probes' pace, and the trip gives nothing back.
		one := newTest()
		before := one.Outages()
		if v := one.Report(admit(t, one), Outcome{Key: "a", Kind: Transient, Pool: 1, Unavailable: true}); !v.Tripped || !v.Charge {
			t.Fatalf("a pool of one unavailable: %+v, want a charged trip", v)
		}
		if !one.State().Few || one.Outages() != before {
			t.Fatalf("state %+v, outages %d; want a trip of few cells that refunds nothing", one.State(), one.Outages())
		}
		time.Sleep(time.Second)
		if v := fail(one, admit(t, one), 0); !v.Charge || !v.Tripped || one.State().Step != 1 {
			t.Fatalf("a failed probe of few cells: %+v, state %+v; want charged, the backoff at step 1", v, one.State())
		}
		// Two cells left that always get a 500 are their own failures: they never trip it.
		two := newTest()
		for i := range 20 {
			if v := two.Report(admit(t, two), Outcome{Key: fmt.Sprint(i % 2), Kind: Transient, Pool: 2}); v.Tripped || !v.Charge {
				t.Fatalf("500s of a pool of two: %+v, want charged, no trip", v)
			}
		}
	})
}

func TestLateOutcomesAreNotCharged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTest()
		inFlight := make([]Ticket, 4)
		for i := range inFlight {
			inFlight[i] = admit(t, b)
		}
		b.Report(admit(t, b), Outcome{Key: "x", Kind: Refused})
		if !b.State().Open {
			t.Fatal("a refused connection did not open the breaker")
		}
		for i, tk := range inFlight {
			if b.Current(tk) {
				t.Errorf("ticket %d admitted before the trip is still current", i)
			}
			if v := fail(b, tk, i); v.Charge || v.Tripped {
				t.Errorf("a call that landed after the trip: %+v, want not charged", v)
			}
		}
		if b.State().Step != 0 {
			t.Errorf("late failures moved the backoff: %+v", b.State())
		}
	})
}

func TestRateLimitsAreNeverChargedAndAWallTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTest()
		for i := range DefaultStormRateLimits {
			v := b.Report(admit(t, b), Outcome{Key: "a", Kind: RateLimited, Cause: Cause{Status: 429}})
			if v.Charge {
				t.Fatalf("429 %d charged", i)
			}
			if v.Tripped != (i == DefaultStormRateLimits-1) {
				t.Fatalf("429 %d: tripped %v", i+1, v.Tripped)
			}
		}
	})
}

func TestOpenAdmitsOneProbeAtGrowingIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTest()
		start := time.Now()
		b.Report(admit(t, b), Outcome{Key: "x", Kind: Refused, Cause: Cause{Code: "connection_refused"}})
		// Two passes wait at once: only one of them gets the probe.
		type got struct {
			tk Ticket
			at time.Duration
		}
		ch := make(chan got, 2)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for range 2 {
			go func() {
				tk, err := b.Admit(ctx)
				if err == nil {
					ch <- got{tk, time.Since(start)}
				}
			}()
		}
		wantWaits := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60}
		elapsed := time.Duration(0)
		for step, w := range wantWaits {
			g := <-ch
			elapsed += w * time.Second
			if !g.tk.Probe() || g.at != elapsed {
				t.Fatalf("probe %d: admitted at %v (probe %v), want the probe at %v", step+1, g.at, g.tk.Probe(), elapsed)
			}
			synctest.Wait()
			select {
			case o := <-ch:
				t.Fatalf("a second caller was admitted while the probe was out: %+v", o)
			default:
			}
			if v := fail(b, g.tk, 0); !v.Tripped || v.Charge {
				t.Fatalf("failed probe: %+v, want tripped and not charged", v)
			}
			go func() {
				tk, err := b.Admit(ctx)
				if err == nil {
					ch <- got{tk, time.Since(start)}
				}
			}()
		}
		st := b.State()
		if st.Step != len(wantWaits) || st.Probes != len(wantWaits) || !st.Since.Equal(start) {
			t.Errorf("state %+v, want step and probes %d since the start", st, len(wantWaits))
		}
		// The next probe is answered: the breaker closes and every waiter goes.
		g := <-ch
		b.Report(g.tk, Outcome{Key: "c0", Kind: Answered})
		g = <-ch
		if g.tk.Probe() || b.State().Open {
			t.Fatalf("after an answer: ticket %+v, state %+v; want closed", g.tk, b.State())
		}
	})
}

func TestJitterStaysWithinItsFraction(t *testing.T) {
	for _, r := range []float64{0, 0.999999} {
		b := New(bubbleClock{}, Policy{Rand: func() float64 { return r }})
		d := b.wait(3, 0)
		lo, hi := time.Duration(float64(8*time.Second)*0.8), time.Duration(float64(8*time.Second)*1.2)
		if d < lo || d > hi {
			t.Errorf("rand %v: wait %v outside [%v, %v]", r, d, lo, hi)
		}
	}
	b := newTest()
	if d := b.wait(0, 5*time.Second); d != 5*time.Second {
		t.Errorf("Retry-After 5s: wait %v, want 5s", d)
	}
}

func TestReleasingTheProbePassesTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTest()
		b.Report(admit(t, b), Outcome{Key: "x", Kind: Refused})
		time.Sleep(time.Second)
		p := admit(t, b)
		if !p.Probe() {
			t.Fatal("first caller after the wait is not the probe")
		}
		b.Release(p)
		q := admit(t, b) // at once: the turn is free and due
		if !q.Probe() || b.State().Probes != 1 {
			t.Fatalf("after release: %+v, state %+v; want the next caller to probe, one probe counted", q, b.State())
		}
	})
}

func TestRestoreContinuesTheBackoffOnAFreshBreakerOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		saved := State{Open: true, Since: now.Add(-time.Minute), Step: 5, NextProbe: now.Add(20 * time.Second), Probes: 5,
			Cause: Cause{Status: 503}}
		b := newTest()
		if !b.Restore(saved) {
			t.Fatal("a fresh breaker refused the saved state")
		}
		tk := admit(t, b)
		if waited := time.Since(now); !tk.Probe() || waited != 20*time.Second {
			t.Fatalf("after restore: probe %v after %v, want the probe when the saved state said (20s)", tk.Probe(), waited)
		}
		fail(b, tk, 0)
		if st := b.State(); st.Step != 6 || time.Until(st.NextProbe) != 60*time.Second || !st.Since.Equal(saved.Since) {
			t.Errorf("after a failed probe: %+v; want step 6, the next probe in 60s, the outage's start kept", st)
		}
		// A breaker that has heard of requests keeps its own state.
		used := newTest()
		used.Report(admit(t, used), Outcome{Key: "a", Kind: Answered})
		if used.Restore(saved) || used.State().Open {
			t.Error("a used breaker took a saved state")
		}
	})
}

func TestDescribe(t *testing.T) {
	since := time.Date(2026, 12, 1, 12, 1, 3, 0, time.Local)
	st := State{Open: true, Since: since, NextProbe: since.Add(8 * time.Second), Cause: Cause{Status: 503, Code: "service_unavailable"}}
	got := st.Describe(since.Add(2*time.Minute + 10*time.Second))
	want := "provider down for 2m10s (503 service_unavailable), next probe now, no cell charged"
	if got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	got = st.Describe(since)
	want = "provider down for 0s (503 service_unavailable), next probe in 8s, no cell charged"
	if got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if (State{}).Describe(since) != "" {
		t.Error("a closed breaker describes itself")
	}
}

// An answer to a request admitted before the failures began says nothing of now: it neither clears the streak
// nor closes an open breaker. One admitted after them does both.
func TestStaleAnswersProveNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTest()
		early := admit(t, b)
		early2 := admit(t, b)
		time.Sleep(time.Millisecond)
		for i := range DefaultStormCells - 1 {
			fail(b, admit(t, b), i)
		}
		b.Report(early, Outcome{Key: "x", Kind: Answered})
		if v := fail(b, admit(t, b), 7); !v.Tripped {
			t.Fatalf("the 8th distinct failure after a stale answer: %+v, want a trip", v)
		}
		b.Report(early2, Outcome{Key: "y", Kind: Answered})
		if !b.State().Open {
			t.Fatal("an answer to a request sent before the outage closed the breaker")
		}
		// A fresh answer clears the streak: the failures before it were the cells' own.
		c := newTest()
		time.Sleep(time.Millisecond)
		fail(c, admit(t, c), 0)
		time.Sleep(time.Millisecond)
		c.Report(admit(t, c), Outcome{Key: "z", Kind: Answered})
		for i := 1; i < DefaultStormCells; i++ {
			fail(c, admit(t, c), i)
		}
		if c.State().Open {
			t.Fatal("7 failures after a fresh answer tripped the breaker: the one before it still counted")
		}
	})
}
