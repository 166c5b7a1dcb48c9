// Package workflows holds ExperimentWorkflow: it plans the passes of a spec (model × seed, in submission order),
// runs at most max_parallel_passes RunSeedPass activities at once, hands each pass its share of its model's
// limits, records the cells a run gives up on, and exports the results.
//
// Everything here is deterministic workflow code: workflow.Go/Now/Await, no I/O, no map iteration.
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
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// passesPerRun bounds the passes one workflow run launches before it continues as new, so that history stays far
// below Temporal's limits even when the server does not suggest it first.
const passesPerRun = 500

// ExperimentWorkflow runs an experiment grid. See the package doc.
func ExperimentWorkflow(ctx workflow.Context, in wire.Input) (wire.Result, error) {
	r := &runner{in: in, runID: in.RunID}
	if r.runID == "" {
		r.runID = workflow.GetInfo(ctx).WorkflowExecution.ID
	}
	return r.run(ctx)
}

type runner struct {
	in    wire.Input
	runID string
	// plan is what PrepareRun decided about the spec, read back from history on replay.
	plan    wire.Plan
	passes  []experiment.Pass
	state   wire.State
	running int
	// runningByModel counts passes in flight per model index, for the limit shares.
	runningByModel map[int]int
	// runningPass holds the passes in flight: outage news of any other pass (a stale attempt's, or one signalled
	// to this run after continue-as-new) is dropped.
	runningPass map[int]bool
	// outages holds the running passes whose provider is down, in pass order (wire.SignalOutage). A slice,
	// not a map: workflow code iterates it.
	outages []wire.Outage
	// batch is what the run's batch passes share (see batchRun).
	batch batchRun
	// pausable says the run honours wire.SignalPause (wire.ChangeRunPause); its pause is state.Paused.
	pausable bool
	// held counts the passes launched whose start the pause holds back (unpaused): not running yet.
	held int
}

func (r *runner) run(ctx workflow.Context) (wire.Result, error) {
	log := workflow.GetLogger(ctx)
	r.runningByModel = make(map[int]int)
	r.runningPass = make(map[int]bool)
	// Decoding, validating and planning the spec happen in an activity, never in workflow code: its result is
	// recorded, so a later release that validates or plans differently cannot change a running workflow's replay.
	// After continue-as-new the input holds no spec and PrepareRun reads the saved one.
	prep := wire.PrepareInput{RunID: r.runID}
	if r.in.State == nil {
		prep.Spec = r.in.Spec
		prep.RetryFailed = r.in.RetryFailed
		prep.SpecDigest = r.in.SpecDigest
	}
	if err := wire.PrepareRun.Execute(prepareCtx(ctx), prep).Get(ctx, &r.plan); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == errclass.InvalidSpec {
			// The run's own failure says what is wrong with the spec, as `starter validate` would.
			return wire.Result{}, temporal.NewNonRetryableApplicationError(app.Message(), errclass.InvalidSpec, nil)
		}
		return wire.Result{}, fmt.Errorf("prepare run: %w", err)
	}
	r.passes = r.plan.Passes
	if r.in.State != nil {
		r.state = *r.in.State
	} else {
		r.state = wire.State{Started: workflow.Now(ctx)}
		r.state.Totals = wire.Progress{RunID: r.runID, Cells: r.plan.Cells, Passes: len(r.passes)}
	}
	if r.state.DeadModels == nil {
		r.state.DeadModels = make(map[int]string)
	}
	if r.state.Answered == nil {
		r.state.Answered = make(map[int]bool)
	}
	if err := workflow.SetQueryHandler(ctx, wire.QueryProgress, func() (wire.Progress, error) { return r.progress(), nil }); err != nil {
		return wire.Result{}, err
	}
	if err := workflow.SetQueryHandler(ctx, wire.QueryShare, func(pass int) (wire.Share, error) {
		if pass < 0 || pass >= len(r.passes) {
			return wire.Share{}, fmt.Errorf("no pass %d", pass)
		}
		return r.share(r.passes[pass].Model), nil
	}); err != nil {
		return wire.Result{}, err
	}
	outageCh := workflow.GetSignalChannel(ctx, wire.SignalOutage)
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			var o wire.Outage
			if !outageCh.Receive(gctx, &o) {
				return
			}
			if r.runningPass[o.Pass] || !o.State.Open {
				r.setOutage(o)
				r.details(gctx)
			}
		}
	})
	// The owner's pause (starter pause / resume): runs recorded before wire.ChangeRunPause, whose workers ignored
	// the signal, replay without a marker here and ignore it still.
	if r.pausable = workflow.GetVersion(ctx, wire.ChangeRunPause, workflow.DefaultVersion, 1) >= 1; r.pausable {
		pauseCh := workflow.GetSignalChannel(ctx, wire.SignalPause)
		workflow.Go(ctx, func(gctx workflow.Context) {
			for {
				var p wire.Pause
				if !pauseCh.Receive(gctx, &p) {
					return
				}
				r.setPause(gctx, p)
			}
		})
	}
	r.details(ctx)

	maxPar := max(1, r.plan.Run.MaxParallelPasses)
	launched := 0
	continueAsNew := false
	for r.state.Next < len(r.passes) && r.state.Stopped == "" {
		if err := workflow.Await(ctx, func() bool {
			return r.running < maxPar && r.state.Paused == nil || r.state.Stopped != ""
		}); err != nil {
			return wire.Result{}, r.cancelled(ctx, err)
		}
		if r.state.Stopped != "" {
			break
		}
		// At least one pass per run, so a suggestion can never loop continue-as-new without progress.
		if launched > 0 && (launched >= passesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			continueAsNew = true
			break
		}
		p := r.passes[r.state.Next]
		r.state.Next++
		launched++
		if why, dead := r.state.DeadModels[p.Model]; dead {
			f, err := r.failRange(ctx, p.Start, p.End, errclass.Skipped, "not run: "+why)
			if err != nil {
				return wire.Result{}, err
			}
			r.passDone(ctx, wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: f.Recorded, Failed: f.Recorded,
				Usage: usage.Usage{CostUSD: f.CostUSD}})
			continue
		}
		r.running++
		r.runningByModel[p.Model]++
		r.runningPass[p.Index] = true
		sh, budget := r.share(p.Model), r.budgetShare()
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer func() {
				r.running--
				r.runningByModel[p.Model]--
				delete(r.runningPass, p.Index)
				r.setOutage(wire.Outage{Pass: p.Index})
			}()
			if r.holdPass(gctx) != nil {
				return // the workflow is being cancelled while paused
			}
			if r.plan.Models[p.Model].Batch.Mode == experiment.BatchBatch {
				r.runBatchPass(gctx, p, sh, budget)
				return
			}
			r.runPass(gctx, p, sh)
		})
	}
	if err := workflow.Await(ctx, func() bool { return r.running == 0 }); err != nil {
		return wire.Result{}, r.cancelled(ctx, err)
	}
	if continueAsNew && r.state.Stopped == "" {
		st := r.state
		next := wire.Input{RunID: r.runID, Output: r.in.Output, State: &st}
		return wire.Result{}, workflow.NewContinueAsNewError(ctx, ExperimentWorkflow, next)
	}
	if r.state.Stopped != "" {
		// on_error=raise or the budget: passes not started are cancelled, and started passes stopped
		// dispatching; every cell without a result is recorded so the output has every cell.
		if _, err := r.failRange(ctx, 0, r.plan.Cells, r.state.StopClass, "not run: "+r.state.Stopped); err != nil {
			return wire.Result{}, err
		}
	}
	var out wire.ExportOutput
	err := wire.ExportResults.Execute(exportCtx(ctx), wire.ExportInput{
		RunID: r.runID, Dir: r.in.Output, Elapsed: workflow.Now(ctx).Sub(r.state.Started),
	}).Get(ctx, &out)
	if err != nil {
		return wire.Result{}, fmt.Errorf("export results: %w", err)
	}
	if n := out.Summary.Failed; n > 0 && r.plan.Run.OnError != experiment.OnErrorIgnore {
		log.Warn(fmt.Sprintf("%d of %d model calls failed", n, out.Summary.Cells), "errors", out.Summary.Errors)
	}
	return wire.Result{RunID: r.runID, OutputDir: out.Dir, Summary: out.Summary, Stopped: r.state.Stopped}, nil
}

// runPass runs one pass to its end: success, or failure after Temporal's retries, in which case every unfinished
// cell is recorded with the last reason.
func (r *runner) runPass(ctx workflow.Context, p experiment.Pass, sh wire.Share) {
	m := r.plan.Models[p.Model]
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: 24 * time.Hour,
		HeartbeatTimeout:    5 * time.Second,
		Summary: fmt.Sprintf("pass %d: %s seed %d, cells %d-%d", p.Index, m.ID, r.plan.Seeds[p.Seed],
			p.Start, p.End-1),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    wire.InitialRetryInterval,
			BackoffCoefficient: 2,
			MaximumInterval:    wire.MaxRetryInterval,
			// Unlimited: run.max_attempts bounds the tries of each cell inside the pass, and a pass that stops
			// making progress gives itself up after run.stall_timeout (see activities.RunSeedPass). A provider
			// outage is waited out inside the attempt; an attempt ends early only when its worker dies or stops
			// or the store fails, and this policy backs those off.
			MaximumAttempts:        0,
			NonRetryableErrorTypes: errclass.NonRetryable(),
		},
	}
	var res wire.PassResult
	err := wire.RunSeedPass.Execute(workflow.WithActivityOptions(ctx, opts), wire.PassInput{RunID: r.runID, Pass: p,
		Limits: sh.Limits, Budgeted: sh.Budgeted, BudgetUSD: sh.BudgetUSD,
		ModelAnswered: r.state.Answered[p.Model]}).Get(ctx, &res)
	if err == nil {
		if res.OK+res.Unparsed > 0 {
			r.state.Answered[p.Model] = true
		}
		r.passDone(ctx, res)
		switch {
		case r.state.Stopped != "":
		case res.BudgetExhausted:
			r.stop(errclass.BudgetExhausted, fmt.Sprintf("budget_usd %s reached (spent %s)", r.plan.BudgetUSD.Display(), r.state.Totals.CostUSD.Display()))
		case res.Failed > 0 && r.plan.Run.OnError == experiment.OnErrorRaise:
			r.stop(errclass.Skipped, fmt.Sprintf("on_error=raise: cell %d failed (%s)", res.FirstFailure, res.FirstError))
		}
		return
	}
	if ctx.Err() != nil {
		return // the workflow is being cancelled
	}
	class, msg := classOf(err)
	if errclass.EndsModel(class) {
		// The activity recorded the pass's cells; every later pass of this model would fail the same way.
		r.state.DeadModels[p.Model] = fmt.Sprintf("model %s: %s: %s", m.ID, class, msg)
	}
	f, ferr := r.failRange(ctx, p.Start, p.End, class, msg)
	if ferr != nil {
		workflow.GetLogger(ctx).Error("recording unfinished cells failed", "pass", p.Index, "error", ferr)
	}
	// The pass's finished cells are not in a PassResult: count them from the store, so budget shares stay honest.
	r.passDone(ctx, wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: f.Recorded, Failed: f.Recorded,
		Usage: usage.Usage{CostUSD: f.CostUSD}})
	if r.plan.Run.OnError == experiment.OnErrorRaise && r.state.Stopped == "" {
		r.stop(errclass.Skipped, fmt.Sprintf("on_error=raise: pass %d failed (%s: %s)", p.Index, class, msg))
	}
}

// setPause pauses the run (p.Paused) or resumes it, as its owner asked with wire.SignalPause. A pause asked again
// keeps the time of the first.
func (r *runner) setPause(ctx workflow.Context, p wire.Pause) {
	switch {
	case p.Paused && r.state.Paused == nil:
		r.state.Paused = &wire.Paused{Since: workflow.Now(ctx), By: p.By}
	case !p.Paused:
		r.state.Paused = nil
	}
	r.details(ctx)
}

// unpaused waits while the run is paused, before a pass is started or a provider batch submitted: what a paused
// run does not start costs nothing. It returns at once when the run is not paused, and the workflow's
// cancellation when it is cancelled while paused. A run that does not honour the pause (r.pausable false) is
// never paused.
func (r *runner) unpaused(ctx workflow.Context) error {
	return workflow.Await(ctx, func() bool { return r.state.Paused == nil })
}

// holdPass is unpaused for a pass just launched: while it waits, the progress does not count it as running.
func (r *runner) holdPass(ctx workflow.Context) error {
	if r.state.Paused == nil {
		return nil
	}
	r.held++
	defer func() { r.held-- }()
	return r.unpaused(ctx)
}

// stop ends the launching of passes; the cells left without a result are recorded with class.
func (r *runner) stop(class, why string) {
	if r.state.Stopped == "" {
		r.state.Stopped, r.state.StopClass = why, class
	}
}

// classOf names the class of a failed activity: the ApplicationError type, or the timeout kind.
func classOf(err error) (class, msg string) {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type(), app.Message()
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		return errclass.Timeout, to.Error()
	}
	return errclass.Failed, err.Error()
}

// failRange records the cells of [start, end) that have no result as failed.
func (r *runner) failRange(ctx workflow.Context, start, end int, class, msg string) (wire.FailOutput, error) {
	var out wire.FailOutput
	err := wire.FailUnfinished.Execute(shortCtx(ctx), wire.FailInput{
		RunID: r.runID, Start: start, End: end, Class: class, Message: msg,
	}).Get(ctx, &out)
	if err != nil {
		return out, fmt.Errorf("record cells %d-%d as failed: %w", start, end-1, err)
	}
	return out, nil
}

// share is the part of its model's limits and of the run's budget that a running pass of the model may use.
// Every limit is divided by n, the passes of the model that may run at once from now on:
// min(max_parallel_passes, running + not yet started). n never grows during a run, so a share never shrinks
// while its pass runs, and the shares of the passes running at once add up to at most the limit, whenever each
// was computed. The budget is divided the same way among all passes, after what finished passes spent.
func (r *runner) share(model int) wire.Share {
	m := r.plan.Models[model]
	maxPar := max(1, r.plan.Run.MaxParallelPasses)
	remaining := 0
	for _, p := range r.passes[r.state.Next:] {
		if p.Model == model {
			remaining++
		}
	}
	n := max(1, min(maxPar, r.runningByModel[model]+remaining))
	part := func(limit int) int {
		if limit <= 0 {
			return 0
		}
		return max(1, limit/n)
	}
	conc := max(1, r.plan.Run.MaxConcurrency)
	if m.MaxConcurrency > 0 {
		conc = min(conc, part(m.MaxConcurrency))
	}
	sh := wire.Share{Limits: ratelimit.Limits{Concurrency: conc, RPM: part(m.RPM), TPM: part(m.TPM), Burst: m.Burst}}
	if r.plan.BudgetUSD > 0 {
		sh.Budgeted, sh.BudgetUSD = true, r.budgetShare().usd
	}
	return sh
}

// budgetShare is a running pass's part of what is left of budget_usd: divided among all passes as share says,
// rounded down to the picodollar, so that the parts of the passes running at once add up to at most what is left.
// Its float64 is the same part as runs recorded before wire.ChangeBatchBudgetUSD computed it, for their batch
// passes' replays.
func (r *runner) budgetShare() money {
	nb := max(1, min(max(1, r.plan.Run.MaxParallelPasses), r.running+len(r.passes)-r.state.Next))
	left := max(0, r.plan.BudgetUSD-r.state.Totals.CostUSD)
	return money{usd: left / usage.USD(nb),
		f: max(0, r.plan.BudgetUSD.Float()-r.state.Totals.CostUSD.Float()) / float64(nb)}
}

func (r *runner) passDone(ctx workflow.Context, res wire.PassResult) {
	t := &r.state.Totals
	t.PassesDone++
	t.CellsDone += res.Done
	t.Failed += res.Failed
	t.Retried += res.Retried
	t.Cached += res.Cached
	t.Add(res.Usage)
	r.details(ctx)
}

func (r *runner) progress() wire.Progress {
	p := r.state.Totals
	p.RunID = r.runID
	p.PassesRunning = r.running - r.held
	p.Stopped = r.state.Stopped
	p.Paused = r.state.Paused
	p.Outages = slices.Clone(r.outages)
	p.Batches = r.batch.board.list()
	return p
}

// setOutage records what a pass said of its provider: down (kept in pass order) or up (forgotten).
func (r *runner) setOutage(o wire.Outage) {
	i, found := slices.BinarySearchFunc(r.outages, o.Pass, func(x wire.Outage, pass int) int { return x.Pass - pass })
	switch {
	case found && o.State.Open:
		r.outages[i] = o
	case found:
		r.outages = slices.Delete(r.outages, i, i+1)
	case o.State.Open:
		r.outages = slices.Insert(r.outages, i, o)
	}
}

// details shows where the run stands in the Web UI.
func (r *runner) details(ctx workflow.Context) {
	t := r.state.Totals
	d := fmt.Sprintf("%d/%d passes done · %d/%d cells · %d failed · %d retried",
		t.PassesDone, t.Passes, t.CellsDone, t.Cells, t.Failed, t.Retried)
	if p := r.state.Paused; p != nil {
		d = fmt.Sprintf("paused since %s UTC%s: no pass starts and no batch is submitted until `starter resume %s`; ",
			p.Since.UTC().Format(time.DateTime), by(p.By), r.runID) + d
	}
	seen := map[string]bool{}
	for _, o := range r.outages {
		if seen[o.Model] {
			continue
		}
		seen[o.Model] = true
		d += fmt.Sprintf(" · %s: provider down since %s UTC (%s), next probe at %s UTC, no cell charged", o.Model,
			o.State.Since.UTC().Format(time.TimeOnly), o.State.Cause, o.State.NextProbe.UTC().Format(time.TimeOnly))
	}
	for _, b := range r.batch.board.list() {
		status := string(b.Status)
		if b.State != "" {
			status += " (the provider says " + b.State + ")"
		}
		d += fmt.Sprintf("\n%s: batch %s %s, %d of %d done", b.Model, b.ID, status, b.Done, b.Total)
		if !b.ExpiresAt.IsZero() { // a Gemini batch says nothing of its expiry
			d += ", expires " + b.ExpiresAt.UTC().Format("15:04")
		}
		if b.Reason != "" {
			d += ": " + b.Reason
		}
		if b.Note != "" {
			d += " · " + b.Note
		}
	}
	workflow.SetCurrentDetails(ctx, d)
}

// by is " by who" when who is known.
func by(who string) string {
	if who == "" {
		return ""
	}
	return " by " + who
}

// prepareCtx runs PrepareRun: an invalid spec fails at once (non-retryable), a store that is down is retried.
func prepareCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		Summary:             "decode, validate and plan the spec",
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: errclass.NonRetryable()},
	})
}

func shortCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 20,
			NonRetryableErrorTypes: errclass.NonRetryable()},
	})
}

func exportCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    wire.ExportHeartbeatTimeout,
		Summary:             "export results",
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 10,
			NonRetryableErrorTypes: errclass.NonRetryable()},
	})
}
