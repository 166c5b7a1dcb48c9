package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/wire"
)

// An Anthropic submission whose retry finds several batches that could be its own (its create's answer was lost,
// and another batch of as many requests was created on the account since its intent) cannot tell them apart by
// what the list shows. Its own was paid for, so stopping there would leave its answers unrecorded. Since
// wire.ChangeBatchCandidates the workflow waits instead for every candidate to end and has CollectCandidates tell
// them apart by their results: custom ids are the cells' ids, so a candidate with any other is another client's
// and nothing of it is recorded; each candidate whose results are all the chunk's is recorded (a cell once), and
// its cells are not submitted again. The candidates join the run's known batches at once, so no later chunk
// adopts one. The candidates are not cancelled when the run is: a cancel would reach another client's batch.
//
// Since wire.ChangeBatchCleanup a collected batch's files (OpenAI) or the ended batch (Anthropic) are deleted by
// CleanupBatch after its collect completed, unless the model's batch.keep_files: a separate step, so that a
// collect attempted again (its worker died after it recorded) still finds the results, and a cleanup that runs
// again finds them gone, which is no error.

// candidatesError is a SubmitBatch failure that named the batches it could not tell apart, on a workflow that
// waits for them (ChangeBatchCandidates).
type candidatesError struct {
	ids []string
	err error
}

func (e *candidatesError) Error() string { return e.err.Error() }
func (e *candidatesError) Unwrap() error { return e.err }

// candidates returns the candidates of a SubmitBatch failure of an Anthropic submission that found several
// (wire.BatchCandidates, the details of its BatchRefused), when this run waits for them: not in histories
// recorded before ChangeBatchCandidates, which recorded the chunk's cells BatchRefused.
func candidates(ctx workflow.Context, err error) ([]string, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errclass.BatchRefused || !app.HasDetails() {
		return nil, false
	}
	var c wire.BatchCandidates
	if app.Details(&c) != nil || len(c.IDs) == 0 {
		return nil, false
	}
	if workflow.GetVersion(ctx, wire.ChangeBatchCandidates, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil, false
	}
	return c.IDs, true
}

// collectCandidates waits for every candidate batch of the round in to end (as the chunk waits for its batch) and
// records those that are the chunk's (CollectCandidates), whose collect runs to its end even when the run is
// cancelled meanwhile. A run cancelled while it waits returns at once and leaves the candidates running: which
// of them is its own is known only from their results.
func (c *chunk) collectCandidates(ctx workflow.Context, in wire.BatchChunkInput, ids []string) (wire.BatchCollected, error) {
	log := workflow.GetLogger(ctx)
	log.Warn("several batches could be this chunk's: waiting for all of them, to record those whose results are its own",
		"pass", c.bp.p.Index, "chunk", in.Chunk, "batches", ids)
	infos := make([]wire.BatchInfo, len(ids))
	for i, id := range ids {
		infos[i].ID = id
	}
	for i := range infos {
		got, err := c.wait(ctx, infos[i])
		if err != nil {
			if ctx.Err() != nil {
				log.Error("run cancelled: candidate batches left running unrecorded", "batches", ids)
			}
			return wire.BatchCollected{}, err
		}
		infos[i] = got
	}
	var got wire.BatchCollected
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	err := wire.CollectCandidates.Execute(batchWaitCtx(dctx, fmt.Sprintf("collect the candidates %v", ids)),
		wire.BatchCandidatesInput{BatchChunkInput: in, Batches: infos}).Get(dctx, &got)
	if err != nil {
		return wire.BatchCollected{}, err
	}
	if len(got.Adopted) == 0 {
		log.Warn("none of the candidate batches was this chunk's: its cells go to the next round", "batches", ids)
	}
	// No candidate is cleaned up: its custom ids are the cells' ids, which another run of the same cells shares, so
	// a candidate whose results are all the chunk's may still be another run's, which would then find it gone.
	return got, nil
}

// cleanupBatch deletes what the collected batch info leaves at its provider (CleanupBatch), unless the model keeps
// its files; a failure is logged: the results are recorded, only the provider's copy stays. keepInput keeps the
// input file, which the next submission of the same lines uploads no more (a batch the provider failed as a
// whole). It runs on ctx as it is (the collect's, disconnected from a cancel) and never in histories recorded
// before ChangeBatchCleanup.
func (c *chunk) cleanupBatch(ctx workflow.Context, info wire.BatchInfo, keepInput bool) {
	if c.bp.m.Batch.KeepFiles {
		return
	}
	if workflow.GetVersion(ctx, wire.ChangeBatchCleanup, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	in := wire.BatchCleanupInput{RunID: c.bp.r.runID, Model: c.bp.p.Model, Batch: info, KeepInput: keepInput}
	if err := wire.CleanupBatch.Execute(batchActivityCtx(ctx, "clean up "+info.ID), in).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("deleting a collected batch's files failed", "batch", info.ID, "error", err)
	}
}
