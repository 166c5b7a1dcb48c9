package activities

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

// Pacing of retries inside an attempt.
const (
	// cellRetryBase and cellRetryMax bound the delay before a cell whose failure was charged to it is tried
	// again: base doubled per try. Short, because an isolated 5xx or reset is usually gone at once; a provider
	// that keeps failing opens the breaker instead.
	cellRetryBase = 250 * time.Millisecond
	cellRetryMax  = 8 * time.Second
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

// verdict is what a failed request means for its cell.
type verdict int

const (
	retryCell   verdict = iota // try the cell again at the judgement's time
	cellFailed                 // the cell used up its tries: record it failed
	unreachable                // the endpoint never answered: give the model up
)

// judgement is the judge's decision on one failed request.
type judgement struct {
	verdict verdict
	tries   wire.Tries
	// at is when the cell may be tried again (retryCell).
	at time.Time
	// tripped says the failure opened the endpoint's breaker: the provider is down, not the cell.
	tripped bool
	// held says the cell used its tries and is held (see judge.decide): not sent again unless released.
	held bool
}

// judge decides what each outcome of a pass's requests means: an answer; the cell's own failure, charged to its
// tries; or the provider's failure (an outage, a wall of rate limits), charged to no cell and told to the
// endpoint's breaker, which every pass of the endpoint on this worker shares. It also keeps what a pass must
// carry across attempts: each unfinished cell's tries, whether the endpoint ever answered, when a cell last
// finished (the stall clock) and the last failure.
//
// A failure is charged to its cell only when the breaker admitted the request while closed, is still closed in
// that generation, and the failure did not trip it. The charges made since the pass's last answer are
// provisional: when the breaker opens before an answer confirms them, they are given back, since those cells
// were failing for the provider's reason.
//
// A cell whose provisional charges reach run.max_attempts is therefore not failed at once: it is held (not sent,
// not recorded) until the breaker's evidence decides (see decide). Failing it first and giving its tries back
// later cannot work, since a recorded failure is final: with max_attempts 1 the first cells an outage met were
// recorded failed before the eighth distinct failure showed it was an outage.
type judge struct {
	maxTries int
	stall    time.Duration
	brk      *breaker.Breaker
	keyOf    func(cell int) string // names a cell to the breaker, unique among the passes that share it

	mu    sync.Mutex
	tries map[int]wire.Tries // unfinished cells that failed
	// pending holds the tries charged and not yet confirmed by an answer, per cell, made when the breaker had
	// counted pendingGen outages.
	pending    map[int]charge
	pendingGen uint64
	// answered says the endpoint sent an HTTP response at least once in this pass (any status), or the
	// workflow says the model answered in an earlier pass.
	answered bool
	// firstRefused is when a never-answered endpoint first refused a call.
	firstRefused time.Time
	lastFinished time.Time
	last         *llm.Error
	// held holds the cells whose charged tries reached maxTries, until the breaker's evidence decides (decide).
	// Their tries stay in tries, so a heartbeat carries them; a new attempt gives back the try that held them
	// (newJudge), since the heartbeat does not carry their failure.
	held map[int]hold
}

// hold is what a held cell waits on: its failure (at, e) becomes final once the endpoint answers a request
// admitted after it (confirmed), and is given back when the breaker counts an outage after outages.
type hold struct {
	at        time.Time
	e         *llm.Error
	outages   uint64
	confirmed bool
}

// holdVerdict is what decide makes of a held cell.
type holdVerdict int

const (
	holdWait    holdVerdict = iota // nothing decided it yet: ask again later
	holdFinal                      // the failure was the cell's own: record it failed
	holdRelease                    // it was the provider's: the try is given back, send the cell again
)

// charge is the provisional tries of one cell: how many, and when the last was charged.
type charge struct {
	n    int
	last time.Time
}

func newJudge(maxTries int, stall time.Duration, brk *breaker.Breaker, keyOf func(int) string, prev wire.PassProgress,
	modelAnswered bool, now time.Time) *judge {
	j := &judge{
		maxTries:     max(1, maxTries),
		stall:        stall,
		brk:          brk,
		keyOf:        keyOf,
		tries:        prev.Tries,
		pending:      map[int]charge{},
		pendingGen:   brk.Outages(),
		held:         map[int]hold{},
		answered:     prev.Answered || modelAnswered,
		lastFinished: prev.LastFinished,
	}
	if j.tries == nil {
		j.tries = map[int]wire.Tries{}
	}
	if j.lastFinished.IsZero() {
		j.lastFinished = now
	}
	// A cell the last attempt held ended it undecided: it gets back the try that held it and is sent again, so
	// that its own next outcome decides (the heartbeat does not carry the failure a final record would need).
	for c, t := range j.tries {
		if t.Transient >= j.maxTries {
			t.Transient = j.maxTries - 1
			j.tries[c] = t
		}
	}
	if prev.LastClass != "" {
		j.last = &llm.Error{Class: errclass.Class(prev.LastClass), Message: prev.LastMessage}
	}
	return j
}

// settle gives back the provisional charges when the breaker saw an outage since they were made (it opened, and
// perhaps closed again, before an answer confirmed them). Call with j.mu held.
func (j *judge) settle() {
	gen := j.brk.Outages()
	if gen == j.pendingGen {
		return
	}
	for c, ch := range j.pending {
		if t, ok := j.tries[c]; ok {
			t.Transient = max(0, t.Transient-ch.n)
			j.tries[c] = t
		}
	}
	clear(j.pending)
	j.pendingGen = gen
}

// answer notes an answered request of cell and returns the cell's tries, the answer included: its requests
// (Sent) and the tries charged to it (Transient).
func (j *judge) answer(tk breaker.Ticket, cell int, now time.Time) wire.Tries {
	j.brk.Report(tk, breaker.Outcome{Kind: breaker.Answered})
	j.mu.Lock()
	defer j.mu.Unlock()
	j.settle()
	j.answered = true
	j.lastFinished = now
	// The endpoint answered a request admitted after these failures: they were the cells' own.
	maps.DeleteFunc(j.pending, func(_ int, ch charge) bool { return !ch.last.After(tk.At()) })
	j.confirm(tk)
	t := j.tries[cell]
	delete(j.tries, cell)
	t.Sent++
	t.Transient++ // the answer is a try of the cell
	return t
}

// served notes a cell finished from the response cache: progress, but no sign of the endpoint's health.
func (j *judge) served(cell int, now time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lastFinished = now
	delete(j.tries, cell)
	delete(j.pending, cell)
}

// finished notes a cell finished without an answer: a permanent failure (served: the endpoint answered, refusing
// the request itself; or a request the client refused to send), or one that never reached the endpoint (a prompt
// that did not render, a text too long). It returns what the cell's tries were, the last request included (a
// try of the cell: its outcome is final). tk is nil when no request was made.
func (j *judge) finished(tk *breaker.Ticket, cell int, now time.Time, served bool) wire.Tries {
	switch {
	case tk != nil && served:
		j.brk.Report(*tk, breaker.Outcome{Kind: breaker.Answered})
	case tk != nil:
		j.brk.Release(*tk)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.settle()
	j.lastFinished = now
	t := j.tries[cell]
	delete(j.tries, cell)
	delete(j.pending, cell)
	if tk != nil {
		j.answered = j.answered || served
		t.Sent++
		t.Transient++
	}
	if tk != nil && served {
		j.confirm(*tk) // a refusal of the request itself shows the endpoint serving, as an answer does
	}
	return t
}

// failure decides what a transient failure (rate limit included) of cell's request means. pool is how many units
// (cells, or an embed pass's requests) of the pass are unfinished.
func (j *judge) failure(tk breaker.Ticket, cell int, e *llm.Error, latency time.Duration, now time.Time, pool int) judgement {
	return j.failed(tk, cell, e, latency, now, pool, false)
}

// shed decides a 429 that the limiter took for a call the provider shed, not for the account's limit
// (ratelimit/shed.go), as failure does, except that it cannot trip the breaker's wall of rate limits: 429s come
// back at once, and at 20 % shed several landed within one latency with no answer between and opened the breaker
// several times a run. They still count in the wall, so that the first 429 taken for the account's limit can
// complete it, as every 429 did before.
func (j *judge) shed(tk breaker.Ticket, cell int, e *llm.Error, latency time.Duration, now time.Time, pool int) judgement {
	return j.failed(tk, cell, e, latency, now, pool, true)
}

// failed is failure; shed marks a 429 the limiter took for a shed call.
func (j *judge) failed(tk breaker.Ticket, cell int, e *llm.Error, latency time.Duration, now time.Time, pool int, shed bool) judgement {
	j.mu.Lock()
	answered := j.answered || e.Status != 0 || j.brk.Served()
	j.mu.Unlock()
	kind := breaker.Transient
	switch {
	case e.Class == errclass.RateLimited:
		kind = breaker.RateLimited
	case neverConnected(e) && !answered:
		return j.refused(tk, cell, e, latency, now)
	case neverConnected(e):
		kind = breaker.Refused // an endpoint that answered before and refuses now is down
	}
	v := j.brk.Report(tk, breaker.Outcome{Key: j.keyOf(cell), Kind: kind, Pool: pool, Unavailable: unavailable(e.Status),
		RetryAfter: e.RetryAfter, Shed: shed && kind == breaker.RateLimited, Cause: breaker.Cause{Class: string(e.Class), Status: e.Status, Code: e.Code, Message: e.Message}})

	j.mu.Lock()
	defer j.mu.Unlock()
	j.settle()
	j.last = e
	j.answered = j.answered || answered
	t := j.tries[cell]
	t.Sent++
	t.LatencyMS = float64(latency.Microseconds()) / 1000
	if v.Charge {
		t.Transient++
		j.pending[cell] = charge{n: j.pending[cell].n + 1, last: now}
	}
	j.tries[cell] = t
	switch {
	case v.Charge && t.Transient >= j.maxTries && v.Tripped:
		// It tripped a breaker of few cells: the breaker's decision is that these cells pay as they fail.
		delete(j.tries, cell)
		delete(j.pending, cell)
		return judgement{verdict: cellFailed, tries: t}
	case v.Charge && t.Transient >= j.maxTries:
		// Its last try, unless this was an outage's first failures: held until the breaker knows.
		j.held[cell] = hold{at: now, e: e, outages: j.brk.Outages()}
		return judgement{verdict: retryCell, tries: t, at: now.Add(cellRetryBase), held: true}
	case v.Charge && v.Tripped:
		// The last cells of the pass met what may be an outage: the breaker paces their next tries.
		return judgement{verdict: retryCell, tries: t, at: now.Add(cellRetryBase), tripped: true}
	case v.Charge:
		return judgement{verdict: retryCell, tries: t, at: now.Add(cellRetryDelay(t.Transient))}
	case tk.Probe():
		// A failed probe's cell waits a moment, so that the next probe is another cell: a cell that fails on its
		// own must not keep the breaker open by being the only one ever probed.
		return judgement{verdict: retryCell, tries: t, at: now.Add(cellRetryBase), tripped: v.Tripped}
	}
	// Not the cell's: a rate limit (the limiter's pause decides), a call that landed after the breaker opened,
	// or the failure that opened it. The breaker's admission decides when it goes again.
	return judgement{verdict: retryCell, tries: t, at: now, tripped: v.Tripped}
}

// confirm marks the held cells whose failure came before tk's request was admitted: the endpoint answered since,
// so their failures were their own. Call with j.mu held.
func (j *judge) confirm(tk breaker.Ticket) {
	gen := j.brk.Outages()
	for c, h := range j.held {
		// An answer after an outage began (the probe's) says nothing of the failures before it.
		if !h.confirmed && h.outages == gen && !h.at.After(tk.At()) {
			h.confirmed = true
			j.held[c] = h
		}
	}
}

// isHeld reports whether cell is held.
func (j *judge) isHeld(cell int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.held[cell]
	return ok
}

// decide says what becomes of held cell now, and returns its failure and tries for a final one. A held failure is
// given back (holdRelease) when the breaker counted an outage since it, for then it was the provider's, the
// failures of an outage's first cells; it is final (holdFinal) when the endpoint answered a request admitted
// after it, when the breaker is open on few cells (those cells pay as they fail), or when nothing else of the
// pass is left to tell (others false: no other call out, no other cell to send), as for the one cell of a pass
// that always gets a 500. Otherwise it waits.
func (j *judge) decide(cell int, others bool) (holdVerdict, *llm.Error, wire.Tries) {
	st := j.brk.State()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.settle()
	h, ok := j.held[cell]
	if !ok {
		return holdRelease, nil, wire.Tries{}
	}
	t := j.tries[cell]
	switch {
	case h.confirmed:
		// Confirmed before any outage: settle kept its charges, whatever the breaker did after.
	case j.brk.Outages() != h.outages || t.Transient < j.maxTries:
		// settle gave back the charges made since the last answer (the held one among them).
		delete(j.held, cell)
		return holdRelease, nil, wire.Tries{}
	case st.Open && st.Few, !st.Open && !others:
	default:
		return holdWait, nil, wire.Tries{}
	}
	delete(j.held, cell)
	delete(j.tries, cell)
	delete(j.pending, cell)
	return holdFinal, h.e, t
}

// unavailable reports the statuses by which a provider says it cannot serve at all, which no request of a cell's
// own causes.
func unavailable(status int) bool {
	switch status {
	case 502, 503, 504, 529:
		return true
	}
	return false
}

// refused handles a refused connection (or DNS or TLS failure) of an endpoint that never answered: no try is
// charged, and after unreachableFor the model is given up.
func (j *judge) refused(tk breaker.Ticket, cell int, e *llm.Error, latency time.Duration, now time.Time) judgement {
	j.brk.Release(tk)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.last = e
	t := j.tries[cell]
	t.Sent++
	t.LatencyMS = float64(latency.Microseconds()) / 1000
	j.tries[cell] = t
	if j.firstRefused.IsZero() {
		j.firstRefused = now
	}
	if now.Sub(j.firstRefused) >= unreachableFor {
		return judgement{verdict: unreachable, tries: t}
	}
	return judgement{verdict: retryCell, tries: t, at: now.Add(cellRetryDelay(t.Sent))}
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
func (j *judge) stalled(now time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stall > 0 && now.Sub(j.lastFinished) >= j.stall
}

// lastError is the last failure seen, over all attempts; nil when none.
func (j *judge) lastError() *llm.Error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.last
}

// triesOf returns the tries cell has used so far.
func (j *judge) triesOf(cell int) wire.Tries {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.settle()
	return j.tries[cell]
}

// save writes what the next attempt must know into p: the tries as they stand now, provisional charges given
// back when the breaker opened since, and the breaker's state.
func (j *judge) save(p *wire.PassProgress, now time.Time) {
	st := j.brk.State()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.settle()
	p.Tries = make(map[int]wire.Tries, len(j.tries))
	for c, t := range j.tries {
		p.Tries[c] = t
	}
	p.Answered = j.answered
	p.LastFinished = j.lastFinished
	if j.last != nil {
		p.LastClass, p.LastMessage = string(j.last.Class), j.last.Message
	}
	p.Outage = st
	p.Provider = st.Describe(now)
}

// stallMessage says why a stalled pass gave up: during an outage, since when the provider has been down.
func (j *judge) stallMessage(model string, now time.Time) string {
	st := j.brk.State()
	j.mu.Lock()
	defer j.mu.Unlock()
	if st.Open {
		return fmt.Sprintf("gave up: the provider of model %s has been down since %s (%s), %s without an answer "+
			"(run.stall_timeout %s); run again with --retry-failed once it is back",
			model, st.Since.UTC().Format(time.RFC3339), outageCause(st.Cause), now.Sub(j.lastFinished).Round(time.Second), j.stall)
	}
	msg := fmt.Sprintf("gave up: no cell of model %s finished for %s", model, j.stall)
	if j.last != nil {
		msg += "; last failure: " + j.last.Error()
	}
	return msg
}

// outageCause is the failure that opened the breaker as a give-up message names it: its class, status and code,
// and the provider's message ("ServerError 503 service_unavailable: service unavailable").
func outageCause(c breaker.Cause) string {
	s := c.String()
	if c.Class != "" && c.Class != s {
		s = c.Class + " " + s
	}
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s
}

// serving tells the breaker that tk's request for cell got an answer that shows the endpoint serving, though not
// one the cell can use (an auth or quota refusal, which ends the model by itself). The request counts among the
// cell's requests, not its tries: the refusal is the account's, and the cell is recorded with the model's
// give-up.
func (j *judge) serving(tk breaker.Ticket, cell int) {
	j.brk.Report(tk, breaker.Outcome{Kind: breaker.Answered})
	j.mu.Lock()
	defer j.mu.Unlock()
	j.answered = true
	t := j.tries[cell]
	t.Sent++
	j.tries[cell] = t
}
