package activities

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/wire"
)

var err503 = &llm.Error{Class: errclass.ServerError, Status: 503, Code: "service_unavailable"}

func newTestJudge(maxTries int, prev wire.PassProgress, answered bool) (*judge, *breaker.Breaker) {
	b := breaker.New(ratelimit.SystemClock(), breaker.Policy{Rand: func() float64 { return 0.5 }})
	return newJudge(maxTries, 15*time.Minute, b, func(c int) string { return string(rune('a' + c)) }, prev, answered, time.Now()), b
}

func admitted(t *testing.T, b *breaker.Breaker) breaker.Ticket {
	t.Helper()
	tk, err := b.Admit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// A cell failing alone while the endpoint answers others is charged each time and, at its last try, is held
// until an answer to a request sent after it shows the failure was its own; then it fails with its tries.
func TestJudgeChargesACellThatFailsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, b := newTestJudge(3, wire.PassProgress{}, true)
		var got judgement
		var old breaker.Ticket // a request sent before the last try failed
		for i := range 3 {
			j.answer(admitted(t, b), 5, time.Now()) // another cell answers between the tries
			old = admitted(t, b)
			time.Sleep(time.Millisecond)
			got = j.failure(admitted(t, b), 0, err503, time.Millisecond, time.Now(), 10)
			if i < 2 && (got.verdict != retryCell || got.tries.Transient != i+1 || time.Until(got.at) != cellRetryDelay(i+1)) {
				t.Fatalf("try %d: %+v, want a retry after %v with %d tries charged", i+1, got, cellRetryDelay(i+1), i+1)
			}
		}
		if got.verdict != retryCell || !got.held || !j.isHeld(0) || got.tries.Transient != 3 {
			t.Fatalf("third try: %+v, want the cell held with 3 tries", got)
		}
		if v, _, _ := j.decide(0, true); v != holdWait {
			t.Fatalf("held cell before any answer: %v, want it to wait", v)
		}
		j.answer(old, 6, time.Now()) // sent before the failure: it says nothing of after
		if v, _, _ := j.decide(0, true); v != holdWait {
			t.Fatalf("held cell after an answer to a request older than its failure: %v, want it to wait", v)
		}
		j.answer(admitted(t, b), 7, time.Now())
		v, e, tr := j.decide(0, true)
		if v != holdFinal || e != err503 || tr.Transient != 3 || tr.Sent != 3 || j.isHeld(0) {
			t.Fatalf("held cell after an answer sent after its failure: %v %v %+v, want it failed after 3 tries", v, e, tr)
		}
	})
}

// With max_attempts 1 the first cells an outage meets are held, not failed: when the eighth distinct failure
// opens the breaker they get their try back and are sent again, and the probe's answer after the outage does not
// make their failures their own.
func TestJudgeHoldsTheLastTryUntilTheBreakerDecides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, b := newTestJudge(1, wire.PassProgress{}, true)
		for c := range breaker.DefaultStormCells - 1 {
			got := j.failure(admitted(t, b), c, err503, 0, time.Now(), 100)
			if got.verdict == cellFailed || !got.held {
				t.Fatalf("cell %d: %+v, want held, not failed", c, got)
			}
			if v, _, _ := j.decide(c, true); v != holdWait {
				t.Fatalf("cell %d before the trip: %v, want it to wait", c, v)
			}
		}
		time.Sleep(time.Millisecond)
		if got := j.failure(admitted(t, b), 7, err503, 0, time.Now(), 100); !got.tripped {
			t.Fatalf("the eighth failure: %+v, want the breaker open", got)
		}
		time.Sleep(time.Minute)
		j.answer(admitted(t, b), 7, time.Now()) // the probe: the provider is back
		for c := range breaker.DefaultStormCells - 1 {
			if v, _, _ := j.decide(c, false); v != holdRelease || j.triesOf(c).Transient != 0 || j.isHeld(c) {
				t.Fatalf("cell %d after the outage: %v, tries %+v; want it released with its try given back", c, v, j.triesOf(c))
			}
		}
	})
}

// When the breaker opens, the tries charged since the last answer are given back, and nothing after is charged.
func TestJudgeGivesTheStreaksTriesBackWhenTheBreakerOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, b := newTestJudge(10, wire.PassProgress{}, true)
		late := admitted(t, b) // in flight while the others fail
		for c := range breaker.DefaultStormCells - 1 {
			if got := j.failure(admitted(t, b), c, err503, 0, time.Now(), 100); got.tries.Transient != 1 {
				t.Fatalf("cell %d before the trip: %+v, want one provisional try", c, got)
			}
		}
		got := j.failure(admitted(t, b), 7, err503, 0, time.Now(), 100)
		if !got.tripped || got.tries.Transient != 0 || got.verdict != retryCell {
			t.Fatalf("the tripping failure: %+v, want tripped and uncharged", got)
		}
		for c := range breaker.DefaultStormCells {
			if tr := j.triesOf(c); tr.Transient != 0 || tr.Sent != 1 {
				t.Errorf("cell %d after the trip: %+v, want its try given back and its request counted", c, tr)
			}
		}
		if got := j.failure(late, 9, err503, 0, time.Now(), 100); got.tries.Transient != 0 || got.tripped {
			t.Errorf("a call that landed after the trip: %+v, want not charged", got)
		}
		var pr wire.PassProgress
		j.save(&pr, time.Now())
		if !pr.Outage.Open || pr.Provider == "" || pr.Tries[0].Transient != 0 {
			t.Errorf("saved progress %+v: want the open breaker, its description and no try charged", pr)
		}
	})
}

// Two cells left that always get a 500, with nothing else to answer: their failures are their own, so each is
// recorded failed after its tries; they never open the breaker and keep it open (a 500 is a request's failure,
// unlike a 503).
func TestJudgeFailsTheLastCellsThatAlwaysFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, b := newTestJudge(3, wire.PassProgress{}, true)
		err500 := &llm.Error{Class: errclass.ServerError, Status: 500}
		failed, held := map[int]bool{}, map[int]bool{}
		for i := 0; len(failed) < 2 && i < 20; i++ {
			c := i % 2
			switch {
			case failed[c]:
				continue
			case held[c]:
				// As the dispatcher does: others says whether the other cell still has a call to make.
				other := 1 - c
				if v, _, _ := j.decide(c, !failed[other] && !held[other]); v == holdFinal {
					failed[c] = true
				}
				continue
			}
			if got := j.failure(admitted(t, b), c, err500, 0, time.Now(), 2-len(failed)); got.verdict == cellFailed {
				t.Fatalf("cell %d failed at once: %+v, want it held first", c, got)
			} else if got.held {
				held[c] = true
			}
		}
		if len(failed) != 2 || b.State().Open {
			t.Fatalf("failed %v, breaker %+v; want both cells failed after their tries and the breaker closed", failed, b.State())
		}
	})
}

// The last cell of a pass getting 503s opens the breaker, which paces its tries; as one cell cannot tell an outage
// from its own failure, the tries are charged, and the cell ends failed after them.
func TestJudgeTheLastCellGettingUnavailableIsPacedAndCharged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, b := newTestJudge(3, wire.PassProgress{}, true)
		got := j.failure(admitted(t, b), 0, err503, 0, time.Now(), 1)
		if !got.tripped || got.tries.Transient != 1 || !b.State().Open || time.Until(got.at) != cellRetryBase {
			t.Fatalf("%+v, breaker %+v; want the breaker open, one try charged, the cell back after %v", got, b.State(), cellRetryBase)
		}
		var last judgement
		for range 2 {
			last = j.failure(admitted(t, b), 0, err503, 0, time.Now(), 1) // each admission waits for the probe's time
		}
		if last.verdict != cellFailed || last.tries.Sent != 3 {
			t.Fatalf("third try: %+v, want the cell failed after 3 requests", last)
		}
	})
}

// A refused connection of an endpoint that never answered charges nothing and gives the model up after
// unreachableFor; once the endpoint answered, a refused connection opens the breaker at once.
func TestJudgeRefusedConnections(t *testing.T) {
	refused := &llm.Error{Class: errclass.Transport, Code: llm.CodeConnectionRefused}
	synctest.Test(t, func(t *testing.T) {
		j, b := newTestJudge(10, wire.PassProgress{}, false)
		if got := j.failure(admitted(t, b), 0, refused, 0, time.Now(), 10); got.verdict != retryCell || got.tries.Transient != 0 {
			t.Fatalf("first refusal: %+v", got)
		}
		time.Sleep(unreachableFor)
		if got := j.failure(admitted(t, b), 1, refused, 0, time.Now(), 10); got.verdict != unreachable {
			t.Fatalf("refused for %v: %+v, want unreachable", unreachableFor, got)
		}
		if b.State().Open {
			t.Error("an endpoint that never answered opened the breaker")
		}

		j2, b2 := newTestJudge(10, wire.PassProgress{}, true)
		if got := j2.failure(admitted(t, b2), 0, refused, 0, time.Now(), 10); !got.tripped || !b2.State().Open {
			t.Fatalf("refused after answering: %+v, want the breaker open", got)
		}
		// Another pass of the endpoint, which never had an answer of its own, probes the open breaker: a refused
		// probe moves the backoff on, it does not give the model up or probe again at once.
		j3 := newJudge(10, 15*time.Minute, b2, func(c int) string { return "other" }, wire.PassProgress{}, false, time.Now())
		time.Sleep(2 * unreachableFor)
		probe := admitted(t, b2)
		if got := j3.failure(probe, 0, refused, 0, time.Now(), 10); got.verdict == unreachable || b2.State().Step != 1 {
			t.Fatalf("a refused probe: %+v, breaker %+v; want the backoff at step 1, not unreachable", got, b2.State())
		}
	})
}

// A new attempt's judge continues each cell's tries from the heartbeat.
func TestJudgeContinuesTheTriesOfTheLastHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, b := newTestJudge(3, wire.PassProgress{Tries: map[int]wire.Tries{4: {Transient: 2, Sent: 5}}}, true)
		got := j.failure(admitted(t, b), 4, err503, 0, time.Now(), 10)
		if !got.held || got.tries.Sent != 6 || got.tries.Transient != 3 {
			t.Fatalf("%+v, want the cell held at its third try, its sixth request", got)
		}
		if v, _, tr := j.decide(4, false); v != holdFinal || tr.Sent != 6 {
			t.Fatalf("%v %+v, want it failed with nothing else left to tell", v, tr)
		}
		// A cell the last attempt left held is tried once more: the try that held it is given back.
		j, _ = newTestJudge(3, wire.PassProgress{Tries: map[int]wire.Tries{4: {Transient: 3, Sent: 5}}}, true)
		if tr := j.triesOf(4); tr.Transient != 2 || j.isHeld(4) {
			t.Fatalf("held cell of the last heartbeat: %+v, want 2 tries, not held", tr)
		}
	})
}
