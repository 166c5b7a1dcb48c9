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
// once. runChunk collects the failed batch as any other (CollectBatch records the cells of the lines its errors
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

// failNext is what a chunk does after a batch failed as a whole.
type failNext int

const (
	// failCounted submits the cells again in the next round, which counts against run.max_attempts.
	failCounted failNext = iota
	// failFree submits them again in the same round.
	failFree
	// failSplit submits them as two new chunks, the halves.
	failSplit
	// failStop ends the chunk: the run was cancelled while it waited.
	failStop
)

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
	// submission to the failure; ended is r.batchEnded of the model when the chunk last resubmitted.
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

// batchFailed decides what chunk key of pass p does after its batch info failed as a whole and its collect left
// cells to answer (before the collect, left after it): it waits, and shows why, as the kind of the failure asks
// (see the comment at the top of this file). last says the round was the chunk's last: a failure that counts then
// ends the chunk at once. Runs recorded before wire.ChangeBatchFailures go on in the next round at once.
func (r *runner) batchFailed(ctx workflow.Context, p experiment.Pass, key string, info wire.BatchInfo, before, left int,
	last bool, f *chunkFailures) failNext {
	if workflow.GetVersion(ctx, wire.ChangeBatchFailures, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return failCounted
	}
	m := r.plan.Models[p.Model]
	f.failed++
	f.reason = failureReason(info)
	workflow.GetLogger(ctx).Warn("the provider failed a batch as a whole", "batch", info.ID, "pass", p.Index,
		"key", key, "reason", f.reason)
	first := time.Duration(m.Batch.PollEvery)
	switch {
	case left < before:
		// Lines named and their cells recorded: the others were refused with them, through no fault of theirs.
		f.limitAlone = 0
		f.try++
		return failFree
	case tokenLimited(info):
		// The other chunks' submissions under way may have created the batches that hold the missing tokens: the
		// run sees them only once they return, so the chunk waits for them before it judges (they take seconds).
		if workflow.GetVersion(ctx, wire.ChangeTokenLimitSubmissions, workflow.DefaultVersion, 1) >= 1 {
			if err := workflow.Await(ctx, func() bool { return r.submitting[m.ID] == 0 }); err != nil {
				return failStop
			}
		}
		// Alone: no other batch of the model is in flight, and none ended since the chunk resubmitted (one that
		// ended between the create and its failure may have held the tokens that were missing).
		if r.inFlight(m.ID) == 0 && (f.limitAlone == 0 || r.batchEnded[m.ID] == f.ended) {
			f.limitAlone++
			if f.limitAlone >= 2 && left > 1 && r.splitDepth[key] < maxSplitDepth {
				// Alone, and over the limit again after waiting: the chunk itself is more than the limit.
				r.batchWaiting(ctx, key, "")
				return failSplit
			}
			if left <= 1 || r.splitDepth[key] >= maxSplitDepth {
				// One request over the limit alone, or an eighth of a chunk: no wait or split makes it fit, or the
				// limit is held by batches the run does not see (another run's, another team's).
				return r.counted(ctx, key, f, first, last)
			}
		} else {
			f.limitAlone = 1 // if it fails again with none in flight, it is the chunk itself that is over the limit
			if n := r.inFlight(m.ID); n > 0 {
				r.batchWaiting(ctx, key, fmt.Sprintf("%s · waiting for %d other batch(es) of %s to end, then resubmitting", f.reason, n, m.ID))
				if err := workflow.Await(ctx, func() bool { return r.inFlight(m.ID) < n }); err != nil {
					return failStop
				}
			}
		}
		f.try++
		next := r.backOff(ctx, key, f, first, failFree)
		f.ended = r.batchEnded[m.ID]
		return next
	default:
		f.limitAlone = 0
		return r.counted(ctx, key, f, first, last)
	}
}

// counted is a failure that counts against run.max_attempts: after the chunk's last round it ends the chunk at
// once (nothing is left to wait for), else it backs off before the next round.
func (r *runner) counted(ctx workflow.Context, key string, f *chunkFailures, first time.Duration, last bool) failNext {
	if last {
		return failCounted
	}
	return r.backOff(ctx, key, f, first, failCounted)
}

// backOff waits the chunk's next growing delay, showing why, and returns next (failStop when the run was
// cancelled meanwhile).
func (r *runner) backOff(ctx workflow.Context, key string, f *chunkFailures, first time.Duration, next failNext) failNext {
	d := f.delay(first)
	at := workflow.Now(ctx).Add(d).UTC().Format(time.TimeOnly)
	r.batchWaiting(ctx, key, fmt.Sprintf("%s · resubmitting at %s UTC", f.reason, at))
	if err := workflow.Sleep(ctx, d); err != nil {
		return failStop
	}
	return next
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

// inFlight counts the run's batches of model (its id) the provider has not ended: those that hold enqueued
// tokens. A chunk waiting after a failed batch holds none (its batch is failed), so chunks that wait never wait
// for each other.
func (r *runner) inFlight(model string) int {
	n := 0
	for _, k := range r.batchKeys {
		if b := r.batches[k]; b.Model == model && !b.Status.Terminal() {
			n++
		}
	}
	return n
}

// batchEnds counts, per model, the batches of the run seen to end (see inFlight): batchSeen calls it with a
// batch's progress before and after.
func (r *runner) batchEnds(before, after wire.BatchProgress) {
	if before.ID == after.ID && !before.Status.Terminal() && after.Status.Terminal() {
		if r.batchEnded == nil {
			r.batchEnded = map[string]int{}
		}
		r.batchEnded[after.Model]++
	}
}

// batchWaiting shows reason on the progress of batch key (empty: none).
func (r *runner) batchWaiting(ctx workflow.Context, key, reason string) {
	r.editBatch(ctx, key, func(b *wire.BatchProgress) { b.Reason = reason })
}

// editBatch changes the progress of batch key with edit, when the run has seen it, and updates the run's details.
func (r *runner) editBatch(ctx workflow.Context, key string, edit func(*wire.BatchProgress)) {
	b, ok := r.batches[key]
	if !ok {
		return
	}
	edit(&b)
	r.batches[key] = b
	r.details(ctx)
}

// maxSplitDepth is how often a chunk is halved at most (to an eighth): "alone and over the limit" is judged on the
// run's own batches, so an organisation whose limit other runs hold would otherwise halve every chunk down to
// one-cell batches. Past it, a failure counts against run.max_attempts.
const maxSplitDepth = 3

// splitChunk runs cells, which chunk key's batch could not hold under the enqueued-token limit, as two chunks of
// pass p, the halves, each under a new chunk number of the pass (r.nextChunk, in the order the workflow's
// coroutines reach here, which replay repeats) and reserving its share of cost. It returns total with what they
// recorded.
func (r *runner) splitChunk(ctx workflow.Context, p experiment.Pass, key string, cells experiment.CellSet, cost float64,
	bb *batchBudget, anthropic bool, total wire.BatchCollected) wire.BatchCollected {
	idx := cells.Indexes()
	half := len(idx) / 2
	parts := []experiment.CellSet{experiment.CellsOf(idx[:half]...), experiment.CellsOf(idx[half:]...)}
	ids := make([]int, len(parts))
	for i := range parts {
		ids[i] = r.nextChunk[p.Index]
		r.nextChunk[p.Index]++
		r.splitDepth[fmt.Sprintf("%d/%d", p.Index, ids[i])] = r.splitDepth[key] + 1
	}
	workflow.GetLogger(ctx).Info("splitting a chunk over the enqueued-token limit", "key", key,
		"cells", len(idx), "chunks", ids)
	for i, part := range parts {
		if ctx.Err() != nil {
			break
		}
		// The digest of a part's lines is not known here: its submission builds them from its cells (an empty
		// digest is not checked). Its worst-case cost is the chunk's, shared by cells.
		share := cost * float64(part.Len()) / float64(len(idx))
		got := r.runChunk(ctx, p, ids[i], part, "", share, bb, anthropic)
		total.Add(got)
	}
	return total
}

// chunkUnanswered records the cells a chunk's rounds left unanswered failed (errclass.BatchNotRun), unless the
// model sends them synchronously, and returns total with them: with the provider's last reason for failing one
// of its batches as a whole, when it did (a later round may have expired instead: the message says how many
// failed, not that the last did); since wire.ChangeBatchBounded (u.bounded) also when none failed, with the
// provider's last reason for the cells as their error_code and the batches that carried them as their attempts
// and tries (runs recorded before leave them to the pass, which records them without either).
func (r *runner) chunkUnanswered(ctx workflow.Context, p experiment.Pass, cells experiment.CellSet, f chunkFailures,
	bb *batchBudget, total wire.BatchCollected, u unanswered) wire.BatchCollected {
	if (f.reason == "" && !u.bounded) || cells.Len() == 0 || ctx.Err() != nil || r.halted(bb) ||
		r.plan.Models[p.Model].Batch.OnExpired == experiment.OnExpiredSync {
		return total
	}
	in := wire.FailInput{RunID: r.runID, Start: p.Start, End: p.End, Cells: cells, Class: errclass.BatchNotRun,
		Message: fmt.Sprintf("not answered in the chunk's batches: the provider failed %d of them as a whole, the last with: %s",
			f.failed, f.reason)}
	if f.reason == "" {
		in.Message = fmt.Sprintf("not answered in the chunk's %d batch(es): the provider did not run the cell, or failed it "+
			"transiently, each time (the last time: %s)", u.batches, u.reason)
	}
	if u.bounded {
		in.Code, in.Attempts, in.Tries = u.reason, u.batches, u.batches
	}
	return r.failCells(ctx, p, in, total)
}
