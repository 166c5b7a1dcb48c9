package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/wire"
)

// chunk is one chunk of a batch pass going through its rounds: each round reserves the worst case of the cells
// still to answer against the pass's budget, submits them as one provider batch, waits for it, collects what it
// answered, and leaves what did not run to the next round. A chunk whose batch cannot be submitted or collected
// records its unanswered cells failed with the reason (see batchbound.go); one the provider failed as a whole goes
// on as the failure's kind asks (batchfail.go).
type chunk struct {
	bp *batchPass
	// n is the chunk's number in its pass; key ("pass/chunk") names its batches on the run's board.
	n   int
	key string
	// depth is how many splits made the chunk (see maxSplitDepth).
	depth int
	// cells, digest and cost are the next submission's: the cells, the digest of their lines (empty: not
	// checked) and their worst-case cost at the batch price, from the plan, then from each collect.
	cells  experiment.CellSet
	digest string
	cost   money
	// round is the round under way, of bp.rounds.
	round int
	// total is what the chunk recorded so far.
	total wire.BatchCollected
	fails chunkFailures
	// prior are the chunk's batches so far.
	prior []string
	// Since wire.ChangeBatchBounded (bounded) the chunk settles its own failures (see giveUp, unanswered): kept
	// is a collected batch whose input file was kept for the same lines' next batch, deleted when the chunk ends
	// without one; lost counts the batches the provider lost; again is the provider's last reason for the cells
	// still to answer.
	bounded bool
	kept    wire.BatchInfo
	lost    int
	again   string
}

// step is how a chunk goes on after a round.
type step int

const (
	// stepNext goes on to the next round.
	stepNext step = iota
	// stepRepeat submits again in the same round: a try that no round counts.
	stepRepeat
	// stepSplit runs the cells left as two chunks, the halves (see split), which end the chunk.
	stepSplit
	// stepEnd ends the chunk: total holds what it recorded.
	stepEnd
)

// chunk is chunk n of the pass with its first round's cells, their lines' digest and worst-case cost, made by
// depth splits.
func (bp *batchPass) chunk(n int, cells experiment.CellSet, digest string, cost money, depth int) *chunk {
	return &chunk{bp: bp, n: n, key: fmt.Sprintf("%d/%d", bp.p.Index, n), depth: depth, cells: cells, digest: digest,
		cost: cost}
}

// run takes the chunk through its rounds and returns what it recorded. After each collect the batch's files are
// deleted (cleanupBatch).
func (c *chunk) run(ctx workflow.Context) wire.BatchCollected {
	c.bounded = batchBounded(ctx)
	if c.bounded {
		defer c.deleteKeptInput(ctx)
	}
	for c.round = 0; c.round < c.bp.rounds && c.cells.Len() > 0; c.round++ {
		switch c.runRound(ctx) {
		case stepRepeat:
			c.round--
		case stepSplit:
			c.split(ctx)
			return c.total
		case stepEnd:
			return c.total
		}
	}
	c.unanswered(ctx)
	return c.total
}

// input is the SubmitBatch input of the round under way.
func (c *chunk) input() wire.BatchChunkInput {
	in := wire.BatchChunkInput{RunID: c.bp.r.runID, Pass: c.bp.p, Chunk: c.n, Round: c.round, Cells: c.cells,
		Digest: c.digest, Since: c.bp.r.state.Started, Try: c.fails.try}
	if !c.bp.anthropic {
		in.Known = slices.Clone(c.prior) // an Anthropic submission is told the run's own (anthropicTurn)
	}
	return in
}

// runRound submits the round's cells, waits for their batch and collects it.
func (c *chunk) runRound(ctx workflow.Context) step {
	in := c.input()
	if c.bp.halted() && workflow.GetVersion(ctx, wire.ChangeBatchFailures, workflow.DefaultVersion, 1) >= 1 {
		// The budget (or on_error=raise) stopped the pass while this chunk waited or backed off: nothing more is
		// submitted, and its cells are recorded with the run's reason.
		return stepEnd
	}
	if c.bp.r.unpaused(ctx) != nil { // a paused run submits nothing (wire.ChangeRunPause)
		return stepEnd
	}
	if !c.reserve(ctx) {
		return stepEnd
	}
	if ctx.Err() != nil {
		c.bp.budget.settle(c.cost, money{}) // cancelled before the submission: nothing was created
		return stepEnd
	}
	info, err := c.submit(ctx, in)
	var cands *candidatesError
	switch {
	case err == nil && ctx.Err() != nil:
		c.cancelRecorded(ctx, in, info)
		return stepEnd
	case errors.As(err, &cands):
		return c.adoptCandidates(ctx, in, cands.ids)
	case err != nil:
		return c.submitFailed(ctx, err)
	}
	c.prior = append(c.prior, info.ID)
	c.bp.seen(ctx, c.key, info)
	info, err = c.wait(ctx, info)
	if err != nil {
		return c.waitFailed(ctx, in, info, err)
	}
	return c.collect(ctx, in, info)
}

// reserve reserves the round's worst-case cost against the pass's share of the budget (a submitted batch is paid
// for whatever happens next), waiting while other chunks of the pass hold reservations that their collects may
// free. It reports whether the chunk may submit; when the share cannot pay, the pass submits nothing more and
// the run stops with the budget exhausted.
func (c *chunk) reserve(ctx workflow.Context) bool {
	bp, b := c.bp, c.bp.budget
	ok := bp.reserve(c.cost)
	for !ok && b.holding() && !bp.halted() {
		// Other chunks of the pass hold reservations of their worst case, which their collects turn into what
		// they cost: wait for one before deciding that the budget is spent.
		held, seen := b.reserved, b.settles
		if err := workflow.Await(ctx, func() bool { return b.freed(held, seen) || bp.halted() }); err != nil {
			return false
		}
		ok = bp.reserve(c.cost)
	}
	if !ok {
		bp.spent(c.cells.Len(), c.cost)
	}
	return ok
}

// submit submits the round's batch, on a context the run's cancellation does not cut short: a create may have
// reached the provider, and the batch it made is then cancelled and collected (cancelRecorded), not left running
// unknown.
func (c *chunk) submit(ctx workflow.Context, in wire.BatchChunkInput) (wire.BatchInfo, error) {
	what := fmt.Sprintf("pass %d chunk %d round %d: %d cells of %s", in.Pass.Index, in.Chunk, in.Round, in.Cells.Len(), c.bp.m.ID)
	sctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	run := &c.bp.r.batch
	run.submitted(c.bp.m.ID, 1)
	defer run.submitted(c.bp.m.ID, -1)
	if c.bp.anthropic {
		return run.anthropic.submit(ctx, sctx, in, what)
	}
	var info wire.BatchInfo
	err := wire.SubmitBatch.Execute(batchActivityCtx(sctx, "submit "+what), in).Get(sctx, &info)
	return info, err
}

// submitFailed ends the chunk after its submission failed with err.
func (c *chunk) submitFailed(ctx workflow.Context, err error) step {
	workflow.GetLogger(ctx).Error("submitting a batch failed", "pass", c.bp.p.Index, "chunk", c.n, "error", err)
	if _, refused := refusal(err); refused {
		c.bp.budget.settle(c.cost, money{}) // refused before anything was created: nothing to pay
	} else {
		c.bp.budget.settle(c.cost, c.cost) // a batch may exist unknown: its worst case stays spent, so no chunk waits on it
	}
	c.fail(ctx, err, "submit_failed", "the chunk's batch could not be submitted")
	return stepEnd
}

// adoptCandidates records the chunk's own of the batches its submission could not tell apart (ids), and goes on
// with the cells they left.
func (c *chunk) adoptCandidates(ctx workflow.Context, in wire.BatchChunkInput, ids []string) step {
	got, err := c.collectCandidates(ctx, in, ids)
	if err != nil {
		workflow.GetLogger(ctx).Error("collecting candidate batches failed", "batches", ids, "error", err)
		c.bp.budget.settle(c.cost, c.cost) // what the candidates cost is not known: the worst case stays spent
		c.fail(ctx, err, "collect_failed", fmt.Sprintf("the candidate batches %v could not be collected", ids))
		return stepEnd
	}
	c.total.Add(got)
	c.bp.budget.settle(c.cost, moneyOf(got.Usage.CostUSD))
	c.cells, c.digest, c.cost = got.Again, got.AgainDigest, moneyOf(got.AgainCost)
	return stepNext
}

// waitFailed ends the chunk's wait for batch info, which err cut short: a cancelled run cancels the batch and
// records what it completed; a batch the provider lost is submitted again, a bounded number of times; any other
// failure gives the batch up.
func (c *chunk) waitFailed(ctx workflow.Context, in wire.BatchChunkInput, info wire.BatchInfo, err error) step {
	if ctx.Err() != nil {
		c.cancelRecorded(ctx, in, info)
		return stepEnd
	}
	workflow.GetLogger(ctx).Error("polling a batch failed", "batch", info.ID, "error", err)
	// The batch may run on, uncollected, or have been billed before it was lost: its worst case stays spent.
	c.bp.budget.settle(c.cost, c.cost)
	if !c.bounded {
		return stepEnd
	}
	class, msg := classOf(err)
	if class == errclass.BatchLost && c.lost < maxLostBatches {
		// Its results can never arrive: the same cells go again, as a fresh try that no round counts and whose
		// key is new, so that the lost batch, should it be listed again, is never adopted.
		c.lost++
		c.fails.try++
		c.bp.edit(ctx, c.key, func(b *wire.BatchProgress) { b.Note = msg + "; its cells were submitted again" })
		return stepRepeat
	}
	what := "the chunk's batch " + info.ID + " was given up"
	if class == errclass.BatchLost {
		what = fmt.Sprintf("%d of the chunk's batches were lost", c.lost+1)
	}
	c.abandon(ctx, info, err)
	c.giveUp(ctx, err, "wait_failed", what)
	return stepEnd
}

// collect records the results of the ended batch info, which are paid for, even when the run is being cancelled,
// and goes on with the cells it did not answer.
func (c *chunk) collect(ctx workflow.Context, in wire.BatchChunkInput, info wire.BatchInfo) step {
	var got wire.BatchCollected
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	err := wire.CollectBatch.Execute(batchWaitCtx(dctx, "collect "+info.ID),
		wire.BatchCollectInput{BatchChunkInput: in, Batch: info}).Get(dctx, &got)
	cancel()
	if err != nil {
		workflow.GetLogger(ctx).Error("collecting a batch failed", "batch", info.ID, "error", err)
		c.bp.budget.settle(c.cost, c.cost) // paid, not recorded: its worst case stays spent
		c.fail(ctx, err, "collect_failed",
			"the results of batch "+info.ID+" could not be collected (its files are kept at the provider)")
		return stepEnd
	}
	c.total.Add(got)
	c.bp.budget.settle(c.cost, moneyOf(got.Usage.CostUSD))
	sent := c.cells.Len()
	c.cleanUp(ctx, info, got)
	c.cells, c.digest, c.cost, c.again = got.Again, got.AgainDigest, moneyOf(got.AgainCost), got.AgainReason
	if info.Status != wire.BatchStatusFailed {
		return stepNext
	}
	c.again = failureCode(info) // its results do not mention the cells: the provider's reason does
	if c.cells.Len() == 0 {
		return stepNext
	}
	return c.batchFailed(ctx, info, sent, c.cells.Len())
}

// cleanUp deletes what the collected batch info leaves at its provider, but for its input file when got submits
// the same lines again (the batch failed as a whole, or expired or was cancelled before any of them ran): their
// next batch reads it. kept follows the input file kept.
func (c *chunk) cleanUp(ctx workflow.Context, info wire.BatchInfo, got wire.BatchCollected) {
	keepInput := got.Again.Len() > 0 && got.AgainDigest == c.digest
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	c.cleanupBatch(dctx, info, keepInput)
	cancel()
	switch {
	case keepInput:
		c.kept = info
	case info.InputFileID == c.kept.InputFileID:
		c.kept = wire.BatchInfo{} // the batch that read it last deleted it
	}
}

// cancelRecorded is the chunk's end when the run is cancelled after its batch info was created: the batch is
// cancelled and what it completed recorded (cancelBatch), on a context the cancellation does not cut short, and
// its reservation settled at what it cost.
func (c *chunk) cancelRecorded(ctx workflow.Context, in wire.BatchChunkInput, info wire.BatchInfo) {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	c.bp.seen(dctx, c.key, info)
	got := c.cancelBatch(dctx, in, info)
	c.bp.budget.settle(c.cost, moneyOf(got.Usage.CostUSD))
	c.total.Add(got)
}

// cancelBatch cancels the chunk's batch, waits for the provider to end it and records what it completed. ctx is
// disconnected from the run's cancellation.
func (c *chunk) cancelBatch(ctx workflow.Context, in wire.BatchChunkInput, info wire.BatchInfo) wire.BatchCollected {
	log := workflow.GetLogger(ctx)
	ref := wire.BatchRef{RunID: c.bp.r.runID, Model: c.bp.p.Model, ID: info.ID}
	if err := wire.CancelBatch.Execute(batchWaitCtx(ctx, "cancel "+info.ID), ref).Get(ctx, &info); err != nil {
		log.Error("cancelling a batch failed", "batch", info.ID, "error", err)
		return wire.BatchCollected{}
	}
	c.bp.seen(ctx, c.key, info)
	// Providers end a cancelled batch within minutes.
	if batchAwaits(ctx) {
		var err error
		if info, err = c.await(ctx, info); err != nil {
			log.Error("waiting for a cancelled batch failed", "batch", info.ID, "error", err)
			return wire.BatchCollected{}
		}
	}
	for !info.Status.Terminal() { // runs recorded before wire.ChangeBatchAwait
		if err := workflow.Sleep(ctx, 30*time.Second); err != nil {
			return wire.BatchCollected{}
		}
		if err := wire.PollBatch.Execute(batchWaitCtx(ctx, "poll "+info.ID), ref).Get(ctx, &info); err != nil {
			log.Error("polling a cancelled batch failed", "batch", info.ID, "error", err)
			return wire.BatchCollected{}
		}
		c.bp.seen(ctx, c.key, info)
	}
	var got wire.BatchCollected
	if err := wire.CollectBatch.Execute(batchWaitCtx(ctx, "collect "+info.ID),
		wire.BatchCollectInput{BatchChunkInput: in, Batch: info}).Get(ctx, &got); err != nil {
		log.Error("collecting a cancelled batch failed", "batch", info.ID, "error", err)
	}
	return got
}

// fail records the round's cells after err ended the chunk: with the failure's code and what was given up since
// wire.ChangeBatchBounded (giveUp), and before it only when no retry could cure err (refused).
func (c *chunk) fail(ctx workflow.Context, err error, code, what string) {
	if c.bounded {
		c.giveUp(ctx, err, code, what)
		return
	}
	c.refused(ctx, err)
}

// refused records the round's cells that have no record failed with err, when no retry can cure it (the batch
// pass's own refusals: its requests changed, the provider holds other requests under its key). Other errors
// leave the cells to the pass, which records them not run.
func (c *chunk) refused(ctx workflow.Context, err error) {
	msg, refused := refusal(err)
	if ctx.Err() != nil || !refused {
		return
	}
	c.failCells(ctx, wire.FailInput{Class: errclass.BatchRefused, Message: msg})
}

// failCells records the round's cells that have no record failed as in says (FailUnfinished; the run, the pass's
// range and the cells are filled in here) and adds them to total; a failure to record is logged, and the cells
// are left to the export, which records them NotRun.
func (c *chunk) failCells(ctx workflow.Context, in wire.FailInput) {
	in.RunID, in.Start, in.End, in.Cells = c.bp.r.runID, c.bp.p.Start, c.bp.p.End, c.cells
	var f wire.FailOutput
	if err := wire.FailUnfinished.Execute(shortCtx(ctx), in).Get(ctx, &f); err != nil {
		workflow.GetLogger(ctx).Error("recording a chunk's cells failed", "pass", c.bp.p.Index, "error", err)
		return
	}
	c.total.Recorded += f.Recorded
	c.total.Failed += f.Recorded
}

// refusal reports whether err is one of the batch pass's refusals (errclass.BatchRefused), which no retry cures,
// and its message.
func refusal(err error) (msg string, refused bool) {
	class, msg := classOf(err)
	return msg, class == errclass.BatchRefused
}
