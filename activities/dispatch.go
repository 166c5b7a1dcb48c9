package activities

import (
	"context"
	"time"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// dispatch calls the given cells, each once it is prepared (or served from the cache) and admitted, and tries
// failed ones again as the judge decides. It returns when every cell finished or dctx ended (the stopper); calls
// in flight are owned by p.calls and use runCtx.
func (p *pass) dispatch(dctx, runCtx context.Context, cells []int) {
	q := newCellQueue(p.clock, cells)
	for {
		idx, ok := q.next(dctx)
		if !ok {
			return
		}
		if !p.unheld(q, idx, idx, func(e *llm.Error, t wire.Tries) {
			p.logFailure(p.spec.Cell(idx), e)
			p.rec.record(failedRecord(idx, e, t), nil)
		}) {
			continue
		}
		p.images.prefetch(dctx, p.spec, q.peek(p.images.ahead()))
		var pc prepared
		if p.window != nil {
			l := p.window.take(dctx, idx, q.peek(2*lookAhead))
			switch {
			case l.stopped:
				q.done()
				return
			case l.err == nil && l.hit != nil:
				p.serve(l.prepared, *l.hit)
				q.done()
				continue
			case l.err == nil && l.taken:
				// Another run is calling this very request: its answer will be in the cache.
				q.retry(idx, p.clock.Now().Add(claimPoll))
				continue
			}
			pc = l.prepared
		} else if pc, ok = p.prep.prepare(dctx, idx); !ok {
			q.done()
			return // stopping: the cell stays unfinished for the next attempt
		}
		if pc.err != nil {
			if dctx.Err() != nil {
				q.done()
				return
			}
			p.rec.record(unprepared(idx, pc.err), nil)
			q.done()
			continue
		}
		adm, ok := p.admit.admit(dctx, p.admit.chatCost(pc.msgs), p.admit.chatTokens(pc.msgs))
		if !ok {
			q.done()
			return // stopping: the cell stays unfinished for the next attempt
		}
		p.calls.Go(func() {
			again, at := p.send(runCtx, pc, adm)
			p.requeue(q, idx, idx, again, at)
		})
	}
}

// requeue gives unit id of q (a cell, or an embed pass's request, named key to the judge) back after its call:
// done, to be sent again from at, or held until the judge decides.
func (p *pass) requeue(q *cellQueue, id, key int, again bool, at time.Time) {
	switch {
	case !again:
		q.done()
	case p.judge.isHeld(key):
		q.hold(id, at)
	default:
		q.retry(id, at)
	}
}

// unheld decides unit id of q, just taken from it, when the judge holds it (key names it to the judge): it
// reports whether to send it. A held unit's failure is recorded with fail when it turns out the unit's own, and
// the unit waits in the queue while nothing decided it.
func (p *pass) unheld(q *cellQueue, id, key int, fail func(*llm.Error, wire.Tries)) bool {
	if !p.judge.isHeld(key) {
		return true
	}
	switch v, e, t := p.judge.decide(key, q.others()); v {
	case holdFinal:
		fail(e, t)
		q.done()
		return false
	case holdWait:
		q.hold(id, p.clock.Now().Add(cellRetryBase))
		return false
	}
	// Released: the try is given back and the request goes again, a retry like any other.
	p.tally.retried(1)
	p.obs.Retried(p.model.Name)
	return true
}

// send makes the request of an admitted cell and records its outcome (with its answer in the response cache when
// the pass writes it). It reports whether the cell must be tried again, and from when.
func (p *pass) send(ctx context.Context, pc prepared, adm admission) (again bool, at time.Time) {
	if !p.brk.Current(adm.ticket) {
		// The breaker opened while the cell waited for the limiter: during an outage only the probe goes.
		p.admit.abandon(adm)
		return true, p.clock.Now()
	}
	p.tally.called()
	r := p.call.chat(ctx, pc.req)
	// The permit is held until the outcome is recorded: with on_error=raise, the dispatcher must see the stop
	// before the freed slot lets it send the next cell.
	var used int
	defer func() { adm.permit.Release(used) }()
	if r.err != nil {
		used = p.settleFailed(adm, r.err)
		c := pc.cell
		return p.failed(adm.ticket, c.Index, r, p.tally.unfinished(), func(t wire.Tries) {
			p.logFailure(c, r.err)
			p.rec.record(failedRecord(c.Index, r.err, t), nil)
		})
	}
	// Providers charge a request's max_tokens against TPM when it arrives and do not refund what the completion
	// left unused, so only the prompt estimate is trued up.
	used = r.resp.PromptTokens + maxTokens(p.model)
	p.answered(r.resp.RateLimit)
	answer := respcache.AnswerOf(r.resp)
	rec := p.rec.answerRecord(pc.cell, answer)
	rec.LatencyMS = float64(r.latency.Microseconds()) / 1000
	t := p.judge.answer(adm.ticket, pc.cell.Index, r.at)
	rec.Attempts, rec.Tries = t.Sent, t.Transient
	pc.pics.stamp(&rec)
	p.obs.Used(p.model.Name, rec.Usage())
	p.memory.add(pc.cell.Persona, experiment.Turn{User: pc.msgs[len(pc.msgs)-1].Content, Assistant: r.resp.Text})
	// The record's cost is added to spent when it is counted; here only the reservation ends.
	p.budget.settle(adm.reserved, 0)
	var entry *store.CacheEntry
	if p.cu.writes() {
		e := respcache.Entry(pc.key, p.model.Name, p.in.RunID, answer, r.at)
		entry = &e
	}
	p.rec.record(rec, entry)
	if len(r.resp.Logprobs) == 0 && r.resp.FinishReason != llm.FinishContentFilter && p.spec.CellAnswer(pc.cell).Logprobs {
		// The answer is kept (it was paid for), but every later call of this server would come without them too.
		p.stop.fail(noLogprobs(p.model))
	}
	return false, time.Time{}
}

// settleFailed ends the budget reservation of a failed request and returns the tokens to release its permit
// with: a call that timed out or lost its connection may still have been served and billed, so its tokens and
// its cost stay counted.
func (p *pass) settleFailed(adm admission, e *llm.Error) (used int) {
	if e.Class == errclass.Transport {
		p.budget.settle(adm.reserved, adm.reserved)
		return -1
	}
	p.budget.settle(adm.reserved, 0)
	return 0
}

// answered notes an answer's sign of the account's state: the gates pause when the provider says a budget of its
// window is used up (and a 429 until then is the account's limit), and a lowered concurrency grows back. The endpoint serves the model: from now on its refusals
// are the cells' own (refusals).
func (p *pass) answered(rl llm.RateLimitInfo) {
	now := p.clock.Now()
	if rl.RemainingRequests == 0 && rl.ResetRequests > 0 {
		p.limiter.Exhausted(now.Add(rl.ResetRequests))
	}
	if rl.RemainingTokens == 0 && rl.ResetTokens > 0 {
		p.limiter.Exhausted(now.Add(rl.ResetTokens))
	}
	p.limiter.Answered()
	p.refused.answered()
}

// calledURL is where the pass's requests go: the client's base URL and the path of their kind.
func (p *pass) calledURL() string {
	return p.call.client.BaseURL() + p.spec.RequestPath(p.model)
}

// failed handles a failed request by its class; key names the request to the judge (a cell, or the first cell of
// an embeddings batch), pool is how many such requests the pass has unfinished, and fail records what the request was for as failed with its tries. It reports whether
// the request must be sent again, and from when.
func (p *pass) failed(tk breaker.Ticket, key int, r reply, pool int, fail func(wire.Tries)) (again bool, at time.Time) {
	e := r.err
	switch {
	case e.Class.Retryable():
		var shed bool
		if e.Class == errclass.RateLimited {
			// Never the cell's fault. The limiter's rule (ratelimit/shed.go) tells the account's limit, which
			// pauses every call of the model, from a call the provider shed, which waits on its own below.
			pause := e.RetryAfter
			if pause <= 0 {
				pause = defaultRateLimitPause
			}
			shed = !p.limiter.RateLimited(pause, e.Exhausted).Wall
		}
		var j judgement
		if shed {
			j = p.judge.shed(tk, key, e, r.latency, r.at, pool)
		} else {
			j = p.judge.failure(tk, key, e, r.latency, r.at, pool)
		}
		if shed && j.verdict == retryCell && !j.tripped {
			// Only this call waits the provider's Retry-After, jittered by the cell and its try so that calls shed
			// together come back apart; the others go on.
			j.at = later(j.at, r.at.Add(ratelimit.ShedWait(e.RetryAfter, defaultRateLimitPause,
				uint64(key)<<16^uint64(j.tries.Sent))))
		}
		switch j.verdict {
		case cellFailed:
			fail(j.tries)
			return false, time.Time{}
		case unreachable:
			p.stop.stop(stopUnreachable)
		}
		if j.held {
			return true, j.at // the judge holds it: see requeue
		}
		if j.tripped {
			p.log.Warn("the provider is down: no cell is sent but a probe until it answers; no cell is charged",
				"model", p.model.ID, "cause", e.Error(), "state", p.brk.State().Describe(r.at))
		}
		p.tally.retried(1)
		p.obs.Retried(p.model.Name)
		return true, j.at
	case e.Class.EndsModel():
		// A class that ends its model (a key refused, a quota used up): no later call of the model can succeed.
		p.judge.serving(tk, key)
		p.stop.fail(e)
		return false, time.Time{}
	default:
		tries := p.judge.finished(&tk, key, r.at, e.Status != 0)
		tries.LatencyMS = float64(r.latency.Microseconds()) / 1000
		fail(tries)
		if class := p.refused.refused(e); class != "" {
			// No cell of the model can pass: the calls in flight land, no other is sent. The stop comes before
			// this call's slot is freed.
			p.stop.fail(deadModel(p.spec, p.in.Pass.Model, class, e, p.calledURL()))
		}
		return false, time.Time{}
	}
}

// serve records a cell answered from the cache. Its cost is what the call would have cost: the run counts it as
// saved, not spent.
func (p *pass) serve(pc prepared, a respcache.Answer) {
	rec := p.rec.answerRecord(pc.cell, a)
	rec.Cached = true
	pc.pics.stamp(&rec)
	p.judge.served(pc.cell.Index, p.clock.Now())
	p.obs.Used(p.model.Name, rec.Usage())
	p.memory.add(pc.cell.Persona, experiment.Turn{User: pc.msgs[len(pc.msgs)-1].Content, Assistant: a.Text})
	p.rec.record(rec, nil)
}

func (p *pass) logFailure(c experiment.Cell, e *llm.Error) {
	if p.spec.Run.OnError == experiment.OnErrorIgnore {
		return
	}
	p.log.Warn("model call failed", "model", p.model.ID, "seed", p.spec.Seeds[c.Seed],
		"item", p.spec.Questionnaire.Items[c.Item].ID, "persona", p.spec.Personas[c.Persona].ID,
		"class", string(e.Class), "error", e.Message)
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
