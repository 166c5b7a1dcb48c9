package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/batchapi"
	"github.com/silicolab/silico/errclass"
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
// The schedule (see awaitWait and awaitNext): every poll_every while the batch's status or counts change, the
// interval doubling up to experiment.MaxPollEvery while nothing does, as the workflow's poll loop did before; and
// no wait longer than a quarter of the time waited so far since the batch's first poll (awaitShare), nor shorter
// than awaitFirst for that reason. So a batch just created is polled after 5, 10, 15, 20, 25, 31, 39 … s, and a
// batch that ends is collected after at most a quarter of the time it ran (or 5 s) more: one that ended at 20.5 s
// was collected at 41 s when the first waits doubled. A cancelling batch is polled every poll_every, at most every
// awaitCancelling, without back-off: providers end a cancelled batch within minutes, and the run's cancellation
// waits for it.
//
// Two answers end the wait without a status, each after a bound, as a non-retryable failure the workflow acts on:
// a batch the provider answers 404 for on lostPolls polls in a row spanning lostAfter of waiting is taken as lost
// (errclass.BatchLost: its results can never arrive, so the workflow submits the chunk again), and a batch whose
// state silico does not know (wire.BatchStatusUnknown) for unknownFor is given up (errclass.BatchStateUnknown).
// A single 404 is no proof (a gateway that fails now and then, a provider whose reads lag behind a create): the
// wait goes on, showing the failure in its heartbeat, until the bound is reached; a poll that finds the batch again
// starts the count over. Any other failed poll fails the attempt, which Temporal retries (a bounded number of
// times, see workflows/batchwait.go).
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

// The schedule's fixed intervals, and the bounds of a batch missing or in an unknown state (wire.BatchLostPolls).
const (
	// awaitFirst is the wait before the first poll of a batch just created, and the shortest of its waits.
	awaitFirst = 5 * time.Second
	// awaitShare bounds a wait to 1/awaitShare of the time waited so far (when that is longer than awaitFirst).
	awaitShare = 4
	// awaitCancelling is the longest wait between the polls of a cancelling batch.
	awaitCancelling = 30 * time.Second
	// pollTimeout bounds one poll: a provider answers a batch's status in seconds.
	pollTimeout = 2 * time.Minute
	lostPolls   = wire.BatchLostPolls
	lostAfter   = wire.BatchLostAfter
	unknownFor  = wire.BatchUnknownFor
)

// awaitBatch is AwaitBatch on driver d, in an activity: it resumes from the attempt's heartbeat details when a
// previous attempt left some, and heartbeats where it stands on every poll and every HeartbeatEvery.
func (a *Activities) awaitBatch(ctx context.Context, d batchDriver, in wire.BatchAwaitInput) (wire.BatchWatch, error) {
	w := wire.BatchWatch{Batch: in.Batch, Polls: in.Polls, Every: in.PollEvery, Waited: in.Waited, UnknownFrom: in.Waited}
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
// error is returned as the driver gave it (as PollBatch returns it), for Temporal to retry the activity, except a
// 404, which is counted (a batch missing long enough is lost); a batch in an unknown state for too long is given
// up. The end of ctx ends the wait.
func watchBatch(ctx context.Context, d batchDriver, clk ratelimit.Clock, in wire.BatchAwaitInput, w wire.BatchWatch, now bool,
	beat func(wire.BatchWatch)) (wire.BatchWatch, error) {
	pollEvery := time.Duration(in.PollEvery)
	if pollEvery <= 0 {
		pollEvery = experiment.DefaultPollEvery
	}
	for {
		if !now {
			wait := awaitWait(w, pollEvery)
			select {
			case <-ctx.Done():
				return w, fmt.Errorf("awaiting batch %s: %w", in.ID, ctx.Err())
			case <-clk.After(wait):
			}
			w.Waited += experiment.Duration(wait)
		}
		now = false
		// A poll that hangs (a connection gone half-open) would hold the wait while the heartbeats go on: it
		// gets a deadline of its own, and a poll that misses it fails this attempt, which is retried.
		pctx, cancel := context.WithTimeout(ctx, pollTimeout)
		info, err := d.Poll(pctx, in.ID)
		cancel()
		if err != nil && batchapi.NotFound(err) {
			w = awaitMissing(w, err)
			beat(w)
			if lost(w) {
				return w, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
					"batch %s lost: the provider answered %d polls in a row over %s that it does not know it (%v)",
					in.ID, w.Missing, time.Duration(w.Waited-w.MissingFrom).Round(time.Second), err), errclass.BatchLost, err, w)
			}
			continue
		}
		if err != nil {
			return w, err
		}
		w = awaitNext(w, info, pollEvery)
		beat(w)
		if info.Status != in.Batch.Status || info.Status.Terminal() {
			return w, nil
		}
		if info.Status == wire.BatchStatusUnknown && time.Duration(w.Waited-w.UnknownFrom) >= unknownFor {
			return w, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"batch %s: the provider reported its state as %q, which silico does not know, for %s", in.ID, info.State,
				time.Duration(w.Waited-w.UnknownFrom).Round(time.Second)), errclass.BatchStateUnknown, nil, w)
		}
	}
}

// awaitMissing is where the watch stands after a poll that the provider answered 404 with err.
func awaitMissing(w wire.BatchWatch, err error) wire.BatchWatch {
	if w.Missing == 0 {
		w.MissingFrom = w.Waited
	}
	w.Missing++
	w.Polls++
	w.Failure = err.Error()
	return w
}

// lost reports whether the polls of w have found the batch missing long enough to take it as lost.
func lost(w wire.BatchWatch) bool {
	return w.Missing >= lostPolls && time.Duration(w.Waited-w.MissingFrom) >= lostAfter
}

// awaitWait is how long to wait before the next poll of a batch that stands at w: awaitCancelling at most
// while it is cancelling; else w.Every, but no more than a quarter of the time waited so far (awaitShare) and no
// less than awaitFirst for that reason.
func awaitWait(w wire.BatchWatch, pollEvery time.Duration) time.Duration {
	if w.Batch.Status == wire.BatchStatusCancelling {
		return min(pollEvery, awaitCancelling)
	}
	return min(max(time.Duration(w.Every), time.Second), max(awaitFirst, time.Duration(w.Waited)/awaitShare))
}

// awaitNext is where the watch stands after a poll that saw info: the interval is pollEvery again when the
// status or the counts changed, doubled up to experiment.MaxPollEvery when nothing did, as the workflow's poll
// loop backed off; the batch is found, so no longer missing.
func awaitNext(w wire.BatchWatch, info wire.BatchInfo, pollEvery time.Duration) wire.BatchWatch {
	every := time.Duration(w.Every)
	switch {
	case every <= 0 || info.Status != w.Batch.Status || info.Counts != w.Batch.Counts:
		every = pollEvery
	default:
		every = min(2*every, experiment.MaxPollEvery)
	}
	return wire.BatchWatch{Batch: info, Polls: w.Polls + 1, Every: experiment.Duration(every), Waited: w.Waited,
		UnknownFrom: w.UnknownFrom}
}
