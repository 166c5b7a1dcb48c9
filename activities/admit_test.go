package activities

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/usage"
)

func newTestAdmitter(limit usage.USD) (*admitter, *breaker.Breaker, *ratelimit.Limiter) {
	clk := ratelimit.SystemClock() // inside a synctest bubble: the bubble's clock
	b := breaker.New(clk, breaker.Policy{Rand: func() float64 { return 0.5 }})
	lim := ratelimit.New(ratelimit.Limits{Concurrency: 2}, clk)
	bud := &budget{limit: limit}
	stop := newStopper(func() {})
	return &admitter{budget: bud, share: &shareKeeper{limiter: lim, budget: bud}, brk: b, limiter: lim, stop: stop,
		gen: b.Generation()}, b, lim
}

// While the breaker is open the admitter holds the pass's own permit and waits for the probe; when the dispatch
// ends meanwhile, it gives the permit and the budget reservation back.
func TestAdmitWaitsForTheProbeAndGivesBackWhatItHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ad, b, lim := newTestAdmitter(usage.Dollars(1))
		tk, _ := b.Admit(context.Background())
		b.Report(tk, breaker.Outcome{Key: "x", Kind: breaker.Refused})

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan bool)
		go func() {
			_, ok := ad.admit(ctx, usage.Dollars(0.25), 0)
			done <- ok
		}()
		synctest.Wait()
		if st := lim.Stats(); st.InFlight != 1 || ad.budget.reserved != usage.Dollars(0.25) {
			t.Fatalf("waiting for the probe: %d permits, $%v reserved; want the pass's permit and its reservation held",
				st.InFlight, ad.budget.reserved)
		}
		cancel()
		if <-done {
			t.Fatal("admitted after the dispatch ended")
		}
		if st := lim.Stats(); st.InFlight != 0 || ad.budget.reserved != 0 {
			t.Errorf("after the dispatch ended: %d permits, $%v reserved; want none", st.InFlight, ad.budget.reserved)
		}

		// Once the probe is due, the next admission is the probe.
		time.Sleep(time.Second)
		adm, ok := ad.admit(context.Background(), usage.Dollars(0.25), 0)
		if !ok || !adm.ticket.Probe() {
			t.Fatalf("after the first wait: ok %v, probe %v; want the probe", ok, adm.ticket.Probe())
		}
		ad.abandon(adm)
		if st := lim.Stats(); st.InFlight != 0 || ad.budget.reserved != 0 || b.State().Probes != 0 {
			t.Errorf("abandoned probe: %d permits, $%v reserved, %d probes counted; want none", st.InFlight,
				ad.budget.reserved, b.State().Probes)
		}
	})
}

// A call whose worst case does not fit the budget share is not admitted, and the pass stops for the budget.
func TestAdmitStopsWhenTheBudgetShareIsUsedUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ad, _, lim := newTestAdmitter(usage.Dollars(0.1))
		if _, ok := ad.admit(context.Background(), usage.Dollars(0.25), 0); ok {
			t.Fatal("admitted a call over the budget share")
		}
		if ad.stop.why() != stopBudget || lim.Stats().InFlight != 0 {
			t.Errorf("stop %v, %d permits; want the budget stop and no permit held", ad.stop.why(), lim.Stats().InFlight)
		}
	})
}

// A pass's share of the budget is counted to the picodollar: calls whose worst cases add up to exactly the share
// all fit (as float64 dollars, $0.1 + $0.2 came to more than $0.3, and the last call was refused), and one
// picodollar more does not.
func TestBudgetShareIsExact(t *testing.T) {
	b := &budget{limit: usage.Dollars(0.3)}
	for _, cost := range []usage.USD{usage.Dollars(0.1), usage.Dollars(0.2)} {
		if !b.reserve(cost) {
			t.Fatalf("$%v refused with $%v reserved of $%v", cost, b.reserved, b.limit)
		}
	}
	if b.reserve(usage.Picodollars(1)) {
		t.Errorf("a picodollar over the share was reserved: $%v of $%v", b.reserved, b.limit)
	}
	b.settle(usage.Dollars(0.1), usage.Dollars(0.05))
	b.settle(usage.Dollars(0.2), usage.Dollars(0.2))
	if b.reserved != 0 || b.spent != usage.Dollars(0.25) || !b.reserve(usage.Dollars(0.05)) || b.reserve(1) {
		t.Errorf("after settling: $%v reserved, $%v spent; want 0 and $0.25, then exactly $0.05 more to reserve", b.reserved, b.spent)
	}
}
