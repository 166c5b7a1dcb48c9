package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
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

// batchPass is one batch pass of a run as it runs: the chunks of its plan (chunk, in batchchunk.go), what they
// recorded, and its share of budget_usd. Its chunks run in coroutines of one workflow, so nothing needs a lock.
type batchPass struct {
	r *runner
	p experiment.Pass
	m wire.PlanModel
	// sh is the pass's share at its launch, which a synchronous pass for what the batches left uses too.
	sh wire.Share
	// rounds is how many rounds a chunk has: run.max_attempts when the model resubmits what did not run, else 1.
	rounds int
	// anthropic says the model's batches are Anthropic's, submitted one at a time (see anthropicTurn).
	anthropic bool
	budget    *batchBudget
	// nextChunk is the next free chunk number: the halves of a split chunk take the numbers after the plan's.
	nextChunk int
	// res adds up what the pass recorded.
	res wire.PassResult
}

// runBatchPass runs pass p of a model in batch mode to its end, within sh, its share, whose part of the budget is
// budget (computed with it, at the pass's launch).
func (r *runner) runBatchPass(ctx workflow.Context, p experiment.Pass, sh wire.Share, budget money) {
	bp := &batchPass{r: r, p: p, m: r.plan.Models[p.Model], sh: sh, rounds: 1}
	bp.budget = &batchBudget{on: sh.Budgeted, limit: budget}
	if bp.m.Batch.OnExpired == experiment.OnExpiredResubmit {
		bp.rounds = max(1, r.plan.Run.MaxAttempts)
	}
	bp.run(ctx)
}

// run plans the pass, runs its chunks at once and records what they left.
func (bp *batchPass) run(ctx workflow.Context) {
	var plan wire.BatchPlan
	err := wire.PlanBatchPass.Execute(batchActivityCtx(ctx, fmt.Sprintf("pass %d: plan the batches of %s", bp.p.Index, bp.m.ID)),
		wire.BatchPassInput{RunID: bp.r.runID, Pass: bp.p}).Get(ctx, &plan)
	if err != nil {
		bp.planFailed(ctx, err)
		return
	}
	bp.res = wire.PassResult{Pass: bp.p.Index, Cells: bp.p.Len(), Cached: plan.Cached, Done: plan.Cached + plan.Failed,
		Failed: plan.Failed, FirstFailure: -1, Usage: plan.Usage}
	bp.budget.ownShare = workflow.GetVersion(ctx, wire.ChangeBatchBudgetPerPass, workflow.DefaultVersion, 1) >= 1
	bp.budget.exact = workflow.GetVersion(ctx, wire.ChangeBatchBudgetUSD, workflow.DefaultVersion, 1) >= 1
	bp.nextChunk = len(plan.Chunks)
	bp.anthropic = plan.Format == wire.FormatAnthropic
	wg := workflow.NewWaitGroup(ctx)
	for i, cells := range plan.Chunks {
		c := bp.chunk(i, cells, at(plan.Digests, i), moneyOf(at(plan.Costs, i)), 0)
		wg.Add(1)
		bp.r.batch.chunks++
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer wg.Done()
			defer func() { bp.r.batch.chunks-- }()
			got := c.run(gctx)
			bp.res.Done += got.Recorded
			bp.res.Failed += got.Failed
			bp.res.OK += got.Recorded - got.Failed
			bp.res.Usage.Add(got.Usage)
		})
	}
	wg.Wait(ctx)
	if ctx.Err() == nil {
		bp.finish(ctx)
	}
}

// at is s[i], or the zero value when s is shorter (a plan without digests, or without costs when the run has no
// budget).
func at[T any](s []T, i int) T {
	var v T
	if i < len(s) {
		v = s[i]
	}
	return v
}

// finish settles the cells the pass's chunks left without a record, and counts the pass done.
func (bp *batchPass) finish(ctx workflow.Context) {
	if bp.halted() {
		// The budget (or on_error=raise) stopped the pass: the cells left are recorded with the run's reason.
		bp.r.passDone(ctx, bp.res)
		return
	}
	if bp.res.Done < bp.p.Len() && bp.m.Batch.OnExpired == experiment.OnExpiredSync {
		// RunSeedPass calls only the cells without a record: exactly those the batches did not answer. It counts
		// the cells the batches recorded too (it reads every record of the pass), so they are not counted here.
		bp.r.runPass(ctx, bp.p, bp.sh)
		return
	}
	if bp.res.Done < bp.p.Len() {
		f, err := bp.r.failRange(ctx, bp.p.Start, bp.p.End, errclass.BatchNotRun,
			fmt.Sprintf("not answered: the provider's batches did not run this cell, or failed it transiently, in %d submissions", max(1, bp.r.plan.Run.MaxAttempts)))
		if err != nil {
			workflow.GetLogger(ctx).Error("recording unanswered cells failed", "pass", bp.p.Index, "error", err)
		}
		bp.res.Done += f.Recorded
		bp.res.Failed += f.Recorded
	}
	bp.r.passDone(ctx, bp.res)
}

// planFailed records the pass's cells failed when its plan could not be made.
func (bp *batchPass) planFailed(ctx workflow.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	class, msg := classOf(err)
	f, ferr := bp.r.failRange(ctx, bp.p.Start, bp.p.End, class, msg)
	if ferr != nil {
		workflow.GetLogger(ctx).Error("recording unfinished cells failed", "pass", bp.p.Index, "error", ferr)
	}
	bp.r.passDone(ctx, wire.PassResult{Pass: bp.p.Index, Cells: bp.p.Len(), Done: f.Recorded, Failed: f.Recorded})
}

// halted says the pass's chunks submit nothing more: its own share ran out, or the run stopped for a reason other
// than the budget (on_error=raise). A budget stop of another pass leaves this one running within its share, as
// a synchronous pass runs on, unless the run was recorded before ChangeBatchBudgetPerPass.
func (bp *batchPass) halted() bool {
	b, st := bp.budget, bp.r.state
	switch {
	case b.spentOut:
		return true
	case st.Stopped == "":
		return false
	default:
		return !b.ownShare || st.StopClass != errclass.BudgetExhausted
	}
}

// reserve reserves cost against the pass's budget; when it does not fit, the share is computed again (finished
// passes may have left budget behind; a share never shrinks). It reports whether cost is reserved.
func (bp *batchPass) reserve(cost money) bool {
	b := bp.budget
	if !b.on {
		return true
	}
	if !b.fits(cost) {
		b.grow(bp.r.budgetShare())
		if !b.fits(cost) {
			return false
		}
	}
	b.take(cost)
	return true
}

// spent stops the pass, and the run, when a submission of cells, which could cost up to cost, does not fit what
// the pass's share has left.
func (bp *batchPass) spent(cells int, cost money) {
	bp.budget.spentOut = true // the pass's other chunks stop too, whatever stopped the run first
	if bp.r.state.Stopped == "" {
		bp.r.stop(errclass.BudgetExhausted, fmt.Sprintf("budget_usd %s reached: a batch of %d cells of %s could cost up to %s, and %s of the pass's share is left (spent %s)",
			bp.r.plan.BudgetUSD.Display(), cells, bp.m.ID, cost.usd.Display(), bp.budget.left().usd.Display(), bp.r.state.Totals.CostUSD.Display()))
	}
}

// seen keeps the latest state of batch info of chunk key for the Web UI and the progress query.
func (bp *batchPass) seen(ctx workflow.Context, key string, info wire.BatchInfo) {
	bp.r.batch.board.seen(key, bp.m.ID, info)
	bp.r.details(ctx)
}

// edit changes the progress of batch key with fn, when the run has seen it, and updates the run's details.
func (bp *batchPass) edit(ctx workflow.Context, key string, fn func(*wire.BatchProgress)) {
	if bp.r.batch.board.edit(key, fn) {
		bp.r.details(ctx)
	}
}

// cancelled is what the run returns when it is cancelled with err: at once, unless chunks of batch passes are in
// flight, which first cancel their provider batches and record what completed.
func (r *runner) cancelled(ctx workflow.Context, err error) error {
	if r.batch.chunks == 0 {
		return err
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if werr := workflow.Await(dctx, func() bool { return r.batch.chunks == 0 }); werr != nil {
		return werr
	}
	return err
}
