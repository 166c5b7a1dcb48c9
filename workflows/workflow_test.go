package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// gridSpec is a valid spec of models × seeds × items × personas.
func gridSpec(models, seeds, items, personas int) experiment.Spec {
	return experimenttest.Grid(models, seeds, items, personas, experimenttest.Model(func(_ int, m *experiment.Model) {
		m.Provider, m.RPM, m.TPM, m.MaxConcurrency = "sim", 600, 60000, 8
	}), experimenttest.Edit(func(s *experiment.Spec) { s.Run.MaxAttempts = 3 }))
}

// passMock stands in for RunSeedPass and records the order and overlap of passes.
type passMock struct {
	env     *testsuite.TestWorkflowEnvironment
	mu      sync.Mutex
	started []int
	// scheduled maps a pass to its activity id, which grows in the order the workflow scheduled them.
	scheduled map[int]int
	limits    map[int]ratelimit.Limits
	budgets   map[int]usage.USD
	running   int
	peak      int
	// barrier, when set, holds every pass until that many run at once (or 10 s pass), once: it makes the
	// overlap of passes certain instead of a matter of timing.
	barrier  int
	released bool
	// fail decides a pass's outcome: a result with failures, or an error.
	fail func(p experiment.Pass) (wire.PassResult, error)
}

func (m *passMock) run(ctx context.Context, in wire.PassInput) (wire.PassResult, error) {
	id, _ := strconv.Atoi(activity.GetInfo(ctx).ActivityID)
	m.mu.Lock()
	m.started = append(m.started, in.Pass.Index)
	if m.scheduled == nil {
		m.scheduled = make(map[int]int)
	}
	if _, ok := m.scheduled[in.Pass.Index]; !ok {
		m.scheduled[in.Pass.Index] = id
	}
	if m.limits == nil {
		m.limits = make(map[int]ratelimit.Limits)
	}
	m.limits[in.Pass.Index] = in.Limits
	if in.Budgeted {
		if m.budgets == nil {
			m.budgets = make(map[int]usage.USD)
		}
		m.budgets[in.Pass.Index] = in.BudgetUSD
	}
	m.running++
	m.peak = max(m.peak, m.running)
	m.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); m.barrier > 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		m.mu.Lock()
		if m.running >= m.barrier {
			m.released = true
		}
		done := m.released
		m.mu.Unlock()
		if done {
			break
		}
	}
	time.Sleep(2 * time.Millisecond) // let other passes start, if the workflow allows them
	m.mu.Lock()
	m.running--
	m.mu.Unlock()
	if m.fail != nil {
		return m.fail(in.Pass)
	}
	return wire.PassResult{Pass: in.Pass.Index, Cells: in.Pass.Len(), Done: in.Pass.Len(), OK: in.Pass.Len(), FirstFailure: -1}, nil
}

type failCall struct {
	in wire.FailInput
}

// input is the workflow input that starts a run of spec.
func input(t *testing.T, spec experiment.Spec, runID string) wire.Input {
	t.Helper()
	in, err := wire.NewInput(&spec, runID, "")
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// tempStore is a results store for the real PrepareRun of a test.
func tempStore(t *testing.T) *store.SQLite {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// a names the activity methods for the mocks; the workflow schedules them by their handles' names in wire, under
// which activities.Register registers them.
var a *activities.Activities

func newEnv(t *testing.T, m *passMock) (*testsuite.TestWorkflowEnvironment, *[]failCall) {
	t.Helper()
	return newEnvStore(t, m, tempStore(t))
}

// newEnvStore is newEnv whose PrepareRun (the real one) saves specs in st, so that a continued run finds them.
func newEnvStore(t *testing.T, m *passMock, st *store.SQLite) (*testsuite.TestWorkflowEnvironment, *[]failCall) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	m.env = env
	fails := mockRun(env, st)
	env.OnActivity(a.RunSeedPass, mockAny, mockAny).Return(m.run)
	return env, fails
}

// mockRun registers the activities with env: the real PrepareRun, which saves specs in st, and mocks of
// FailUnfinished (which keeps what it is asked) and ExportResults.
func mockRun(env *testsuite.TestWorkflowEnvironment, st *store.SQLite) *[]failCall {
	var fails []failCall
	var mu sync.Mutex
	activities.Register(env, a)
	env.OnActivity(a.PrepareRun, mockAny, mockAny).Return((&activities.Activities{Store: st}).PrepareRun)
	env.OnActivity(a.FailUnfinished, mockAny, mockAny).Return(func(_ context.Context, in wire.FailInput) (wire.FailOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		fails = append(fails, failCall{in})
		return wire.FailOutput{Recorded: in.End - in.Start}, nil
	})
	env.OnActivity(a.ExportResults, mockAny, mockAny).Return(func(_ context.Context, in wire.ExportInput) (wire.ExportOutput, error) {
		return wire.ExportOutput{Dir: "out/" + in.RunID}, nil
	})
	return &fails
}

var mockAny = mock.Anything

func TestPassesInSubmissionOrderWithinTheBound(t *testing.T) {
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("max_parallel_passes=", par), func(t *testing.T) {
			m := &passMock{barrier: par}
			env, _ := newEnv(t, m)
			spec := gridSpec(3, 2, 4, 3)
			spec.Run.MaxParallelPasses = par
			env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, "r1"))
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if len(m.started) != 6 {
				t.Fatalf("started %d passes, want 6", len(m.started))
			}
			for p := 1; p < 6; p++ {
				if m.scheduled[p] <= m.scheduled[p-1] {
					t.Fatalf("passes scheduled as %v (pass: activity id), want submission order", m.scheduled)
				}
			}
			if m.peak != par {
				t.Errorf("%d passes ran at once, want exactly the bound %d (the barrier holds the first %d together)", m.peak, par, par)
			}
			var res wire.Result
			if err := env.GetWorkflowResult(&res); err != nil || res.RunID != "r1" {
				t.Fatalf("result %+v, %v", res, err)
			}
		})
	}
}

func TestLimitSharesNeverExceedTheModel(t *testing.T) {
	m := &passMock{}
	env, _ := newEnv(t, m)
	spec := gridSpec(1, 4, 2, 2) // one model, four passes
	spec.Run.MaxParallelPasses = 4
	spec.Run.MaxConcurrency = 16
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, ""))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var rpm, tpm, conc int
	for _, l := range m.limits {
		rpm += l.RPM
		tpm += l.TPM
		conc += l.Concurrency
	}
	if rpm > 600 || tpm > 60000 || conc > 8 {
		t.Errorf("shares add up to rpm %d tpm %d concurrency %d; model allows 600, 60000, 8", rpm, tpm, conc)
	}
	if rpm < 600-4 {
		t.Errorf("shares waste the limit: rpm %d of 600", rpm)
	}

	// Shares grow as passes finish, and a running pass picks its grown share up, keeping the largest it saw.
	// Whenever passes start and finish, the largest shares of the passes running then must add up to at most
	// the model's limits.
	spec = gridSpec(1, 6, 2, 2) // one model, six passes, four at once
	spec.Run.MaxParallelPasses = 4
	spec.Run.MaxConcurrency = 16
	plan, err := (&activities.Activities{Store: tempStore(t)}).PrepareRun(context.Background(),
		wire.PrepareInput{RunID: "r", Spec: input(t, spec, "").Spec})
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{plan: plan, passes: plan.Passes, runningByModel: map[int]int{}}
	held := map[int]ratelimit.Limits{} // by running pass: the largest share it saw
	grew := false
	check := func(when string) {
		now := r.share(0).Limits
		var sum ratelimit.Limits
		for p, l := range held {
			if now.RPM > l.RPM || now.TPM > l.TPM || now.Concurrency > l.Concurrency {
				grew = grew || l != (ratelimit.Limits{})
				l.RPM, l.TPM, l.Concurrency = max(l.RPM, now.RPM), max(l.TPM, now.TPM), max(l.Concurrency, now.Concurrency)
				held[p] = l
			}
			sum.RPM += held[p].RPM
			sum.TPM += held[p].TPM
			sum.Concurrency += held[p].Concurrency
		}
		if sum.RPM > 600 || sum.TPM > 60000 || sum.Concurrency > 8 {
			t.Errorf("%s: %d running passes hold shares adding up to rpm %d tpm %d concurrency %d; model allows 600, 60000, 8",
				when, len(held), sum.RPM, sum.TPM, sum.Concurrency)
		}
	}
	for finished := 0; finished < len(r.passes); {
		for r.running < spec.Run.MaxParallelPasses && r.state.Next < len(r.passes) {
			p := r.passes[r.state.Next]
			r.state.Next++
			r.running++
			r.runningByModel[p.Model]++
			held[p.Index] = ratelimit.Limits{}
			check(fmt.Sprintf("pass %d started", p.Index))
		}
		delete(held, finished)
		r.running--
		r.runningByModel[0]--
		check(fmt.Sprintf("pass %d finished", finished))
		finished++
	}
	if !grew {
		t.Error("no running pass's share grew as passes finished: the check above saw no grown share")
	}
}

func TestRaiseStopsAtTheFirstFailedPass(t *testing.T) {
	m := &passMock{fail: func(p experiment.Pass) (wire.PassResult, error) {
		r := wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: p.Len(), OK: p.Len(), FirstFailure: -1}
		if p.Index == 1 {
			r.OK--
			r.Failed = 1
			r.FirstFailure = p.Start + 3
			r.FirstError = "InvalidRequest: bad"
		}
		return r, nil
	}}
	env, fails := newEnv(t, m)
	spec := gridSpec(2, 3, 2, 2)
	spec.Run.OnError = experiment.OnErrorRaise
	spec.Run.MaxParallelPasses = 1
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, ""))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(m.started) != 2 {
		t.Fatalf("passes started %v, want [0 1] (raise cancels passes not started)", m.started)
	}
	var res wire.Result
	_ = env.GetWorkflowResult(&res)
	if res.Stopped == "" {
		t.Error("result does not say the run stopped")
	}
	if len(*fails) != 1 || (*fails)[0].in.Class != errclass.Skipped || (*fails)[0].in.End != spec.NumCells() {
		t.Errorf("cells not run must be recorded as skipped, got %+v", *fails)
	}
}

func TestWarnAndIgnoreRunEveryPass(t *testing.T) {
	for _, mode := range []string{experiment.OnErrorWarn, experiment.OnErrorIgnore} {
		t.Run(mode, func(t *testing.T) {
			m := &passMock{fail: func(p experiment.Pass) (wire.PassResult, error) {
				return wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: p.Len(), Failed: 1, FirstFailure: p.Start}, nil
			}}
			env, fails := newEnv(t, m)
			spec := gridSpec(2, 2, 2, 2)
			spec.Run.OnError = mode
			env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, ""))
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if len(m.started) != 4 || len(*fails) != 0 {
				t.Errorf("started %v, fail calls %d; want all 4 passes, none skipped", m.started, len(*fails))
			}
		})
	}
}

func TestRetriesUntilThePassGivesItselfUp(t *testing.T) {
	attempts := 0
	m := &passMock{fail: func(p experiment.Pass) (wire.PassResult, error) {
		if p.Index != 1 {
			return wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: p.Len(), OK: p.Len(), FirstFailure: -1}, nil
		}
		attempts++
		if attempts < 8 { // the test environment stops unlimited retries at 10
			// More attempts than run.max_attempts: attempts are not what gives a pass up.
			return wire.PassResult{}, temporal.NewApplicationErrorWithOptions("429 slow down", "RateLimited",
				temporal.ApplicationErrorOptions{NextRetryDelay: 2 * time.Second})
		}
		return wire.PassResult{}, temporal.NewNonRetryableApplicationError("no cell finished for 15m0s", errclass.Stalled, nil)
	}}
	env, fails := newEnv(t, m)
	spec := gridSpec(1, 3, 2, 2)
	spec.Run.MaxAttempts = 3
	spec.Run.MaxParallelPasses = 1
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, ""))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if attempts != 8 {
		t.Errorf("pass 1 ran %d attempts, want 8 (retried until it gave itself up)", attempts)
	}
	passes := spec.Passes()
	if len(*fails) != 2 {
		t.Fatalf("FailUnfinished calls %+v, want pass 1 (Stalled) and pass 2 (skipped: its model is given up)", *fails)
	}
	if got := (*fails)[0].in; got.Start != passes[1].Start || got.End != passes[1].End || got.Class != errclass.Stalled {
		t.Errorf("recorded %+v, want cells [%d,%d) as Stalled", got, passes[1].Start, passes[1].End)
	}
	if got := (*fails)[1].in; got.Start != passes[2].Start || got.Class != errclass.Skipped ||
		!strings.Contains(got.Message, "Stalled") {
		t.Errorf("recorded %+v, want pass 2 skipped because its model stalled", got)
	}
}

func TestQuotaEndsTheModelNotTheRun(t *testing.T) {
	m := &passMock{fail: func(p experiment.Pass) (wire.PassResult, error) {
		if p.Model == 0 {
			return wire.PassResult{}, temporal.NewNonRetryableApplicationError("insufficient_quota", "QuotaExhausted", errors.New("quota"))
		}
		return wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: p.Len(), OK: p.Len(), FirstFailure: -1}, nil
	}}
	env, fails := newEnv(t, m)
	spec := gridSpec(2, 3, 2, 2)
	spec.Run.MaxParallelPasses = 1
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, ""))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// Model 0's first pass fails for good; its other two passes are skipped without a call; model 1 runs.
	sort.Ints(m.started)
	if fmt.Sprint(m.started) != "[0 3 4 5]" {
		t.Errorf("passes started %v, want [0 3 4 5]", m.started)
	}
	var skipped int
	for _, f := range *fails {
		if f.in.Class == errclass.Skipped {
			skipped++
		}
	}
	if skipped != 2 {
		t.Errorf("skipped passes recorded %d times, want 2: %+v", skipped, *fails)
	}
}

func TestContinueAsNewWhenSuggested(t *testing.T) {
	m := &passMock{}
	env, _ := newEnv(t, m)
	env.SetContinueAsNewSuggested(true)
	spec := gridSpec(1, 3, 2, 2)
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, "r"))
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("got %v, want continue-as-new", err)
	}
}

func TestInvalidSpecFailsAtOnceWithTheFileDecodersError(t *testing.T) {
	good := input(t, gridSpec(1, 1, 1, 1), "").Spec
	// A misspelt run key, beside the workflow's own control keys and numeric-string seeds.
	bad := strings.Replace(string(good), `"run":{`, `"run":{"max_concurency":4,`, 1)
	bad = strings.Replace(bad, `"seeds":[1]`, `"seeds":["1","2"]`, 1)
	bad = strings.Replace(bad, `{`, `{"run_id":"r1","output":"/tmp/x",`, 1)
	if bad == string(good) || !strings.Contains(bad, "max_concurency") || !strings.Contains(bad, `"2"]`) {
		t.Fatalf("the test's edits did not apply: %s", bad)
	}
	_, fileErr := specfile.Parse([]byte(strings.Replace(bad, `"run_id":"r1","output":"/tmp/x",`, "", 1)), "workflow input", "")
	if fileErr == nil || !strings.Contains(fileErr.Error(), `run.max_concurency: unknown key "max_concurency" (did you mean "max_concurrency"?)`) {
		t.Fatalf("the file decoder says %v; want the unknown key reported", fileErr)
	}

	m := &passMock{}
	env, _ := newEnv(t, m)
	prepared := 0
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "PrepareRun" {
			prepared++
		}
	})
	var in wire.Input
	if err := json.Unmarshal([]byte(bad), &in); err != nil {
		t.Fatal(err)
	}
	env.ExecuteWorkflow(ExperimentWorkflow, in)
	var app *temporal.ApplicationError
	err := env.GetWorkflowError()
	if !errors.As(err, &app) || app.Type() != errclass.InvalidSpec || !app.NonRetryable() {
		t.Fatalf("got %v, want a non-retryable InvalidSpec error", err)
	}
	if !strings.Contains(app.Message(), fileErr.Error()) {
		t.Errorf("workflow input error %q\ndoes not say what the file decoder says: %q", app.Message(), fileErr.Error())
	}
	if prepared != 1 || len(m.started) != 0 {
		t.Errorf("PrepareRun ran %d times and %d passes started; want 1 and none", prepared, len(m.started))
	}
}

func TestBudgetSharesAndStop(t *testing.T) {
	// Each pass spends $3; the budget is $10 over 6 passes, 2 at a time.
	m := &passMock{fail: func(p experiment.Pass) (wire.PassResult, error) {
		return wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: p.Len(), OK: p.Len(), FirstFailure: -1, Usage: usage.Usage{CostUSD: usage.Dollars(3)}}, nil
	}}
	env, fails := newEnv(t, m)
	spec := gridSpec(1, 6, 2, 2)
	spec.BudgetUSD = usage.Dollars(10)
	spec.Run.MaxParallelPasses = 2
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, ""))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// The first two passes share $10; later ones get half of what finished passes left.
	if m.budgets[0] != usage.Dollars(5) || m.budgets[1] != usage.Dollars(5) {
		t.Errorf("first budget shares %v, want $5 each", m.budgets)
	}
	for p, b := range m.budgets {
		if b < 0 || b > usage.Dollars(5) {
			t.Errorf("pass %d got a budget share of $%v", p, b)
		}
	}
	if len(*fails) != 0 {
		t.Errorf("no pass reported the budget exhausted, yet cells were recorded: %+v", *fails)
	}

	// A pass that reports the budget exhausted stops the run; the cells not run are BudgetExhausted.
	m = &passMock{fail: func(p experiment.Pass) (wire.PassResult, error) {
		return wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: p.Len(), Failed: 1, FirstFailure: p.Start,
			BudgetExhausted: true, Usage: usage.Usage{CostUSD: usage.Dollars(5)}}, nil
	}}
	env, fails = newEnv(t, m)
	spec.Run.MaxParallelPasses = 1
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, ""))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	_ = env.GetWorkflowResult(&res)
	if len(m.started) != 1 || res.Stopped == "" || len(*fails) != 1 || (*fails)[0].in.Class != errclass.BudgetExhausted {
		t.Errorf("started %v, stopped %q, fail calls %+v; want one pass, then every cell left BudgetExhausted", m.started, res.Stopped, *fails)
	}
}

func TestLargeGridStaysInsideTemporalLimits(t *testing.T) {
	// 2 models × 10 seeds × 100 items × 100 personas = 200,000 cells.
	spec := gridSpec(2, 10, 100, 100)
	b, err := json.Marshal(input(t, spec, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 512<<10 {
		t.Errorf("the workflow input is %d bytes; Temporal warns above 512 KiB", len(b))
	}
	passes := spec.Passes()
	cells := 0
	for _, p := range passes {
		if p.Len() > experiment.DefaultChunkSize {
			t.Fatalf("pass %d has %d cells, more than the chunk size", p.Index, p.Len())
		}
		cells += p.Len()
	}
	if cells != 200000 || len(passes) != 40 {
		t.Fatalf("%d passes over %d cells, want 40 over 200,000", len(passes), cells)
	}

	// A run with more passes than one workflow run launches continues as new, carrying where it stands.
	m := &passMock{}
	st := tempStore(t)
	env, _ := newEnvStore(t, m, st)
	many := gridSpec(1, passesPerRun+20, 1, 1)
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, many, "big"))
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("got %v, want continue-as-new after %d passes", err, passesPerRun)
	}
	var next wire.Input
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if hasSpec := len(next.Spec) > 0 && string(next.Spec) != "null"; hasSpec {
		var obj map[string]json.RawMessage
		_ = json.Unmarshal(next.Spec, &obj)
		if _, ok := obj["questionnaire"]; ok {
			t.Errorf("the continued run's input carries the spec again (%d bytes); it must read it from the store", len(next.Spec))
		}
	}
	if next.State == nil || next.State.Next != passesPerRun || next.State.Totals.PassesDone != passesPerRun || next.RunID != "big" {
		t.Fatalf("carried state %+v (run %q), want %d passes done and the same run id", next.State, next.RunID, passesPerRun)
	}

	// The continued run launches only the rest and finishes.
	m2 := &passMock{}
	env2, _ := newEnvStore(t, m2, st)
	env2.ExecuteWorkflow(ExperimentWorkflow, next)
	if err := env2.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(m2.started) != 20 {
		t.Errorf("the continued run started %d passes, want the remaining 20", len(m2.started))
	}
}

// The outages the passes signal are kept in pass order, replaced by later news, and forgotten when the provider
// is back; the progress query returns them.
func TestOutagesInPassOrder(t *testing.T) {
	r := &runner{runningPass: map[int]bool{1: true, 2: true, 3: true}}
	down := func(pass, step int) wire.Outage {
		return wire.Outage{Pass: pass, Model: "m0", State: breaker.State{Open: true, Step: step}}
	}
	r.setOutage(down(3, 0))
	r.setOutage(down(1, 0))
	r.setOutage(down(2, 0))
	r.setOutage(down(3, 2))
	r.setOutage(wire.Outage{Pass: 2}) // pass 2's provider answered again
	r.setOutage(wire.Outage{Pass: 7}) // news of a pass never down changes nothing
	got := r.progress().Outages
	if len(got) != 2 || got[0].Pass != 1 || got[1].Pass != 3 || got[1].State.Step != 2 {
		t.Fatalf("outages %+v, want passes 1 and 3 (step 2), in that order", got)
	}
	got[0].Pass = 99
	if r.outages[0].Pass != 1 {
		t.Error("the progress query shares the runner's slice")
	}
}

// TestPauseLaunchesNothingUntilResumed pauses a run of six passes, one at a time, as it starts: no pass starts
// while it is paused (an hour and another hour of workflow time), the progress query and the Web UI's details say
// who paused it, and once resumed the run launches the rest and completes.
func TestPauseLaunchesNothingUntilResumed(t *testing.T) {
	m := &passMock{}
	env, _ := newEnv(t, m)
	spec := gridSpec(1, 6, 2, 2)
	spec.Run.MaxParallelPasses = 1
	started := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.started)
	}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(wire.SignalPause, wire.Pause{Paused: true, By: "starter pause on test"})
	}, 0)
	var atPause, anHourLater int
	resumed := false
	var progress wire.Progress
	env.RegisterDelayedCallback(func() {
		atPause = started()
		v, err := env.QueryWorkflow(wire.QueryProgress)
		if err != nil {
			t.Errorf("query progress: %v", err)
			return
		}
		if err := v.Get(&progress); err != nil {
			t.Error(err)
		}
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		anHourLater, resumed = started(), true
		env.SignalWorkflow(wire.SignalPause, wire.Pause{Paused: false})
	}, 2*time.Hour)
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, "r-paused"))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if !resumed {
		t.Fatalf("the run ended before it was resumed (%d passes started): the pause held nothing back", started())
	}
	// The pause may be read after the first pass was launched, never later: one pass at most before it.
	if atPause > 1 || anHourLater != atPause {
		t.Errorf("passes started: %d when paused, %d an hour later; want at most 1, and none while paused", atPause, anHourLater)
	}
	if progress.Paused == nil || progress.Paused.By != "starter pause on test" {
		t.Errorf("progress while paused: %+v, want Paused by the signal's sender", progress.Paused)
	}
	if n := started(); n != 6 {
		t.Errorf("%d passes started in all, want 6 once resumed", n)
	}
	var res wire.Result
	if err := env.GetWorkflowResult(&res); err != nil || res.RunID != "r-paused" {
		t.Fatalf("result %+v, %v", res, err)
	}
}

// TestBudgetMessageShowsEveryDigit: a budget of $0.007 stopped after $0.004773 says those amounts, where it said
// "$0.01" and "spent $0.0048" (and "$0.0000" below half a hundredth of a cent).
func TestBudgetMessageShowsEveryDigit(t *testing.T) {
	m := &passMock{fail: func(p experiment.Pass) (wire.PassResult, error) {
		return wire.PassResult{Pass: p.Index, Cells: p.Len(), Done: p.Len(), OK: p.Len(), FirstFailure: -1,
			BudgetExhausted: true, Usage: usage.Usage{CostUSD: usage.Dollars(0.004773)}}, nil
	}}
	env, _ := newEnv(t, m)
	spec := gridSpec(1, 2, 2, 2)
	spec.BudgetUSD = usage.Dollars(0.007)
	spec.Run.MaxParallelPasses = 1
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, ""))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if want := "budget_usd $0.007 reached (spent $0.004773)"; res.Stopped != want {
		t.Errorf("stopped %q, want %q", res.Stopped, want)
	}
}
