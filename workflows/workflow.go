// Package workflows holds ExperimentWorkflow: it plans the passes of a spec (model × seed, in submission order),
// runs at most max_parallel_passes RunSeedPass activities at once, hands each pass its share of its model's
// limits, records the cells a run gives up on, and exports the results.
//
// Everything here is deterministic workflow code: workflow.Go/Now/Await, no I/O, no map iteration.
package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/usage"
)

// TaskQueue is the task queue of silico's workflows and activities.
const TaskQueue = "silico"

// QueryProgress is the query that returns a run's Progress.
const QueryProgress = "progress"

// Custom search attributes set on every run when the server knows them (the embedded server registers them).
const (
	AttrExperiment = "SilicoExperiment"
	AttrSpecHash   = "SilicoSpecHash"
)

// SearchAttributes are the custom search attributes a server must register for silico's runs.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		AttrExperiment: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrSpecHash:   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// passesPerRun bounds the passes one workflow run launches before it continues as new, so that history stays far
// below Temporal's limits even when the server does not suggest it first.
const passesPerRun = 500

// Input is the workflow's input: a spec's JSON object (exactly what `starter validate --json` prints, so
// `temporal workflow start --input-file spec.json` works) with optional control keys beside the spec's own:
// run_id, output and state. The workflow never decodes the spec itself: PrepareRun does, with the same strict
// decoder as spec files, and the workflow uses the Plan it records in history.
type Input struct {
	// Spec is the input's JSON as it arrived, control keys included; empty after continue-as-new, when the run's
	// spec is read from the results store.
	Spec json.RawMessage `json:"-"`
	// RunID keys the run's results in the store; default: the workflow id.
	RunID string `json:"run_id,omitempty"`
	// Output is the directory, on the worker's machine, that ExportResults writes; default: <output root>/<run id>.
	Output string `json:"output,omitempty"`
	// State carries progress across continue-as-new; nil on a fresh start.
	State *State `json:"state,omitempty"`
	// RetryFailed makes a new execution of a finished run: its failed cells are cleared and called again, and
	// the outputs rewritten. Input{RunID: id, RetryFailed: true} with no spec retries run id from the store.
	RetryFailed bool `json:"retry_failed,omitempty"`
	// SpecDigest refers to a spec saved in the results store under RunID instead of carrying it (a spec of any
	// size; histories stay small): activities.SpecDigest of the saved bytes. The input then has no spec keys.
	SpecDigest string `json:"spec_digest,omitempty"`
}

// inputControl is the control part of an Input's JSON.
type inputControl struct {
	RunID       string `json:"run_id,omitempty"`
	Output      string `json:"output,omitempty"`
	State       *State `json:"state,omitempty"`
	RetryFailed bool   `json:"retry_failed,omitempty"`
	SpecDigest  string `json:"spec_digest,omitempty"`
}

// UnmarshalJSON keeps the input as it is and reads its control keys. It never fails: an input that is not a
// JSON object is reported by PrepareRun as an invalid spec, once, instead of failing every workflow task.
func (in *Input) UnmarshalJSON(b []byte) error {
	var c inputControl
	_ = json.Unmarshal(b, &c)
	*in = Input{Spec: bytes.Clone(b), RunID: c.RunID, Output: c.Output, State: c.State, RetryFailed: c.RetryFailed,
		SpecDigest: c.SpecDigest}
	return nil
}

// MarshalJSON writes the spec object with the control keys set.
func (in Input) MarshalJSON() ([]byte, error) {
	obj := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(in.Spec)) > 0 {
		if err := json.Unmarshal(in.Spec, &obj); err != nil {
			return nil, fmt.Errorf("workflow input: the spec is not a JSON object: %w", err)
		}
	}
	for _, k := range activities.InputControlKeys() {
		delete(obj, k)
	}
	ctl, err := json.Marshal(inputControl{RunID: in.RunID, Output: in.Output, State: in.State, RetryFailed: in.RetryFailed,
		SpecDigest: in.SpecDigest})
	if err != nil {
		return nil, err
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(ctl, &c); err != nil {
		return nil, err
	}
	maps.Copy(obj, c)
	return json.Marshal(obj) // map keys are sorted: the same input always has the same bytes
}

// NewInput is the input that starts a run of spec, with its defaults filled in (spec itself is not changed).
func NewInput(spec *experiment.Spec, runID, output string) (Input, error) {
	_, b, err := spec.Canonical()
	if err != nil {
		return Input{}, err
	}
	return Input{Spec: b, RunID: runID, Output: output}, nil
}

// State is what a run carries across continue-as-new. All passes before Next have finished.
type State struct {
	Started time.Time `json:"started"`
	Next    int       `json:"next"`
	Totals  Progress  `json:"totals"`
	// DeadModels maps a model index to the terminal failure (errclass.DeadModel()) that ended it.
	DeadModels map[int]string `json:"dead_models,omitempty"`
	// Answered holds the models that answered in a finished pass: a refused connection to them is an outage.
	Answered map[int]bool `json:"answered,omitempty"`
	// Stopped is why the run stopped early (on_error=raise, budget), "" otherwise; StopClass is the error class
	// of the cells it leaves unrun.
	Stopped   string `json:"stopped,omitempty"`
	StopClass string `json:"stop_class,omitempty"`
}

// Progress is where a run stands, as far as the workflow knows: cells of finished passes only (running passes
// report theirs in their heartbeats).
type Progress struct {
	RunID         string `json:"run_id"`
	Cells         int    `json:"cells"`
	Passes        int    `json:"passes"`
	PassesDone    int    `json:"passes_done"`
	PassesRunning int    `json:"passes_running"`
	CellsDone     int    `json:"cells_done"`
	Failed        int    `json:"failed"`
	Retried       int    `json:"retried"`
	// Cached counts the cells answered from the response cache; what they would have cost is SavedUSD.
	Cached int `json:"cached"`
	usage.Usage
	Stopped string `json:"stopped,omitempty"`
	// Outages are the running passes whose model's provider is down (its breaker open), by pass, as the passes
	// last signalled.
	Outages []activities.Outage `json:"outages,omitempty"`
	// Batches are the provider batches of the run's batch passes, by key.
	Batches []BatchProgress `json:"batches,omitempty"`
}

// Result is what a finished run returns.
type Result struct {
	RunID     string          `json:"run_id"`
	OutputDir string          `json:"output_dir"`
	Summary   results.Summary `json:"summary"`
	Stopped   string          `json:"stopped,omitempty"`
}

// ExperimentWorkflow runs an experiment grid. See the package doc.
func ExperimentWorkflow(ctx workflow.Context, in Input) (Result, error) {
	r := &runner{in: in, runID: in.RunID}
	if r.runID == "" {
		r.runID = workflow.GetInfo(ctx).WorkflowExecution.ID
	}
	return r.run(ctx)
}

type runner struct {
	in    Input
	runID string
	// plan is what PrepareRun decided about the spec, read back from history on replay.
	plan    activities.Plan
	passes  []experiment.Pass
	state   State
	running int
	// runningByModel counts passes in flight per model index, for the limit shares.
	runningByModel map[int]int
	// runningPass holds the passes in flight: outage news of any other pass (a stale attempt's, or one signalled
	// to this run after continue-as-new) is dropped.
	runningPass map[int]bool
	// outages holds the running passes whose provider is down, in pass order (activities.SignalOutage). A slice,
	// not a map: workflow code iterates it.
	outages []activities.Outage
	// batches are the provider batches of batch passes, by "pass/chunk" (see runBatchPass).
	batches map[string]BatchProgress
	// batchKeys are the keys of batches in order: workflow code iterates them, never the map.
	batchKeys []string
	// batchChunks counts the chunks of batch passes in flight, which a cancelled run waits for.
	batchChunks int
	// anthropicSubmitting says an Anthropic chunk is being submitted: the next waits (see submitAnthropic).
	anthropicSubmitting bool
	// anthropicBatches are the ids of the Anthropic batches the run adopted, in the order it did.
	anthropicBatches []string
}

// a is only a name for the activity methods: workflows never call through it, Temporal does, on the worker's
// registered *Activities.
var a *activities.Activities

func (r *runner) run(ctx workflow.Context) (Result, error) {
	log := workflow.GetLogger(ctx)
	r.runningByModel = make(map[int]int)
	r.runningPass = make(map[int]bool)
	// Decoding, validating and planning the spec happen in an activity, never in workflow code: its result is
	// recorded, so a later release that validates or plans differently cannot change a running workflow's replay.
	// After continue-as-new the input holds no spec and PrepareRun reads the saved one.
	prep := activities.PrepareInput{RunID: r.runID}
	if r.in.State == nil {
		prep.Spec = r.in.Spec
		prep.RetryFailed = r.in.RetryFailed
		prep.SpecDigest = r.in.SpecDigest
	}
	if err := workflow.ExecuteActivity(prepareCtx(ctx), a.PrepareRun, prep).Get(ctx, &r.plan); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == errclass.InvalidSpec {
			// The run's own failure says what is wrong with the spec, as `starter validate` would.
			return Result{}, temporal.NewNonRetryableApplicationError(app.Message(), errclass.InvalidSpec, nil)
		}
		return Result{}, fmt.Errorf("prepare run: %w", err)
	}
	r.passes = r.plan.Passes
	if r.in.State != nil {
		r.state = *r.in.State
	} else {
		r.state = State{Started: workflow.Now(ctx)}
		r.state.Totals = Progress{RunID: r.runID, Cells: r.plan.Cells, Passes: len(r.passes)}
	}
	if r.state.DeadModels == nil {
		r.state.DeadModels = make(map[int]string)
	}
	if r.state.Answered == nil {
		r.state.Answered = make(map[int]bool)
	}
	if err := workflow.SetQueryHandler(ctx, QueryProgress, func() (Progress, error) { return r.progress(), nil }); err != nil {
		return Result{}, err
	}
	if err := workflow.SetQueryHandler(ctx, activities.QueryShare, func(pass int) (activities.Share, error) {
		if pass < 0 || pass >= len(r.passes) {
			return activities.Share{}, fmt.Errorf("no pass %d", pass)
		}
		return r.share(r.passes[pass].Model), nil
	}); err != nil {
		return Result{}, err
	}
	outageCh := workflow.GetSignalChannel(ctx, activities.SignalOutage)
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			var o activities.Outage
			if !outageCh.Receive(gctx, &o) {
				return
			}
			if r.runningPass[o.Pass] || !o.State.Open {
				r.setOutage(o)
				r.details(gctx)
			}
		}
	})
	r.details(ctx)

	maxPar := max(1, r.plan.Run.MaxParallelPasses)
	launched := 0
	continueAsNew := false
	for r.state.Next < len(r.passes) && r.state.Stopped == "" {
		if err := workflow.Await(ctx, func() bool { return r.running < maxPar || r.state.Stopped != "" }); err != nil {
			return Result{}, r.cancelled(ctx, err)
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
				return Result{}, err
			}
			r.passDone(ctx, activities.PassResult{Pass: p.Index, Cells: p.Len(), Done: f.Recorded, Failed: f.Recorded,
				Usage: usage.Usage{CostUSD: f.CostUSD}})
			continue
		}
		r.running++
		r.runningByModel[p.Model]++
		r.runningPass[p.Index] = true
		sh := r.share(p.Model)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer func() {
				r.running--
				r.runningByModel[p.Model]--
				delete(r.runningPass, p.Index)
				r.setOutage(activities.Outage{Pass: p.Index})
			}()
			if r.plan.Models[p.Model].Batch.Mode == experiment.BatchBatch {
				r.runBatchPass(gctx, p, sh)
				return
			}
			r.runPass(gctx, p, sh)
		})
	}
	if err := workflow.Await(ctx, func() bool { return r.running == 0 }); err != nil {
		return Result{}, r.cancelled(ctx, err)
	}
	if continueAsNew && r.state.Stopped == "" {
		st := r.state
		next := Input{RunID: r.runID, Output: r.in.Output, State: &st}
		return Result{}, workflow.NewContinueAsNewError(ctx, ExperimentWorkflow, next)
	}
	if r.state.Stopped != "" {
		// on_error=raise or the budget: passes not started are cancelled, and started passes stopped
		// dispatching; every cell without a result is recorded so the output has every cell.
		if _, err := r.failRange(ctx, 0, r.plan.Cells, r.state.StopClass, "not run: "+r.state.Stopped); err != nil {
			return Result{}, err
		}
	}
	var out activities.ExportOutput
	err := workflow.ExecuteActivity(exportCtx(ctx), a.ExportResults, activities.ExportInput{
		RunID: r.runID, Dir: r.in.Output, Elapsed: workflow.Now(ctx).Sub(r.state.Started),
	}).Get(ctx, &out)
	if err != nil {
		return Result{}, fmt.Errorf("export results: %w", err)
	}
	if n := out.Summary.Failed; n > 0 && r.plan.Run.OnError != experiment.OnErrorIgnore {
		log.Warn(fmt.Sprintf("%d of %d model calls failed", n, out.Summary.Cells), "errors", out.Summary.Errors)
	}
	return Result{RunID: r.runID, OutputDir: out.Dir, Summary: out.Summary, Stopped: r.state.Stopped}, nil
}

// runPass runs one pass to its end: success, or failure after Temporal's retries, in which case every unfinished
// cell is recorded with the last reason.
func (r *runner) runPass(ctx workflow.Context, p experiment.Pass, sh activities.Share) {
	m := r.plan.Models[p.Model]
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: 24 * time.Hour,
		HeartbeatTimeout:    5 * time.Second,
		Summary: fmt.Sprintf("pass %d: %s seed %d, cells %d-%d", p.Index, m.ID, r.plan.Seeds[p.Seed],
			p.Start, p.End-1),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    activities.InitialRetryInterval,
			BackoffCoefficient: 2,
			MaximumInterval:    activities.MaxRetryInterval,
			// Unlimited: run.max_attempts bounds the tries of each cell inside the pass, and a pass that stops
			// making progress gives itself up after run.stall_timeout (see activities.RunSeedPass). A provider
			// outage is waited out inside the attempt; an attempt ends early only when its worker dies or stops
			// or the store fails, and this policy backs those off.
			MaximumAttempts:        0,
			NonRetryableErrorTypes: errclass.NonRetryable(),
		},
	}
	var res activities.PassResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.RunSeedPass,
		activities.PassInput{RunID: r.runID, Pass: p, Limits: sh.Limits, Budgeted: sh.Budgeted, BudgetUSD: sh.BudgetUSD,
			ModelAnswered: r.state.Answered[p.Model]}).Get(ctx, &res)
	if err == nil {
		if res.OK+res.Unparsed > 0 {
			r.state.Answered[p.Model] = true
		}
		r.passDone(ctx, res)
		switch {
		case r.state.Stopped != "":
		case res.BudgetExhausted:
			r.stop(errclass.BudgetExhausted, fmt.Sprintf("budget_usd $%.2f reached (spent $%.4f)", r.plan.BudgetUSD, r.state.Totals.CostUSD))
		case res.Failed > 0 && r.plan.Run.OnError == experiment.OnErrorRaise:
			r.stop(errclass.Skipped, fmt.Sprintf("on_error=raise: cell %d failed (%s)", res.FirstFailure, res.FirstError))
		}
		return
	}
	if ctx.Err() != nil {
		return // the workflow is being cancelled
	}
	class, msg := classOf(err)
	if slices.Contains(errclass.DeadModel(), class) {
		// The activity recorded the pass's cells; every later pass of this model would fail the same way.
		r.state.DeadModels[p.Model] = fmt.Sprintf("model %s: %s: %s", m.ID, class, msg)
	}
	f, ferr := r.failRange(ctx, p.Start, p.End, class, msg)
	if ferr != nil {
		workflow.GetLogger(ctx).Error("recording unfinished cells failed", "pass", p.Index, "error", ferr)
	}
	// The pass's finished cells are not in a PassResult: count them from the store, so budget shares stay honest.
	r.passDone(ctx, activities.PassResult{Pass: p.Index, Cells: p.Len(), Done: f.Recorded, Failed: f.Recorded,
		Usage: usage.Usage{CostUSD: f.CostUSD}})
	if r.plan.Run.OnError == experiment.OnErrorRaise && r.state.Stopped == "" {
		r.stop(errclass.Skipped, fmt.Sprintf("on_error=raise: pass %d failed (%s: %s)", p.Index, class, msg))
	}
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
		return "Timeout", to.Error()
	}
	return "Failed", err.Error()
}

// failRange records the cells of [start, end) that have no result as failed.
func (r *runner) failRange(ctx workflow.Context, start, end int, class, msg string) (activities.FailOutput, error) {
	var out activities.FailOutput
	err := workflow.ExecuteActivity(shortCtx(ctx), a.FailUnfinished, activities.FailInput{
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
func (r *runner) share(model int) activities.Share {
	m := r.plan.Models[model]
	maxPar := max(1, r.plan.Run.MaxParallelPasses)
	remaining, remainingAll := 0, 0
	for _, p := range r.passes[r.state.Next:] {
		remainingAll++
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
	sh := activities.Share{Limits: ratelimit.Limits{Concurrency: conc, RPM: part(m.RPM), TPM: part(m.TPM), Burst: m.Burst}}
	if r.plan.BudgetUSD > 0 {
		nb := max(1, min(maxPar, r.running+remainingAll))
		sh.Budgeted = true
		sh.BudgetUSD = max(0, r.plan.BudgetUSD-r.state.Totals.CostUSD) / float64(nb)
	}
	return sh
}

func (r *runner) passDone(ctx workflow.Context, res activities.PassResult) {
	t := &r.state.Totals
	t.PassesDone++
	t.CellsDone += res.Done
	t.Failed += res.Failed
	t.Retried += res.Retried
	t.Cached += res.Cached
	t.Add(res.Usage)
	r.details(ctx)
}

func (r *runner) progress() Progress {
	p := r.state.Totals
	p.RunID = r.runID
	p.PassesRunning = r.running
	p.Stopped = r.state.Stopped
	p.Outages = slices.Clone(r.outages)
	p.Batches = r.batchList()
	return p
}

// setOutage records what a pass said of its provider: down (kept in pass order) or up (forgotten).
func (r *runner) setOutage(o activities.Outage) {
	i, found := slices.BinarySearchFunc(r.outages, o.Pass, func(x activities.Outage, pass int) int { return x.Pass - pass })
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
	seen := map[string]bool{}
	for _, o := range r.outages {
		if seen[o.Model] {
			continue
		}
		seen[o.Model] = true
		d += fmt.Sprintf(" · %s: provider down since %s UTC (%s), next probe at %s UTC, no cell charged", o.Model,
			o.State.Since.UTC().Format(time.TimeOnly), o.State.Cause, o.State.NextProbe.UTC().Format(time.TimeOnly))
	}
	for _, b := range r.batchList() {
		d += fmt.Sprintf("\n%s: batch %s %s, %d of %d done, expires %s", b.Model, b.ID, b.Status, b.Done, b.Total,
			b.ExpiresAt.UTC().Format("15:04"))
	}
	workflow.SetCurrentDetails(ctx, d)
}

// batchList is the run's batches in key order.
func (r *runner) batchList() []BatchProgress {
	out := make([]BatchProgress, len(r.batchKeys))
	for i, k := range r.batchKeys {
		out[i] = r.batches[k]
	}
	return out
}

// prepareCtx runs PrepareRun: an invalid spec fails at once (non-retryable), a store that is down is retried.
func prepareCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		Summary:             "decode, validate and plan the spec",
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{errclass.InvalidSpec}},
	})
}

func shortCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 20},
	})
}

func exportCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    activities.ExportHeartbeatTimeout,
		Summary:             "export results",
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 10},
	})
}
