package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// A batch pass runs one (model, seed) of a model in batch mode through the provider's batch API: plan the chunks
// once (the plan is an activity result, so every replay and every later activity sees the same chunks), submit
// each chunk, wait for its batch with AwaitBatch, one long polling activity per status the batch goes through
// (batchwait.go; runs recorded before wait on durable timers between short polls), collect, and submit what
// never ran in the next round,
// up to run.max_attempts rounds. What is still unanswered then is sent synchronously (on_expired: sync) or
// recorded failed. Runs recorded before batch mode existed have no batch model, so none of this is in their
// histories and they replay as before.
//
// Cancelling the run cancels its provider batches: each chunk in flight cancels its batch, waits for the
// provider to end it and records what completed, on a disconnected context, while the workflow waits for them
// (cancelled); a run without batch passes ends at once, as it always did, so recorded histories replay unchanged.
//
// budget_usd: a submitted batch is paid for whatever happens next, so each submission first reserves its
// cells' worst-case cost (every prompt and the longest completion, at the batch price; computed by the plan and
// by each collect for the next round) against the pass's share of the budget, as a synchronous call reserves
// its own. A submission that does not fit, even after the share is looked up again, is not sent: the run stops
// with the budget exhausted and its cells are recorded so. After a collect the reservation becomes what the
// batch cost. The reservations are workflow state, so a worker that dies does not lose them.
//
// Anthropic's Message Batches carry no metadata, so a submission whose create reached Anthropic but whose answer
// was lost (the worker died) is found again by its intent: the time recorded, as part of the submission's input,
// before its first attempt runs. A retry adopts the batch created since then with as many requests that the run
// does not already know. For that to name one batch, the run submits one Anthropic chunk at a time and tells each
// submission the ids of the batches it adopted before. When it still finds several (another client's batch of the
// same size), the chunk waits for all of them and records those whose results are its own (batchadopt.go).

// The bounds of the batch activities' retries. Each activity that fails is retried by Temporal with a growing
// backoff; its attempts, state and last failure are in DescribeWorkflowExecution's pending activities (the Web
// UI's pending activity, and `starter run`'s and `starter status`'s lines from the third attempt on), and once its
// attempts are used up the chunk records its cells with the last failure's reason (wire.ChangeBatchBounded).
const (
	// batchAttempts bounds PlanBatchPass, SubmitBatch, CleanupBatch and the cancel of a batch given up: at most a
	// minute apart, about 25 minutes of failures.
	batchAttempts = 30
	// batchWaitAttempts bounds CollectBatch, CollectCandidates and CancelBatch, which follow a batch that exists
	// and was paid for: at most 5 minutes apart, about 70 minutes of failures.
	batchWaitAttempts   = 20
	batchWaitMaxBackoff = 5 * time.Minute
)

// batchActivityCtx is the options of the batch pass's activities: short, retried with backoff batchAttempts
// times, non-retryable only for what no retry can cure.
func batchActivityCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		// The activities heartbeat every second while they wait on the provider: a dead worker's attempt is
		// retried on another within seconds, while an upload or a result file may take as long as it needs.
		HeartbeatTimeout: 10 * time.Second,
		Summary:          summary,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: batchAttempts, NonRetryableErrorTypes: errclass.NonRetryable()},
	})
}

// batchWaitCtx is the options of the activities that follow a created batch (poll, collect, cancel): as
// batchActivityCtx, but more patient (batchWaitAttempts, up to batchWaitMaxBackoff apart): the batch exists and
// is paid for, and giving up leaves its results unrecorded. They are bounded all the same: a collect that fails
// the same way for an hour and more is no transient failure, and its cells are recorded with its reason (the
// batch's files are kept at the provider) rather than retried in silence for ever, as they were before.
func batchWaitCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    10 * time.Second,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: batchWaitMaxBackoff,
			MaximumAttempts: batchWaitAttempts, NonRetryableErrorTypes: errclass.NonRetryable()},
	})
}

// runBatchPass runs pass p of a model in batch mode to its end.
func (r *runner) runBatchPass(ctx workflow.Context, p experiment.Pass, sh wire.Share) {
	m := r.plan.Models[p.Model]
	var plan wire.BatchPlan
	err := wire.PlanBatchPass.Execute(batchActivityCtx(ctx, fmt.Sprintf("pass %d: plan the batches of %s", p.Index, m.ID)),
		wire.BatchPassInput{RunID: r.runID, Pass: p}).Get(ctx, &plan)
	if err != nil {
		r.batchPassFailed(ctx, p, err)
		return
	}
	res := wire.PassResult{Pass: p.Index, Cells: p.Len(), Cached: plan.Cached, Done: plan.Cached + plan.Failed,
		Failed: plan.Failed, FirstFailure: -1, Usage: plan.Usage}
	bb := &batchBudget{on: sh.Budgeted, limit: sh.BudgetUSD,
		ownShare: workflow.GetVersion(ctx, wire.ChangeBatchBudgetPerPass, workflow.DefaultVersion, 1) >= 1}
	r.nextChunk[p.Index] = len(plan.Chunks) // the chunk numbers of a split chunk's halves follow the plan's
	anthropic := plan.Format == wire.FormatAnthropic
	wg := workflow.NewWaitGroup(ctx)
	for i, cells := range plan.Chunks {
		cost, digest := 0.0, ""
		if i < len(plan.Costs) {
			cost = plan.Costs[i]
		}
		if i < len(plan.Digests) {
			digest = plan.Digests[i]
		}
		wg.Add(1)
		r.batchChunks++
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer wg.Done()
			defer func() { r.batchChunks-- }()
			got := r.runChunk(gctx, p, i, cells, digest, cost, bb, anthropic)
			res.Done += got.Recorded
			res.Failed += got.Failed
			res.OK += got.Recorded - got.Failed
			res.Usage.Add(got.Usage)
		})
	}
	wg.Wait(ctx)
	if ctx.Err() != nil {
		return
	}
	if r.halted(bb) {
		// The budget (or on_error=raise) stopped the pass: the cells left are recorded with the run's reason.
		r.passDone(ctx, res)
		return
	}
	if res.Done < p.Len() && m.Batch.OnExpired == experiment.OnExpiredSync {
		// RunSeedPass calls only the cells without a record: exactly those the batches did not answer. It counts
		// the cells the batches recorded too (it reads every record of the pass), so they are not counted here.
		r.runPass(ctx, p, sh)
		return
	}
	if res.Done < p.Len() {
		f, err := r.failRange(ctx, p.Start, p.End, errclass.BatchNotRun,
			fmt.Sprintf("not answered: the provider's batches did not run this cell, or failed it transiently, in %d submissions", max(1, r.plan.Run.MaxAttempts)))
		if err != nil {
			workflow.GetLogger(ctx).Error("recording unanswered cells failed", "pass", p.Index, "error", err)
		}
		res.Done += f.Recorded
		res.Failed += f.Recorded
	}
	r.passDone(ctx, res)
}

// runChunk runs chunk i of pass p, whose lines have the given digest, through its rounds and returns what it
// recorded. cost is the worst-case cost of the first round's cells, reserved against bb before the submission. A
// chunk whose batch cannot be submitted or collected for a reason no retry cures (its lines changed since the
// plan) records its unanswered cells failed with that reason. anthropic says the model's batches are
// Anthropic's, submitted one at a time (see submitAnthropic). After each collect the batch's files are deleted
// (cleanupBatch).
func (r *runner) runChunk(ctx workflow.Context, p experiment.Pass, i int, cells experiment.CellSet, digest string, cost float64,
	bb *batchBudget, anthropic bool) wire.BatchCollected {
	m := r.plan.Models[p.Model]
	set := m.Batch
	rounds := max(1, r.plan.Run.MaxAttempts)
	if set.OnExpired != experiment.OnExpiredResubmit {
		rounds = 1
	}
	var total wire.BatchCollected
	var fails chunkFailures
	var prior []string // the chunk's batches so far
	// Since wire.ChangeBatchBounded the chunk settles its own failures (see giveUp, chunkUnanswered): kept is a
	// collected batch whose input file was kept for the same lines' next batch, deleted when the chunk ends
	// without one; lost counts the batches the provider lost; again is the provider's last reason for the cells
	// still to answer.
	bounded := batchBounded(ctx)
	var kept wire.BatchInfo
	lost := 0
	again := ""
	if bounded {
		defer func() { r.deleteKeptInput(ctx, p, kept) }()
	}
	for round := 0; round < rounds && cells.Len() > 0; round++ {
		in := wire.BatchChunkInput{RunID: r.runID, Pass: p, Chunk: i, Round: round, Cells: cells, Digest: digest,
			Since: r.state.Started, Try: fails.try}
		if !anthropic {
			in.Known = slices.Clone(prior) // submitAnthropic sets the run's own
		}
		if r.halted(bb) && workflow.GetVersion(ctx, wire.ChangeBatchFailures, workflow.DefaultVersion, 1) >= 1 {
			// The budget (or on_error=raise) stopped the pass while this chunk waited or backed off: nothing
			// more is submitted, and its cells are recorded with the run's reason.
			return total
		}
		if r.unpaused(ctx) != nil { // a paused run submits nothing (wire.ChangeRunPause)
			return total
		}
		what := fmt.Sprintf("pass %d chunk %d round %d: %d cells of %s", p.Index, i, round, cells.Len(), m.ID)
		reserved := r.reserveBatch(p, bb, cost)
		for !reserved && bb.holding() && !r.halted(bb) {
			// Other chunks of the pass hold reservations of their worst case, which their collects turn into
			// what they cost: wait for one before deciding that the budget is spent.
			held, seen := bb.reserved, bb.settles
			if err := workflow.Await(ctx, func() bool { return bb.freed(held, seen) || r.halted(bb) }); err != nil {
				return total
			}
			reserved = r.reserveBatch(p, bb, cost)
		}
		if !reserved {
			bb.spentOut = true // the pass's other chunks stop too, whatever stopped the run first
			if r.state.Stopped == "" {
				r.stop(errclass.BudgetExhausted, fmt.Sprintf("budget_usd %s reached: a batch of %d cells of %s could cost up to %s, and %s of the pass's share is left (spent %s)",
					usage.Dollars(r.plan.BudgetUSD).Display(), cells.Len(), m.ID, usage.Dollars(cost).Display(),
					usage.Dollars(bb.left()).Display(), r.state.Totals.CostUSD.Display()))
			}
			return total
		}
		// The submission runs to its end even when the run is cancelled meanwhile: a create may have reached the
		// provider, and the batch it made is then cancelled and collected below, not left running unknown.
		var info wire.BatchInfo
		var err error
		if ctx.Err() != nil {
			bb.settle(cost, 0) // cancelled before the submission: nothing was created
			return total
		}
		sctx, cancelSubmit := workflow.NewDisconnectedContext(ctx)
		r.submitting[m.ID]++
		if anthropic {
			info, err = r.submitAnthropic(ctx, sctx, in, what)
		} else {
			err = wire.SubmitBatch.Execute(batchActivityCtx(sctx, "submit "+what), in).Get(sctx, &info)
		}
		r.submitting[m.ID]--
		cancelSubmit()
		if err == nil && ctx.Err() != nil {
			return r.cancelRecorded(ctx, p, in, info, cost, bb, total)
		}
		var cands *candidatesError
		if errors.As(err, &cands) {
			// Several batches could be this chunk's: its own is recorded from whichever is.
			got, cerr := r.collectCandidates(ctx, p, in, cands.ids)
			if cerr != nil {
				workflow.GetLogger(ctx).Error("collecting candidate batches failed", "batches", cands.ids, "error", cerr)
				bb.settle(cost, cost) // what the candidates cost is not known: the worst case stays spent
				if bounded {
					return r.giveUp(ctx, p, cells, total, cerr, "collect_failed",
						fmt.Sprintf("the candidate batches %v could not be collected", cands.ids), len(prior))
				}
				return r.chunkFailed(ctx, p, cells, total, cerr)
			}
			total.Add(got)
			bb.settle(cost, got.Usage.CostUSD.Float())
			cells, digest, cost = got.Again, got.AgainDigest, got.AgainCost
			continue
		}
		if err != nil {
			workflow.GetLogger(ctx).Error("submitting a batch failed", "pass", p.Index, "chunk", i, "error", err)
			if _, refused := refusal(err); refused {
				bb.settle(cost, 0) // refused before anything was created: nothing to pay
			} else {
				bb.settle(cost, cost) // a batch may exist unknown: its worst case stays spent, so no chunk waits on it
			}
			if bounded {
				return r.giveUp(ctx, p, cells, total, err, "submit_failed", "the chunk's batch could not be submitted", len(prior))
			}
			return r.chunkFailed(ctx, p, cells, total, err)
		}
		key := fmt.Sprintf("%d/%d", p.Index, i)
		prior = append(prior, info.ID)
		r.batchSeen(ctx, key, m.ID, info)
		info, err = r.waitBatch(ctx, p, key, info)
		if err != nil && ctx.Err() != nil {
			return r.cancelRecorded(ctx, p, in, info, cost, bb, total)
		}
		if err != nil {
			workflow.GetLogger(ctx).Error("polling a batch failed", "batch", info.ID, "error", err)
			// The batch may run on, uncollected, or have been billed before it was lost: its worst case stays spent.
			bb.settle(cost, cost)
			if !bounded {
				return total
			}
			class, msg := classOf(err)
			if class == errclass.BatchLost && lost < maxLostBatches {
				// Its results can never arrive: the same cells go again, as a fresh try that no round counts and
				// whose key is new, so that the lost batch, should it be listed again, is never adopted.
				lost++
				fails.try++
				r.batchNote(ctx, key, fmt.Sprintf("%s; its cells were submitted again", msg))
				round--
				continue
			}
			what := "the chunk's batch " + info.ID + " was given up"
			if class == errclass.BatchLost {
				what = fmt.Sprintf("%d of the chunk's batches were lost", lost+1)
			}
			r.abandonBatch(ctx, p, info, err)
			return r.giveUp(ctx, p, cells, total, err, "wait_failed", what, len(prior))
		}
		// The batch ended and is paid for: its results are recorded even when the run is being cancelled.
		var got wire.BatchCollected
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		err = wire.CollectBatch.Execute(batchWaitCtx(dctx, "collect "+info.ID),
			wire.BatchCollectInput{BatchChunkInput: in, Batch: info}).Get(dctx, &got)
		cancel()
		if err != nil {
			workflow.GetLogger(ctx).Error("collecting a batch failed", "batch", info.ID, "error", err)
			bb.settle(cost, cost) // paid, not recorded: its worst case stays spent
			if bounded {
				return r.giveUp(ctx, p, cells, total, err, "collect_failed",
					"the results of batch "+info.ID+" could not be collected (its files are kept at the provider)", len(prior))
			}
			return r.chunkFailed(ctx, p, cells, total, err)
		}
		total.Add(got)
		bb.settle(cost, got.Usage.CostUSD.Float())
		sent := cells.Len()
		// The same lines go again (the batch failed as a whole, or expired or was cancelled before any of them
		// ran): its input file still serves them.
		keepInput := got.Again.Len() > 0 && got.AgainDigest == digest
		dctx, cancel = workflow.NewDisconnectedContext(ctx)
		r.cleanupBatch(dctx, p, info, keepInput)
		cancel()
		switch {
		case keepInput:
			kept = info
		case info.InputFileID == kept.InputFileID:
			kept = wire.BatchInfo{} // the batch that read it last deleted it
		}
		cells, digest, cost, again = got.Again, got.AgainDigest, got.AgainCost, got.AgainReason
		if info.Status == wire.BatchStatusFailed {
			again = failureCode(info) // its results do not mention the cells: the provider's reason does
		}
		if info.Status == wire.BatchStatusFailed && cells.Len() > 0 {
			switch r.batchFailed(ctx, p, key, info, sent, cells.Len(), round+1 >= rounds, &fails) {
			case failFree:
				round-- // not a round of these cells: see batchfail.go
			case failSplit:
				return r.splitChunk(ctx, p, key, cells, cost, bb, anthropic, total)
			case failStop:
				return total
			}
		}
	}
	return r.chunkUnanswered(ctx, p, cells, fails, bb, total, unanswered{bounded: bounded, reason: again, batches: len(prior)})
}

// cancelRecorded is a chunk's end when the run is cancelled after its batch info was created: the batch is
// cancelled and what it completed recorded (cancelChunk), on a context the cancellation does not cut short, its
// reservation settled at what it cost, and total returned with it.
func (r *runner) cancelRecorded(ctx workflow.Context, p experiment.Pass, in wire.BatchChunkInput, info wire.BatchInfo,
	cost float64, bb *batchBudget, total wire.BatchCollected) wire.BatchCollected {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	r.batchSeen(dctx, fmt.Sprintf("%d/%d", p.Index, in.Chunk), r.plan.Models[p.Model].ID, info)
	got := r.cancelChunk(dctx, p, in, info)
	bb.settle(cost, got.Usage.CostUSD.Float())
	total.Add(got)
	return total
}

// batchBudget is a batch pass's share of budget_usd: what its submitted batches may cost at most (reserved) and
// what its collected ones cost (spent). Its chunks run in coroutines of one workflow, so no lock is needed.
type batchBudget struct {
	on                     bool
	limit, reserved, spent float64
	// holds counts the reservations not yet settled and settles the settlements so far. A chunk waits on them,
	// not on reserved: the float sum of reservations made and settled need not come back to exactly 0, and a
	// chunk that waited for a residue above 0 to fall waited forever. Runs recorded before
	// wire.ChangeBatchBudgetPerPass (ownShare false) keep waiting on reserved, as they did.
	holds, settles int
	// spentOut says a submission of the pass did not fit its share: the pass submits nothing more.
	spentOut bool
	// ownShare says a budget stop halts only the passes whose share is spent (wire.ChangeBatchBudgetPerPass);
	// false, in runs recorded before, any stop of the run halts every batch pass.
	ownShare bool
}

// halted says pass b's chunks submit nothing more: its own share ran out, or the run stopped for a reason other
// than the budget (on_error=raise). A budget stop of another pass leaves this one running within its share, as
// a synchronous pass runs on, unless the run was recorded before ChangeBatchBudgetPerPass.
func (r *runner) halted(b *batchBudget) bool {
	switch {
	case b.spentOut:
		return true
	case r.state.Stopped == "":
		return false
	default:
		return !b.ownShare || r.state.StopClass != errclass.BudgetExhausted
	}
}

// holding says another chunk of the pass holds a reservation, whose settlement may leave room.
func (b *batchBudget) holding() bool {
	if b.ownShare {
		return b.holds > 0
	}
	return b.reserved > 0
}

// freed says a reservation was settled since reserved was held and settles was seen.
func (b *batchBudget) freed(held float64, seen int) bool {
	if b.ownShare {
		return b.settles > seen
	}
	return b.reserved < held
}

// left is what the pass's share has left.
func (b *batchBudget) left() float64 { return max(0, b.limit-b.reserved-b.spent) }

// settle ends a reservation of cost, of which spent was paid.
func (b *batchBudget) settle(cost, spent float64) {
	if !b.on {
		return // nothing was reserved
	}
	b.reserved -= cost
	b.spent += spent
	b.holds--
	b.settles++
}

// reserveBatch reserves cost against the pass's budget; when it does not fit, the share is computed again
// (finished passes may have left budget behind; a share never shrinks). It reports whether cost is reserved.
func (r *runner) reserveBatch(p experiment.Pass, b *batchBudget, cost float64) bool {
	if !b.on {
		return true
	}
	if cost > b.left() {
		b.limit = max(b.limit, r.share(p.Model).BudgetUSD)
		if cost > b.left() {
			return false
		}
	}
	b.reserved += cost
	b.holds++
	return true
}

// chunkFailed records the cells of a chunk's round that have no record as failed with err, when no retry can
// cure it (the batch pass's own refusals: its requests changed, the provider holds other requests under its
// key), and adds them to total. Other errors leave the cells to the pass, which records them not run.
func (r *runner) chunkFailed(ctx workflow.Context, p experiment.Pass, cells experiment.CellSet, total wire.BatchCollected, err error) wire.BatchCollected {
	msg, refused := refusal(err)
	if ctx.Err() != nil || !refused {
		return total
	}
	return r.failCells(ctx, p, wire.FailInput{RunID: r.runID, Start: p.Start, End: p.End, Cells: cells,
		Class: errclass.BatchRefused, Message: msg}, total)
}

// failCells records the cells of in (a chunk's, of pass p) that have no record failed as in says
// (FailUnfinished), and returns total with them; a failure to record is logged, and the cells are left to the
// export, which records them NotRun.
func (r *runner) failCells(ctx workflow.Context, p experiment.Pass, in wire.FailInput, total wire.BatchCollected) wire.BatchCollected {
	var f wire.FailOutput
	if err := wire.FailUnfinished.Execute(shortCtx(ctx), in).Get(ctx, &f); err != nil {
		workflow.GetLogger(ctx).Error("recording a chunk's cells failed", "pass", p.Index, "error", err)
		return total
	}
	total.Recorded += f.Recorded
	total.Failed += f.Recorded
	return total
}

// refusal reports whether err is one of the batch pass's refusals (errclass.BatchRefused), which no retry cures,
// and its message.
func refusal(err error) (msg string, refused bool) {
	class, msg := classOf(err)
	return msg, class == errclass.BatchRefused
}

// submitAnthropic submits an Anthropic chunk's round: once no other Anthropic submission of the run is under
// way, with the intent (now) and the batches the run adopted so far in its input, which Temporal records before
// the first attempt, so that every attempt finds a batch an earlier one created and adopts it (see
// wire.BatchChunkInput.Intent). The batches adopted before a continue-as-new are not carried over: they
// were all created before the passes that follow it started, so before any of their intents.
//
// It waits for its turn on ctx (a cancelled run submits nothing more) and submits on sctx, which the run's
// cancellation does not cut short.
func (r *runner) submitAnthropic(ctx, sctx workflow.Context, in wire.BatchChunkInput, what string) (wire.BatchInfo, error) {
	if err := workflow.Await(ctx, func() bool { return !r.anthropicSubmitting }); err != nil {
		return wire.BatchInfo{}, err
	}
	r.anthropicSubmitting = true
	defer func() { r.anthropicSubmitting = false }()
	in.Intent = workflow.Now(sctx)
	in.Known = slices.Clone(r.anthropicBatches)
	var info wire.BatchInfo
	if err := wire.SubmitBatch.Execute(batchActivityCtx(sctx, "submit "+what), in).Get(sctx, &info); err != nil {
		if ids, ok := candidates(sctx, err); ok {
			// Whichever of them is this chunk's, none is another chunk's: they are known from now on.
			r.anthropicBatches = append(r.anthropicBatches, ids...)
			return wire.BatchInfo{}, &candidatesError{ids: ids, err: err}
		}
		return wire.BatchInfo{}, err
	}
	r.anthropicBatches = append(r.anthropicBatches, info.ID)
	return info, nil
}

// batchPassFailed records the pass's cells failed when its plan could not be made.
func (r *runner) batchPassFailed(ctx workflow.Context, p experiment.Pass, err error) {
	if ctx.Err() != nil {
		return
	}
	class, msg := classOf(err)
	f, ferr := r.failRange(ctx, p.Start, p.End, class, msg)
	if ferr != nil {
		workflow.GetLogger(ctx).Error("recording unfinished cells failed", "pass", p.Index, "error", ferr)
	}
	r.passDone(ctx, wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: f.Recorded, Failed: f.Recorded})
}

// batchSeen keeps the latest state of a batch for the Web UI and the progress query.
func (r *runner) batchSeen(ctx workflow.Context, key, model string, info wire.BatchInfo) {
	if r.batches == nil {
		r.batches = map[string]wire.BatchProgress{}
	}
	if i, found := slices.BinarySearch(r.batchKeys, key); !found {
		r.batchKeys = slices.Insert(r.batchKeys, i, key)
	}
	now := wire.BatchProgress{Key: key, Model: model, ID: info.ID, Status: info.Status, Total: info.Counts.Total,
		Done: info.Counts.Done(), ExpiresAt: info.ExpiresAt, State: info.State, Note: r.batches[key].Note}
	r.batchEnds(r.batches[key], now)
	r.batches[key] = now
	r.details(ctx)
}

// cancelChunk cancels the chunk's batch, waits for the provider to end it and records what it completed. ctx is
// disconnected from the run's cancellation.
func (r *runner) cancelChunk(ctx workflow.Context, p experiment.Pass, in wire.BatchChunkInput, info wire.BatchInfo) wire.BatchCollected {
	log := workflow.GetLogger(ctx)
	ref := wire.BatchRef{RunID: r.runID, Model: p.Model, ID: info.ID}
	if err := wire.CancelBatch.Execute(batchWaitCtx(ctx, "cancel "+info.ID), ref).Get(ctx, &info); err != nil {
		log.Error("cancelling a batch failed", "batch", info.ID, "error", err)
		return wire.BatchCollected{}
	}
	key := fmt.Sprintf("%d/%d", p.Index, in.Chunk)
	r.batchSeen(ctx, key, r.plan.Models[p.Model].ID, info)
	// Providers end a cancelled batch within minutes.
	if batchAwaits(ctx) {
		var err error
		if info, err = r.awaitBatch(ctx, p, key, info); err != nil {
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
		r.batchSeen(ctx, key, r.plan.Models[p.Model].ID, info)
	}
	var got wire.BatchCollected
	if err := wire.CollectBatch.Execute(batchWaitCtx(ctx, "collect "+info.ID),
		wire.BatchCollectInput{BatchChunkInput: in, Batch: info}).Get(ctx, &got); err != nil {
		log.Error("collecting a cancelled batch failed", "batch", info.ID, "error", err)
	}
	return got
}

// cancelled is what the run returns when it is cancelled with err: at once, unless chunks of batch passes are in
// flight, which first cancel their provider batches and record what completed.
func (r *runner) cancelled(ctx workflow.Context, err error) error {
	if r.batchChunks == 0 {
		return err
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if werr := workflow.Await(dctx, func() bool { return r.batchChunks == 0 }); werr != nil {
		return werr
	}
	return err
}
