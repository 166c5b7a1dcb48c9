package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// finish writes what the attempt's calls brought, then ends it by why the dispatch stopped: done, given up (every
// unfinished cell recorded with the reason), or an error Temporal retries. The last heartbeat is recorded after
// the give-ups are counted, so the next attempt starts from them.
func (p *pass) finish(ctx, runCtx context.Context) (res wire.PassResult, err error) {
	// The answers that arrived are paid for and must be written even when the attempt was cancelled.
	closeCtx, cancelClose := context.WithTimeout(runCtx, 30*time.Second)
	werr := p.rec.writer.Close(closeCtx)
	cancelClose()
	p.cu.release(runCtx, p.log)
	defer func() { activity.RecordHeartbeat(ctx, p.progress()) }()

	switch reason := p.stop.why(); {
	case werr != nil:
		return p.tally.result(), appError(errclass.Internal, fmt.Errorf("write results: %w", werr))
	case reason == stopFatal:
		e := p.stop.fatalError()
		return p.giveUp(ctx, string(e.Class), e.Code, e.Error())
	case reason == stopUnreachable:
		return p.giveUp(ctx, errclass.Unreachable, p.lastCode(), p.unreachableMessage())
	case reason == stopStalled:
		return p.giveUpStalled(ctx)
	case reason == stopBudget:
		if _, err := p.recordUnfinished(ctx, errclass.BudgetExhausted, "", p.budget.message()); err != nil {
			return p.tally.result(), appError(errclass.Internal, err)
		}
		res := p.tally.result()
		res.BudgetExhausted = true
		return res, nil
	case reason == stopCancelled:
		return p.tally.result(), ctx.Err()
	case reason == stopWorker && p.tally.unfinished() > 0:
		return p.tally.result(), appError(errclass.WorkerStopping, errors.New("the worker is stopping; the pass resumes on the next attempt"))
	}
	return p.tally.result(), nil
}

// recordUnfinished records every unfinished cell of the pass as failed with class, the provider's code and msg
// (each with the tries it used), where no record exists yet, and counts them.
func (p *pass) recordUnfinished(ctx context.Context, class, code, msg string) (int, error) {
	var recs []store.Record
	for _, idx := range p.pending(p.in.Pass.Start, p.in.Pass.End) {
		t := p.judge.triesOf(idx)
		recs = append(recs, store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: class, ErrorCode: code,
			ErrorMessage: msg, Attempts: t.Sent, Tries: t.Transient, LatencyMS: t.LatencyMS})
	}
	if len(recs) == 0 {
		return 0, nil
	}
	// A give-up never replaces an answer (the store's rule), so a stale attempt's late answer survives it.
	if err := p.a.Store.Put(context.WithoutCancel(ctx), p.in.RunID, recs); err != nil {
		return 0, fmt.Errorf("record unfinished cells: %w", err)
	}
	for _, r := range recs {
		p.tally.count(r)
	}
	return len(recs), nil
}

// giveUp records every unfinished cell with class, code and msg and ends the pass for good.
func (p *pass) giveUp(ctx context.Context, class, code, msg string) (wire.PassResult, error) {
	return p.giveUpAs(ctx, class, class, code, msg)
}

// giveUpStalled ends a pass in which nothing finished for the stall timeout. Its cells are Outage while the
// endpoint's breaker is open (the message keeps the cause), else they have the last failure's class; the pass's
// error is Stalled.
func (p *pass) giveUpStalled(ctx context.Context) (wire.PassResult, error) {
	cellClass, code := errclass.Stalled, p.lastCode()
	if st := p.brk.State(); st.Open {
		cellClass, code = errclass.Outage, st.Cause.Code
	} else if e := p.judge.lastError(); e != nil {
		cellClass = string(e.Class)
	}
	return p.giveUpAs(ctx, errclass.Stalled, cellClass, code, p.judge.stallMessage(p.model.ID, p.clock.Now()))
}

func (p *pass) giveUpAs(ctx context.Context, passClass, cellClass, code, msg string) (wire.PassResult, error) {
	if _, err := p.recordUnfinished(ctx, cellClass, code, msg); err != nil {
		return p.tally.result(), appError(errclass.Internal, err)
	}
	return p.tally.result(), appError(passClass, errors.New(msg))
}

// lastCode is the provider's code of the last failure, "" when none.
func (p *pass) lastCode() string {
	if e := p.judge.lastError(); e != nil {
		return e.Code
	}
	return ""
}

func (p *pass) unreachableMessage() string {
	msg := fmt.Sprintf("model %s: base_url %s never answered", p.model.ID, p.call.client.BaseURL())
	if e := p.judge.lastError(); e != nil {
		msg += ": " + e.Message
	}
	return msg + "; check base_url and that the server is up"
}
