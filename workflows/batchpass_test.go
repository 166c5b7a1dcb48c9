package workflows

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
)

// simSpec is gridSpec on a simulator at url, priced, with the response cache off (so two runs of one store do
// not answer each other).
func simSpec(url string, batchMode bool) experiment.Spec {
	s := gridSpec(1, 2, 4, 5)
	s.Models[0].Provider, s.Models[0].BaseURL, s.Models[0].Name = "openai", url+"/v1", "sim-chat"
	s.Models[0].Price = &experiment.Price{InputPerMTok: 1, OutputPerMTok: 2}
	s.Run.Cache = experiment.CacheOff
	s.Run.ChunkSize = 5 // a synchronous pass of 20 cells is 4 passes; a batch pass is never chunked by it
	if batchMode {
		s.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: 7}
	}
	return s
}

// TestBatchRunSameCellsAtHalfPrice runs a spec through ExperimentWorkflow with the real activities, once
// synchronously and once in batch mode, against one simulator: the batch run has the same cell columns at half
// the cost, one batch per chunk, and its passes are its (model, seed)s.
func TestBatchRunSameCellsAtHalfPrice(t *testing.T) {
	s, err := sim.New(sim.Config{Batch: sim.BatchConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	st := tempStore(t)
	acts := &activities.Activities{Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond}

	runOnce := func(spec experiment.Spec, id string) Result {
		t.Helper()
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterActivity(acts)
		env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, id))
		if err := env.GetWorkflowError(); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		var res Result
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	syncSpec, batchSpec := simSpec(srv.URL, false), simSpec(srv.URL, true)
	if n := len(batchSpec.Passes()); n != 2 {
		t.Fatalf("batch spec has %d passes, want one per seed", n)
	}
	syncRes := runOnce(syncSpec, "sync-run")
	if n := len(s.Batches()); n != 0 {
		t.Fatalf("the synchronous run made %d batches", n)
	}
	batchRes := runOnce(batchSpec, "batch-run")

	// Two passes of 20 cells, chunks of 7, 7 and 6: six batches, each chunk once.
	bs := s.Batches()
	if len(bs) != 6 {
		t.Errorf("%d batches, want 6", len(bs))
	}
	seen := map[string]int{}
	for _, b := range bs {
		for _, id := range b.Ran {
			seen[id]++
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("cell %s ran %d times", id, n)
		}
	}
	if len(seen) != 40 {
		t.Errorf("%d cells ran in batches, want 40", len(seen))
	}

	recs := func(run string) []store.Record {
		r, err := st.Records(context.Background(), run, 0, 40)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sr, br := recs("sync-run"), recs("batch-run")
	if len(sr) != 40 || len(br) != 40 {
		t.Fatalf("%d sync and %d batch records, want 40 each", len(sr), len(br))
	}
	for i := range sr {
		a, b := sr[i], br[i]
		if a.Status != b.Status || a.OptionID != b.OptionID || a.Raw != b.Raw || a.PromptTokens != b.PromptTokens ||
			a.CompletionTokens != b.CompletionTokens || math.Abs(b.CostUSD-a.CostUSD/2) > 1e-12 {
			t.Errorf("cell %d: sync %+v, batch %+v", i, a, b)
		}
	}
	if syncRes.Summary.Failed != 0 || batchRes.Summary.Failed != 0 || batchRes.Summary.Cells != 40 {
		t.Errorf("summaries: sync %+v, batch %+v", syncRes.Summary, batchRes.Summary)
	}
	if got, want := batchRes.Summary.CostUSD, syncRes.Summary.CostUSD/2; math.Abs(got-want) > 1e-9 || want == 0 {
		t.Errorf("batch run cost %g, want half of %g", got, syncRes.Summary.CostUSD)
	}
}

type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestBatchRunCancel: cancelling a run cancels its provider batches and records what they completed.
func TestBatchRunCancel(t *testing.T) {
	clk := &stepClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s, err := sim.New(sim.Config{Now: clk.Now, Batch: sim.BatchConfig{ProcessingTime: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	st := tempStore(t)
	acts := &activities.Activities{Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir()}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(acts)
	env.RegisterDelayedCallback(func() {
		clk.Advance(30 * time.Minute) // half of every batch has run
		env.CancelWorkflow()
	}, 20*time.Minute)
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, simSpec(srv.URL, true), "cancelled-run"))
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error %v, want cancelled", err)
	}
	bs := s.Batches()
	if len(bs) != 6 {
		t.Fatalf("%d batches, want 6", len(bs))
	}
	ran := 0
	for _, b := range bs {
		if b.Status != "cancelled" {
			t.Errorf("batch %s is %s, want cancelled", b.ID, b.Status)
		}
		ran += len(b.Ran)
	}
	recs, err := st.Records(context.Background(), "cancelled-run", 0, 40)
	if err != nil {
		t.Fatal(err)
	}
	if ran != 18 || len(recs) != ran {
		t.Errorf("%d cells ran before the cancel and %d are recorded, want 18 of each", ran, len(recs))
	}
	for _, r := range recs {
		if r.Status == store.StatusFailed {
			t.Errorf("record %+v: a completed cell recorded failed", r)
		}
	}
}

// TestBatchRunReservesTheBudget: before each submission the batch's worst-case cost (every prompt, the longest
// completion, at the batch price) is reserved against the pass's share of budget_usd. With a budget that covers
// each pass's first chunk and half its second, one batch per pass is sent, the others never are, the run stops
// with the budget exhausted, its other cells are recorded so, and the run costs less than its budget.
func TestBatchRunReservesTheBudget(t *testing.T) {
	s, err := sim.New(sim.Config{Batch: sim.BatchConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	tok, err := llm.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	st := tempStore(t)
	acts := &activities.Activities{Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		Tokenizer: tok, OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond}
	spec := simSpec(srv.URL, true)
	spec.Models[0].Params.MaxTokens = 20
	m := spec.Models[0]
	price, ok := llm.BatchPriceFor(m)
	if !ok {
		t.Fatal("the model has no batch price")
	}
	worst := func(from, to int) float64 {
		c := 0.0
		for i := from; i < to; i++ {
			msgs, err := spec.Render(spec.Cell(i), nil)
			if err != nil {
				t.Fatal(err)
			}
			c += llm.Cost(price, tok.CountMessages(m.Name, msgs), 20)
		}
		return c
	}
	// Two passes of 20 cells run at once, each with half the budget; chunks of 7, 7 and 6.
	passes := spec.Passes()
	share := 0.0
	for _, p := range passes {
		share = max(share, worst(p.Start, p.Start+7)+worst(p.Start+7, p.Start+14)/2)
	}
	spec.BudgetUSD = 2 * share

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(acts)
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, "budget-run"))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Batches()); n != 2 {
		t.Errorf("%d batches sent, want 2: each pass's first chunk", n)
	}
	recs, err := st.Records(context.Background(), "budget-run", 0, 40)
	if err != nil {
		t.Fatal(err)
	}
	answered, exhausted := 0, 0
	for _, r := range recs {
		switch {
		case r.Status != store.StatusFailed:
			answered++
		case r.ErrorClass == activities.ClassBudgetExhausted:
			exhausted++
		default:
			t.Errorf("cell %d: %s: %s", r.Index, r.ErrorClass, r.ErrorMessage)
		}
	}
	if answered != 14 || exhausted != 26 {
		t.Errorf("%d cells answered and %d recorded %s, want 14 and 26", answered, exhausted, activities.ClassBudgetExhausted)
	}
	if res.Stopped == "" || res.Summary.CostUSD <= 0 || res.Summary.CostUSD > spec.BudgetUSD {
		t.Errorf("stopped %q, cost %g of a budget of %g: want a stop and a cost within the budget", res.Stopped, res.Summary.CostUSD, spec.BudgetUSD)
	}
}

// TestMixedSyncAndBatchModels: a spec whose first model runs in batch mode and second synchronously runs them
// side by side: the batch model's cells go only in batches, the other's only as synchronous calls, each once,
// and the records are those of an all-synchronous run but for the batch model's halved cost.
func TestMixedSyncAndBatchModels(t *testing.T) {
	s, err := sim.New(sim.Config{Batch: sim.BatchConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	st := tempStore(t)
	acts := &activities.Activities{Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond}
	mixed := func(batchFirst bool) experiment.Spec {
		sp := simSpec(srv.URL, false)
		second := sp.Models[0]
		second.ID = "m1"
		sp.Models = append(sp.Models, second)
		if batchFirst {
			sp.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: 7}
		}
		return sp
	}
	runOnce := func(spec experiment.Spec, id string) {
		t.Helper()
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterActivity(acts)
		env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, id))
		if err := env.GetWorkflowError(); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	syncSpec, spec := mixed(false), mixed(true)
	runOnce(syncSpec, "all-sync")
	before := len(s.Requests())
	runOnce(spec, "mixed")

	calls := map[string]int{}
	for _, r := range s.Requests()[before:] {
		if r.Endpoint == "/v1/chat/completions" {
			calls[r.Cell]++
		}
	}
	inBatches := map[string]int{}
	for _, b := range s.Batches() {
		for _, id := range b.Ran {
			inBatches[id]++
		}
	}
	n := spec.NumCells()
	for i := range n {
		c := spec.Cell(i)
		id := spec.CellID(c)
		want := map[bool][2]int{true: {1, 0}, false: {0, 1}}[c.Model == 0] // {in batches, synchronous calls}
		if got := [2]int{inBatches[id], calls[id]}; got != want {
			t.Errorf("cell %s (model %s): %d times in batches, %d synchronous calls; want %v", id, spec.Models[c.Model].ID, got[0], got[1], want)
		}
	}
	a, err := st.Records(context.Background(), "all-sync", 0, n)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Records(context.Background(), "mixed", 0, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != n || len(b) != n {
		t.Fatalf("%d and %d records, want %d each", len(a), len(b), n)
	}
	for i := range a {
		cost := a[i].CostUSD
		if spec.Cell(i).Model == 0 {
			cost /= 2
		}
		if a[i].Raw != b[i].Raw || a[i].OptionID != b[i].OptionID || a[i].PromptTokens != b[i].PromptTokens ||
			math.Abs(b[i].CostUSD-cost) > 1e-12 || a[i].CostUSD == 0 {
			t.Errorf("cell %d: all-sync %+v, mixed %+v", i, a[i], b[i])
		}
	}
}

// loseFirstCreate loses the answer of the first Anthropic batch create that reaches the server: the batch exists
// and the attempt fails without its id, as when a worker dies after its create.
type loseFirstCreate struct {
	mu   sync.Mutex
	lost int
}

func (l *loseFirstCreate) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || r.URL.Path != "/v1/messages/batches" {
		return resp, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost > 0 {
		return resp, nil
	}
	l.lost++
	_ = resp.Body.Close()
	return nil, errors.New("connection reset by peer (after the create)")
}

// anthropicSimSpec is simSpec with the model on the simulator's Anthropic API.
func anthropicSimSpec(url string, batchMode bool) experiment.Spec {
	s := simSpec(url, batchMode)
	s.Models[0].Provider = experiment.ProviderAnthropic
	s.Models[0].Params.MaxTokens = 8
	return s
}

// TestAnthropicBatchRun runs a spec with a model of provider anthropic through ExperimentWorkflow with the real
// activities, synchronously (/v1/messages) and in batch mode (Message Batches): the batch run has the same cell
// columns at half the cost and one batch per chunk, although the first create's answer is lost and the submission
// attempted again, and although its passes run side by side with chunks of one size (7, 7 and 6 cells each).
func TestAnthropicBatchRun(t *testing.T) {
	s, err := sim.New(sim.Config{Batch: sim.BatchConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	st := tempStore(t)
	lose := &loseFirstCreate{}
	keys := func(k string) string {
		if k == experiment.DefaultAnthropicKeyEnv {
			return "sk-ant-test-key-0123456789"
		}
		return ""
	}
	acts := &activities.Activities{Store: st, Models: llm.NewRegistry(&http.Client{Transport: lose}, keys, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond}
	runOnce := func(spec experiment.Spec, id string) Result {
		t.Helper()
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterActivity(acts)
		env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, id))
		if err := env.GetWorkflowError(); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		var res Result
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	syncRes := runOnce(anthropicSimSpec(srv.URL, false), "sync-run")
	if n := len(s.Batches()); n != 0 {
		t.Fatalf("the synchronous run made %d batches", n)
	}
	batchRes := runOnce(anthropicSimSpec(srv.URL, true), "batch-run")

	if lose.lost != 1 {
		t.Fatalf("%d create answers lost, want the first: the test did not test a lost create", lose.lost)
	}
	bs := s.Batches()
	if len(bs) != 6 {
		t.Errorf("%d batches, want 6: one per chunk, the lost create's adopted", len(bs))
	}
	seen := map[string]int{}
	for _, b := range bs {
		if b.Format != sim.BatchAnthropic {
			t.Errorf("batch %s of format %s, want Anthropic's", b.ID, b.Format)
		}
		for _, id := range b.Ran {
			seen[id]++
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("request %s ran %d times", id, n)
		}
	}
	if len(seen) != 40 {
		t.Errorf("%d requests ran in batches, want 40", len(seen))
	}
	recs := func(run string) []store.Record {
		r, err := st.Records(context.Background(), run, 0, 40)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sr, br := recs("sync-run"), recs("batch-run")
	if len(sr) != 40 || len(br) != 40 {
		t.Fatalf("%d sync and %d batch records, want 40 each", len(sr), len(br))
	}
	for i := range sr {
		a, b := sr[i], br[i]
		if a.Status != b.Status || a.OptionID != b.OptionID || a.Raw != b.Raw || a.PromptTokens != b.PromptTokens ||
			a.CompletionTokens != b.CompletionTokens || math.Abs(b.CostUSD-a.CostUSD/2) > 1e-12 || a.CostUSD == 0 {
			t.Errorf("cell %d: sync %+v, batch %+v", i, a, b)
		}
	}
	if syncRes.Summary.Failed != 0 || batchRes.Summary.Failed != 0 || batchRes.Summary.Cells != 40 {
		t.Errorf("summaries: sync %+v, batch %+v", syncRes.Summary, batchRes.Summary)
	}
	if got, want := batchRes.Summary.CostUSD, syncRes.Summary.CostUSD/2; math.Abs(got-want) > 1e-9 || want == 0 {
		t.Errorf("batch run cost %g, want half of %g", got, syncRes.Summary.CostUSD)
	}
}
