package activities

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/wire"
)

// background starts the loops that run beside a pass's dispatch: the heartbeat (progress, stall, outage reports),
// the share refresh, the renewal of cache claims, and the watch for a stopping worker or a cancelled attempt. The
// function it returns stops them and waits for them.
func (p *pass) background(ctx, runCtx context.Context) (stop func()) {
	var bg sync.WaitGroup
	bgCtx, cancel := context.WithCancel(runCtx)
	q := &queuedGauge{obs: p.obs, model: p.model.Name}
	bg.Go(func() { p.heartbeat(ctx, bgCtx, q) })
	bg.Go(func() { p.share.keep(bgCtx) })
	bg.Go(func() { p.outage.watch(bgCtx, p.brk, p.heartbeatEvery()) })
	if p.cu.claims() && !p.spec.IsEmbed() { // an embed pass claims nothing (see dispatchEmbed)
		bg.Go(func() { p.cu.renew(bgCtx, p.clock, p.log) })
	}
	bg.Go(func() {
		select {
		case <-activity.GetWorkerStopChannel(ctx):
			// A stopping worker (Ctrl-C, deploy) gives its activities WorkerStopTimeout before it cancels them:
			// stop sending, and let the calls in flight land and be recorded.
			p.stop.stop(stopWorker)
		case <-ctx.Done():
			p.stop.stop(stopCancelled)
		case <-bgCtx.Done():
		}
	})
	return func() {
		cancel()
		bg.Wait()
		q.set(0)
	}
}

// heartbeat reports progress and gives the pass up when it stalled, until bg ends. Heartbeats are also how a cancellation reaches the activity (through ctx).
func (p *pass) heartbeat(ctx, bg context.Context, q *queuedGauge) {
	tick(bg, p.heartbeatEvery(), func() {
		activity.RecordHeartbeat(ctx, p.progress())
		q.set(max(0, p.tally.unfinished()-p.limiter.Stats().InFlight))
		if p.judge.stalled(p.clock.Now()) {
			p.stop.stop(stopStalled)
		}
	})
}

// heartbeatEvery is how often the pass heartbeats.
func (p *pass) heartbeatEvery() time.Duration { return p.a.heartbeatEvery() }

// heartbeatEvery is how often activities heartbeat: HeartbeatEvery, default 1 s.
func (a *Activities) heartbeatEvery() time.Duration {
	if a.HeartbeatEvery > 0 {
		return a.HeartbeatEvery
	}
	return time.Second
}

// keepAlive heartbeats the activity of ctx every d until the function it returns is called (which waits for
// the heartbeating goroutine). The batch pass's activities are short but wait on the provider (an upload of
// 200 MB, a listing, a result file streamed): the heartbeat lets the server tell a dead worker from a slow
// provider within the heartbeat timeout. Outside an activity (tests calling the method) it does nothing.
func keepAlive(ctx context.Context, d time.Duration) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	var wg sync.WaitGroup
	hctx, cancel := context.WithCancel(ctx)
	wg.Go(func() { tick(hctx, d, func() { activity.RecordHeartbeat(ctx) }) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// tick calls fn every d until ctx ends. The pass's background loops (heartbeat, shares, claims) are ticks.
func tick(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// queuedGauge tells the observer how many cells of the pass wait for the model's limits. Only the heartbeat
// goroutine and, after it stopped, the stop of the background call it.
type queuedGauge struct {
	obs   Observer
	model string
	n     int
}

func (q *queuedGauge) set(n int) {
	if d := n - q.n; d != 0 {
		q.obs.Queued(q.model, d)
		q.n = n
	}
}

// Outages tells a run's workflow about outages of its models' providers. Optional: without it the workflow's
// progress does not show them (the pass's heartbeat details still do).
type Outages interface {
	Outage(ctx context.Context, workflowID string, o wire.Outage) error
}

// outageWatch reports each change of the breaker a pass sees (opened, a failed probe moved the next one, closed)
// to the workflow and to the metrics. It runs in a goroutine of its own, so a slow signal never delays a
// heartbeat; a signal that failed is sent again, with the state as it is then, on the next tick.
type outageWatch struct {
	rep        Outages
	workflowID string
	pass       int
	model      experiment.Model
	obs        Observer
	log        log.Logger
	last       breaker.State
}

func (w *outageWatch) watch(ctx context.Context, b *breaker.Breaker, every time.Duration) {
	tick(ctx, every, func() { w.check(ctx, b.State()) })
}

func (w *outageWatch) check(ctx context.Context, st breaker.State) {
	w.obs.Breaker(w.model.Name, st)
	if st.Open == w.last.Open && st.Step == w.last.Step && st.Since.Equal(w.last.Since) {
		return
	}
	if w.rep == nil || w.workflowID == "" {
		w.last = st
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := w.rep.Outage(sctx, w.workflowID, wire.Outage{Pass: w.pass, Model: w.model.ID, State: st}); err != nil {
		if ctx.Err() == nil {
			w.log.Debug("telling the workflow of the provider's state failed; the heartbeat details still show it", "error", err)
		}
		return
	}
	w.last = st
}
