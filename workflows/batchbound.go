package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/wire"
)

// How a batch chunk ends when something fails for good (wire.ChangeBatchBounded). Every batch activity is retried
// a bounded number of times (batchAttempts, batchWaitAttempts, batchAwaitAttempts), and while it is, its attempts
// and last failure are shown (the pending activity of DescribeWorkflowExecution, which the Web UI, `starter run`
// and `starter status` read). What then fails is recorded on the chunk's cells by the chunk itself, with the
// reason, never left to retry in silence:
//
//   - a batch the provider no longer knows (AwaitBatch's BatchLost, after 404s on 5 polls over 2 minutes) can
//     never deliver its results: the chunk submits the same cells again as a fresh try (the next
//     wire.BatchChunkInput.Try, so a new key: the lost batch, were it listed again, is never adopted), says so
//     on the chunk's progress (wire.BatchProgress.Note), and after maxLostBatches records its cells BatchLost;
//   - any other failure of the wait (a state silico does not know for too long, AwaitBatch's retries used up)
//     cancels the batch, as far as the provider still answers, and records the cells with the reason;
//   - a submission or a collect whose retries ran out records the cells with the last failure's reason (the
//     collected batch's files stay at the provider: its results may still be read there);
//   - cells the chunk's rounds left unanswered are recorded errclass.BatchNotRun by the chunk, with the
//     provider's last reason as their error_code and the batches that carried them as their tries;
//   - an input file kept for the same lines' next batch is deleted when the chunk ends without one (its rounds
//     ran out, it was split, it gave up).
//
// Runs recorded before the change leave such cells to their pass, which records them BatchNotRun without a code
// or tries, and replay so.

// maxLostBatches is how many of a chunk's batches may be lost before its cells are recorded BatchLost. A batch is
// taken as lost only after minutes of 404s; one lost twice more is a provider (or gateway) that forgets batches,
// and submitting again for ever would pay for them each time.
const maxLostBatches = 2

// batchBounded reports whether the run's chunks settle their own failures (wire.ChangeBatchBounded). Its first
// call records the version in the history; runs recorded before get DefaultVersion from every call.
func batchBounded(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, wire.ChangeBatchBounded, workflow.DefaultVersion, 1) >= 1
}

// abandon cancels batch info, which the chunk gives up because of err, so that the provider does not run (and
// bill) what will never be recorded; a lost batch has nothing to cancel. A cancel that fails is logged: the
// provider may no longer answer.
func (c *chunk) abandon(ctx workflow.Context, info wire.BatchInfo, err error) {
	if class, _ := classOf(err); class == errclass.BatchLost || info.ID == "" {
		return
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	ref := wire.BatchRef{RunID: c.bp.r.runID, Model: c.bp.p.Model, ID: info.ID}
	if cerr := wire.CancelBatch.Execute(batchActivityCtx(dctx, "cancel "+info.ID+", given up"), ref).Get(dctx, nil); cerr != nil {
		workflow.GetLogger(ctx).Error("cancelling a batch given up failed", "batch", info.ID, "error", cerr)
	}
}

// giveUp records the round's cells that have no record failed, after one of the chunk's batch activities failed
// with err for good. The batch classes keep their class and get a code of their own (BatchRefused keeps its
// message, as refused records it); any other failure (retries used up) is BatchNotRun with code. what says what
// was given up; the chunk's batches so far carried the cells: their attempts and tries. A cancelled run records
// nothing here.
func (c *chunk) giveUp(ctx workflow.Context, err error, code, what string) {
	if ctx.Err() != nil || c.cells.Len() == 0 {
		return
	}
	class, msg := classOf(err)
	switch class {
	case errclass.BatchRefused:
		code = ""
	case errclass.BatchLost:
		code, msg = "batch_lost", what+": "+msg
	case errclass.BatchStateUnknown:
		code, msg = "unknown_state", what+": "+msg
	default:
		msg = fmt.Sprintf("%s: %s: %s", what, class, msg)
		class = errclass.BatchNotRun
	}
	c.failCells(ctx, wire.FailInput{Class: class, Code: code, Message: msg, Attempts: len(c.prior), Tries: len(c.prior)})
}

// deleteKeptInput deletes the input file of kept, a collected batch whose input was kept for the same lines' next
// batch, when the chunk ends without one (zero: nothing is kept). CleanupBatch deletes what it is given: only the
// input file here (and, for a Gemini batch, the batch again, which is already gone).
func (c *chunk) deleteKeptInput(ctx workflow.Context) {
	if c.kept.ID == "" || c.kept.InputFileID == "" || ctx.Err() != nil {
		return
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	c.cleanupBatch(dctx, wire.BatchInfo{ID: c.kept.ID, InputFileID: c.kept.InputFileID}, false)
}

// failureCode is the code of the first reason the provider gave for failing batch info as a whole
// (batch_failed when it gave none).
func failureCode(info wire.BatchInfo) string {
	for _, f := range info.Failures {
		if f.Code != "" {
			return f.Code
		}
	}
	return "batch_failed"
}
