package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/wire"
)

// How a chunk waits for its batch. Runs started by this release follow the batch with AwaitBatch, a long
// activity that polls the provider itself and completes only when the batch's status changes (a handful of
// times per batch), so a batch that runs for a day adds a few events to the history, not a timer and an
// activity per poll: the history of a pass stays bounded however long its batches take, and nothing needs to
// continue as new while a pass runs. Runs started before (wire.ChangeBatchAwait absent from their history) keep
// the loop they recorded: a durable timer of poll_every, backing off to experiment.MaxPollEvery while nothing
// changes, and a PollBatch after each; chunk.cancelBatch's wait likewise (30 s timers then, AwaitBatch now).

// batchAwaitV1 is the version of wire.ChangeBatchAwait that waits with AwaitBatch.
const batchAwaitV1 workflow.Version = 1

// batchAwaits reports whether the run waits for its batches with AwaitBatch. Its first call records the
// version in the history (a marker, once per run); a replay of a run recorded before the change gets
// DefaultVersion, and every later call of the run the same answer.
func batchAwaits(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, wire.ChangeBatchAwait, workflow.DefaultVersion, batchAwaitV1) >= batchAwaitV1
}

// batchAwaitTimeout is AwaitBatch's StartToCloseTimeout: longer than the providers' 24-hour completion window
// plus the minutes a cancel takes, so that one attempt may follow a batch through its longest status; the
// heartbeat timeout, not this, tells a dead worker.
const batchAwaitTimeout = 48 * time.Hour

// batchAwaitAttempts bounds AwaitBatch's attempts, which end only when a poll fails otherwise than with a 404
// (those are counted inside an attempt, see activities.AwaitBatch) or the worker dies: at most 10 minutes apart,
// about 3.5 hours of failed polls. A batch runs for up to a day, and a provider's API may be down for an hour
// while its batches run on.
const (
	batchAwaitAttempts   = 30
	batchAwaitMaxBackoff = 10 * time.Minute
)

// batchAwaitCtx is the options of AwaitBatch: a heartbeat timeout of seconds, one attempt allowed to last a
// batch's whole window, batchAwaitAttempts attempts, on the batch waits' queue of the run's own task queue
// (wire.WaitQueueFor): wire.WaitQueue for a run on wire.TaskQueue, as every run recorded before per-run queues
// existed, so their replays schedule the same.
func batchAwaitCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           wire.WaitQueueFor(workflow.GetInfo(ctx).TaskQueueName),
		StartToCloseTimeout: batchAwaitTimeout,
		HeartbeatTimeout:    10 * time.Second,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: batchAwaitMaxBackoff,
			MaximumAttempts: batchAwaitAttempts, NonRetryableErrorTypes: errclass.NonRetryable()},
	})
}

// wait waits until the chunk's batch, created as info, is terminal, and keeps its state on the run's board. It
// returns the batch as last seen, and the error that ended the wait early (the run's cancellation among them).
func (c *chunk) wait(ctx workflow.Context, info wire.BatchInfo) (wire.BatchInfo, error) {
	if batchAwaits(ctx) {
		return c.await(ctx, info)
	}
	return c.poll(ctx, info)
}

// await follows the batch with AwaitBatch until it is terminal: one activity per status it goes through.
func (c *chunk) await(ctx workflow.Context, info wire.BatchInfo) (wire.BatchInfo, error) {
	in := wire.BatchAwaitInput{BatchRef: wire.BatchRef{RunID: c.bp.r.runID, Model: c.bp.p.Model, ID: info.ID}, Batch: info,
		PollEvery: c.bp.m.Batch.PollEvery}
	for !info.Status.Terminal() {
		var w wire.BatchWatch
		if err := wire.AwaitBatch.Execute(batchAwaitCtx(ctx, "await "+info.ID), in).Get(ctx, &w); err != nil {
			return info, err
		}
		info = w.Batch
		in.Batch, in.Polls, in.Waited = w.Batch, w.Polls, w.Waited
		c.bp.seen(ctx, c.key, info)
	}
	return info, nil
}

// poll is the wait of runs recorded before wire.ChangeBatchAwait, unchanged: a durable timer, then a PollBatch,
// every poll_every while the batch changes, the interval doubling up to experiment.MaxPollEvery while nothing
// does.
func (c *chunk) poll(ctx workflow.Context, info wire.BatchInfo) (wire.BatchInfo, error) {
	every := time.Duration(c.bp.m.Batch.PollEvery)
	interval := every
	for !info.Status.Terminal() {
		prev := info
		err := workflow.Sleep(ctx, interval)
		if err == nil {
			ref := wire.BatchRef{RunID: c.bp.r.runID, Model: c.bp.p.Model, ID: info.ID}
			err = wire.PollBatch.Execute(batchWaitCtx(ctx, "poll "+info.ID), ref).Get(ctx, &info)
		}
		if err != nil {
			return prev, err
		}
		// Nothing changed: ask less often, up to the longest interval.
		if info.Status == prev.Status && info.Counts == prev.Counts {
			interval = min(2*interval, experiment.MaxPollEvery)
		} else {
			interval = every
		}
		c.bp.seen(ctx, c.key, info)
	}
	return info, nil
}
