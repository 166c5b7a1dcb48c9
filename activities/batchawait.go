package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/wire"
)

// AwaitBatch is Temporal's "frequent polling" pattern for a provider batch: one long activity polls the batch
// through its driver, waiting between polls on the injected clock, and returns when the batch's status is no
// longer the one the workflow knows (validating → in_progress → finalizing → completed: a handful per batch), so
// that a day of polls is a handful of activities in the workflow's history instead of a timer and an activity
// per poll. Counts that change while the status does not stay in the heartbeat details (wire.BatchWatch), which
// the Web UI's pending-activity view and `starter status` read; the workflow's progress query has the batch as of
// its last status change.
//
// Every poll is heartbeated, and the heartbeat is repeated every HeartbeatEvery between polls: the workflow
// gives the activity a heartbeat timeout of seconds, so a dead worker's attempt is retried elsewhere within
// seconds, and a retry resumes from the last heartbeat (its batch, its poll count and its interval) with a poll
// at once (the retry's backoff was its wait). Cancelling the run reaches the activity through its heartbeat: it
// returns the context's error, and the workflow cancels the batch (which it then follows with AwaitBatch again).
//
// The schedule (see awaitWait and awaitNext): a batch just created is polled after awaitFirst, then whenever as
// long again has passed as since the first poll's wait began (5 s, 10 s, 20 s, 40 s after the first call
// started, with the 5 s default), so a batch of seconds is collected within seconds of its end; then every
// poll_every while its status or counts change, the interval doubling up to experiment.MaxPollEvery while nothing
// does, as the workflow's poll loop did before. A cancelling batch is polled every poll_every, at most every
// awaitCancelling, without back-off: providers end a cancelled batch within minutes, and the run's cancellation
// waits for it.
func (a *Activities) AwaitBatch(ctx context.Context, in wire.BatchAwaitInput) (wire.BatchWatch, error) {
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.BatchWatch{}, err
	}
	api, err := a.batchAPIOf(spec.Models[in.Model])
	if err != nil {
		return wire.BatchWatch{}, err
	}
	return a.awaitBatch(ctx, api.driver, in)
}

// The schedule's fixed intervals.
const (
	// awaitFirst is the wait before the first poll of a batch just created, and the shortest of its first waits.
	awaitFirst = 5 * time.Second
	// awaitCancelling is the longest wait between the polls of a cancelling batch.
	awaitCancelling = 30 * time.Second
	// pollTimeout bounds one poll: a provider answers a batch's status in seconds.
	pollTimeout = 2 * time.Minute
)

// awaitBatch is AwaitBatch on driver d, in an activity: it resumes from the attempt's heartbeat details when a
// previous attempt left some, and heartbeats where it stands on every poll and every HeartbeatEvery.
func (a *Activities) awaitBatch(ctx context.Context, d batchDriver, in wire.BatchAwaitInput) (wire.BatchWatch, error) {
	w := wire.BatchWatch{Batch: in.Batch, Polls: in.Polls, Every: in.PollEvery}
	resumed := false
	if activity.HasHeartbeatDetails(ctx) {
		var last wire.BatchWatch
		if err := activity.GetHeartbeatDetails(ctx, &last); err == nil && last.Batch.ID == in.ID {
			w, resumed = last, true
		}
	}
	var mu sync.Mutex
	latest := w
	beat := func(x wire.BatchWatch) {
		mu.Lock()
		latest = x
		mu.Unlock()
		activity.RecordHeartbeat(ctx, x)
	}
	beat(w)
	var wg sync.WaitGroup
	hctx, cancel := context.WithCancel(ctx)
	wg.Go(func() {
		// Heartbeats are measured on the server's clock, not the injected one: this ticks in real time.
		tick(hctx, a.heartbeatEvery(), func() {
			mu.Lock()
			x := latest
			mu.Unlock()
			activity.RecordHeartbeat(ctx, x)
		})
	})
	defer func() {
		cancel()
		wg.Wait()
	}()
	return watchBatch(ctx, d, a.clock(), in, w, resumed, beat)
}

// watchBatch polls batch in.ID through d on the schedule from w, at once first when now is set, telling beat of
// every poll, until its status differs from in.Batch's or is terminal, and returns where it stands then. A poll's
// error is returned as the driver gave it (as PollBatch returns it), for Temporal to retry the activity; the
// end of ctx ends the wait.
func watchBatch(ctx context.Context, d batchDriver, clk ratelimit.Clock, in wire.BatchAwaitInput, w wire.BatchWatch, now bool,
	beat func(wire.BatchWatch)) (wire.BatchWatch, error) {
	pollEvery := time.Duration(in.PollEvery)
	if pollEvery <= 0 {
		pollEvery = experiment.DefaultPollEvery
	}
	for {
		if !now {
			select {
			case <-ctx.Done():
				return w, fmt.Errorf("awaiting batch %s: %w", in.ID, ctx.Err())
			case <-clk.After(awaitWait(w, pollEvery)):
			}
		}
		now = false
		// A poll that hangs (a connection gone half-open) would hold the wait while the heartbeats go on: it
		// gets a deadline of its own, and a poll that misses it fails this attempt, which is retried.
		pctx, cancel := context.WithTimeout(ctx, pollTimeout)
		info, err := d.Poll(pctx, in.ID)
		cancel()
		if err != nil {
			return w, err
		}
		w = awaitNext(w, info, pollEvery)
		beat(w)
		if info.Status != in.Batch.Status || info.Status.Terminal() {
			return w, nil
		}
	}
}

// awaitWait is how long to wait before the next poll of a batch that stands at w: awaitCancelling at most
// while it is cancelling; while its first waits last less than pollEvery, awaitFirst for the first two and
// then twice the one before; then w.Every.
func awaitWait(w wire.BatchWatch, pollEvery time.Duration) time.Duration {
	if w.Batch.Status == wire.BatchStatusCancelling {
		return min(pollEvery, awaitCancelling)
	}
	if r, ok := rampWait(w.Polls, pollEvery); ok {
		return r
	}
	return max(time.Duration(w.Every), time.Second)
}

// rampWait is the wait before poll n+1 of a batch just created (n polls done): awaitFirst << (n-1), awaitFirst
// for n = 0, and whether it is still shorter than pollEvery (once it is not, the schedule is w.Every's).
func rampWait(n int, pollEvery time.Duration) (time.Duration, bool) {
	d := awaitFirst
	for i := 1; i < n && d < pollEvery; i++ {
		d *= 2
	}
	return min(d, pollEvery), d < pollEvery
}

// awaitNext is where the watch stands after a poll that saw info: the steady interval is pollEvery again when
// the status or the counts changed (or while the first waits last), doubled up to experiment.MaxPollEvery when
// nothing did, as the workflow's poll loop backed off.
func awaitNext(w wire.BatchWatch, info wire.BatchInfo, pollEvery time.Duration) wire.BatchWatch {
	every := time.Duration(w.Every)
	_, ramping := rampWait(w.Polls, pollEvery)
	switch {
	case ramping || every <= 0 || info.Status != w.Batch.Status || info.Counts != w.Batch.Counts:
		every = pollEvery
	default:
		every = min(2*every, experiment.MaxPollEvery)
	}
	return wire.BatchWatch{Batch: info, Polls: w.Polls + 1, Every: experiment.Duration(every)}
}
