package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/wire"
)

// A batch the provider failed as a whole (status failed: it ran nothing) is handled by its kind, behind
// wire.ChangeBatchFailures; runs recorded before it submitted the failed batch's cells again in the next round at
// once. The chunk collects the failed batch as any other (CollectBatch records the cells of the lines its errors
// name, errclass.BatchLineRejected, and returns the others as Again), then asks batchFailed what to do:
//
//   - token_limit_exceeded (the organisation's enqueued-token limit for the model is reached): wait until one of
//     the run's other batches of the model in flight ends, then resubmit after a growing delay, in the same round:
//     it does not count against run.max_attempts. A chunk whose batch exceeds the limit again with no other batch
//     of its model in flight is too big for the limit: it is split in halves, each a chunk of its own. Which
//     batches are in flight is judged once no other submission of the model is under way
//     (wire.ChangeTokenLimitSubmissions): a batch the provider accepted while this one was refused is known to
//     the run only when its submission returns, which may come after the refusal.
//   - a failure that names input lines: those lines' cells are recorded failed; the rest is resubmitted at once,
//     in the same round.
//   - anything else: back off (the same growing delay) and submit again in the next round, which counts.
//
// Every resubmission has a batch key of its own (wire.BatchChunkInput.Try, or the next round), so it never adopts
// the batch that failed, while an attempt that dies right after its create is adopted by the next attempt as
// before; and, the input file being named by its content (batchapi), the same lines reuse the file already
// uploaded. The reason shows in the batch's progress while the chunk waits (wire.BatchProgress.Reason), and cells
// still unanswered when the chunk's rounds are used up are recorded errclass.BatchNotRun with it.

// The growing delay before a resubmission starts at the model's batch.poll_every and doubles up to maxFailBackoff.
const maxFailBackoff = 30 * time.Minute

// codeTokenLimit is OpenAI's code of a batch refused because the organisation's enqueued-token limit for the
// model is reached ("Please try again once some in_progress batches have been completed").
const codeTokenLimit = "token_limit_exceeded"

// chunkFailures is what a chunk keeps of the batches the provider failed as a whole.
type chunkFailures struct {
	// try is the number of resubmissions that did not count as rounds: wire.BatchChunkInput.Try.
	try int
	// backoff is the delay before the next resubmission; zero before the first.
	backoff time.Duration
	// limitAlone counts the token-limit failures in a row with no other batch of the model in flight from the
	// submission to the failure; ended is the board's count of the model's ended
	// batches when the chunk last resubmitted.
	limitAlone int
	ended      int
	// failed counts the chunk's batches the provider failed as a whole; reason is the last one's reason, for the
	// cells recorded unanswered.
	failed int
	reason string
}

// delay is the next growing delay: first, then doubled, at most maxFailBackoff.
func (f *chunkFailures) delay(first time.Duration) time.Duration {
	if f.backoff == 0 {
		f.backoff = min(max(first, time.Second), maxFailBackoff)
	} else {
		f.backoff = min(2*f.backoff, maxFailBackoff)
	}
	return f.backoff
}

// failureReason is a failed batch's reasons as one line.
func failureReason(info wire.BatchInfo) string {
	var parts []string
	for _, f := range info.Failures {
		parts = append(parts, f.String())
	}
	if len(parts) == 0 {
		parts = info.Errors // a batch read before Failures existed
	}
	if len(parts) == 0 {
		return "batch " + info.ID + " failed; the provider gave no reason"
	}
	return strings.Join(parts, "; ")
}

// batchFailed decides what the chunk does after its batch info failed as a whole and its collect left cells to
// answer (before the collect, left after it): it waits, and shows why, as the kind of the failure asks (see the
// comment at the top of this file), then goes on in the next round (a failure that counts), in the same round (one
// that does not), in two halves (stepSplit), or ends when the run was cancelled meanwhile. A failure that counts in
// the chunk's last round ends the chunk at once. Runs recorded before wire.ChangeBatchFailures go on in the next
// round at once.
func (c *chunk) batchFailed(ctx workflow.Context, info wire.BatchInfo, before, left int) step {
	if workflow.GetVersion(ctx, wire.ChangeBatchFailures, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return stepNext
	}
	f := &c.fails
	f.failed++
	f.reason = failureReason(info)
	workflow.GetLogger(ctx).Warn("the provider failed a batch as a whole", "batch", info.ID, "pass", c.bp.p.Index,
		"key", c.key, "reason", f.reason)
	switch {
	case left < before:
		// Lines named and their cells recorded: the others were refused with them, through no fault of theirs.
		f.limitAlone = 0
		f.try++
		return stepRepeat
	case tokenLimited(info):
		return c.overTokenLimit(ctx, left)
	default:
		f.limitAlone = 0
		return c.counted(ctx)
	}
}

// overTokenLimit decides what the chunk, whose batch failed over the enqueued-token limit with left cells to
// answer, does: wait for the run's other batches of its model and resubmit, split when it is alone over the
// limit again, or count the failure when neither can help.
func (c *chunk) overTokenLimit(ctx workflow.Context, left int) step {
	f, run, model := &c.fails, &c.bp.r.batch, c.bp.m.ID
	// The other chunks' submissions under way may have created the batches that hold the missing tokens: the run
	// sees them only once they return, so the chunk waits for them before it judges (they take seconds).
	if workflow.GetVersion(ctx, wire.ChangeTokenLimitSubmissions, workflow.DefaultVersion, 1) >= 1 {
		if err := workflow.Await(ctx, func() bool { return run.submitting[model] == 0 }); err != nil {
			return stepEnd
		}
	}
	// Alone: no other batch of the model is in flight, and none ended since the chunk resubmitted (one that ended
	// between the create and its failure may have held the tokens that were missing).
	if run.board.inFlight(model) == 0 && (f.limitAlone == 0 || run.board.ended[model] == f.ended) {
		f.limitAlone++
		if f.limitAlone >= 2 && left > 1 && c.depth < maxSplitDepth {
			// Alone, and over the limit again after waiting: the chunk itself is more than the limit.
			c.waiting(ctx, "")
			return stepSplit
		}
		if left <= 1 || c.depth >= maxSplitDepth {
			// One request over the limit alone, or an eighth of a chunk: no wait or split makes it fit, or the limit
			// is held by batches the run does not see (another run's, another team's).
			return c.counted(ctx)
		}
	} else {
		f.limitAlone = 1 // if it fails again with none in flight, it is the chunk itself that is over the limit
		if n := run.board.inFlight(model); n > 0 {
			c.waiting(ctx, fmt.Sprintf("%s · waiting for %d other batch(es) of %s to end, then resubmitting", f.reason, n, model))
			if err := workflow.Await(ctx, func() bool { return run.board.inFlight(model) < n }); err != nil {
				return stepEnd
			}
		}
	}
	f.try++
	next := c.backOff(ctx, stepRepeat)
	f.ended = run.board.ended[model]
	return next
}

// counted is a failure that counts against run.max_attempts: after the chunk's last round it ends the chunk at
// once (nothing is left to wait for), else it backs off before the next round.
func (c *chunk) counted(ctx workflow.Context) step {
	if c.round+1 >= c.bp.rounds {
		return stepNext
	}
	return c.backOff(ctx, stepNext)
}

// backOff waits the chunk's next growing delay, showing why, and returns next (stepEnd when the run was
// cancelled meanwhile).
func (c *chunk) backOff(ctx workflow.Context, next step) step {
	d := c.fails.delay(time.Duration(c.bp.m.Batch.PollEvery))
	at := workflow.Now(ctx).Add(d).UTC().Format(time.TimeOnly)
	c.waiting(ctx, fmt.Sprintf("%s · resubmitting at %s UTC", c.fails.reason, at))
	if err := workflow.Sleep(ctx, d); err != nil {
		return stepEnd
	}
	return next
}

// waiting shows reason on the progress of the chunk's batch (empty: none).
func (c *chunk) waiting(ctx workflow.Context, reason string) {
	c.bp.edit(ctx, c.key, func(b *wire.BatchProgress) { b.Reason = reason })
}

// tokenLimited reports whether the provider failed the batch because the enqueued-token limit is reached.
func tokenLimited(info wire.BatchInfo) bool {
	for _, f := range info.Failures {
		if f.Code == codeTokenLimit {
			return true
		}
	}
	return false
}

// maxSplitDepth is how often a chunk is halved at most (to an eighth): "alone and over the limit" is judged on the
// run's own batches, so an organisation whose limit other runs hold would otherwise halve every chunk down to
// one-cell batches. Past it, a failure counts against run.max_attempts.
const maxSplitDepth = 3

// split runs the chunk's cells, which its batch could not hold under the enqueued-token limit, as two chunks of
// its pass, the halves, each under a new chunk number of the pass (in the order the workflow's coroutines reach
// here, which replay repeats) and reserving its share of the chunk's cost, and adds what they recorded to total.
func (c *chunk) split(ctx workflow.Context) {
	idx := c.cells.Indexes()
	half := len(idx) / 2
	parts := []experiment.CellSet{experiment.CellsOf(idx[:half]...), experiment.CellsOf(idx[half:]...)}
	// The digest of a part's lines is not known here: its submission builds them from its cells (an empty digest
	// is not checked). Its worst-case cost is the chunk's, shared by cells.
	costs := make([]money, 2)
	costs[0], costs[1] = c.cost.split(half, len(idx))
	halves := make([]*chunk, len(parts))
	ids := make([]int, len(parts))
	for i, part := range parts {
		halves[i] = c.bp.chunk(c.bp.nextChunk, part, "", costs[i], c.depth+1)
		ids[i] = c.bp.nextChunk
		c.bp.nextChunk++
	}
	workflow.GetLogger(ctx).Info("splitting a chunk over the enqueued-token limit", "key", c.key,
		"cells", len(idx), "chunks", ids)
	for _, h := range halves {
		if ctx.Err() != nil {
			break
		}
		c.total.Add(h.run(ctx))
	}
}

// unanswered records the cells the chunk's rounds left unanswered failed (errclass.BatchNotRun), unless the model
// sends them synchronously: with the provider's last reason for failing one of its batches as a whole, when it
// did (a later round may have expired instead: the message says how many failed, not that the last did); since
// wire.ChangeBatchBounded also when none failed, with the provider's last reason for the cells as their
// error_code and the batches that carried them as their attempts and tries (runs recorded before leave them to
// the pass, which records them without either).
func (c *chunk) unanswered(ctx workflow.Context) {
	f := c.fails
	if (f.reason == "" && !c.bounded) || c.cells.Len() == 0 || ctx.Err() != nil || c.bp.halted() ||
		c.bp.m.Batch.OnExpired == experiment.OnExpiredSync {
		return
	}
	in := wire.FailInput{Class: errclass.BatchNotRun,
		Message: fmt.Sprintf("not answered in the chunk's batches: the provider failed %d of them as a whole, the last with: %s",
			f.failed, f.reason)}
	if f.reason == "" {
		in.Message = fmt.Sprintf("not answered in the chunk's %d batch(es): the provider did not run the cell, or failed it "+
			"transiently, each time (the last time: %s)", len(c.prior), c.again)
	}
	if c.bounded {
		in.Code, in.Attempts, in.Tries = c.again, len(c.prior), len(c.prior)
	}
	c.failCells(ctx, in)
}
