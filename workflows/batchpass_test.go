package workflows

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/png"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/imagefetch"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// simSpec is gridSpec on a simulator at url, priced, with the response cache off (so two runs of one store do
// not answer each other).
func simSpec(url string, batchMode bool) experiment.Spec {
	s := gridSpec(1, 2, 4, 5)
	s.Models[0].Provider, s.Models[0].BaseURL, s.Models[0].Name = "sim", url+"/v1", "sim-chat"
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
	acts := &activities.Activities{Clock: fastClock(), Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond}

	runOnce := func(spec experiment.Spec, id string) wire.Result { t.Helper(); return runWith(t, acts, spec, id) }
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
	checkRanOnce(t, bs, 40)
	checkHalfPrice(t, st, "sync-run", "batch-run", 40)
	if syncRes.Summary.Failed != 0 || batchRes.Summary.Failed != 0 || batchRes.Summary.Cells != 40 {
		t.Errorf("summaries: sync %+v, batch %+v", syncRes.Summary, batchRes.Summary)
	}
	if got, want := batchRes.Summary.CostUSD, syncRes.Summary.CostUSD/2; math.Abs((got-want).Float()) > 1e-9 || want == 0 {
		t.Errorf("batch run cost %v, want half of %v", got, syncRes.Summary.CostUSD)
	}
}

// fastClock is the activities' clock in the tests whose simulator runs on real time: AwaitBatch's waits of
// seconds between polls take milliseconds.
func fastClock() ratelimit.Clock { return ratelimit.Scaled(time.Now(), 1000) }

// heldClock stands still at base until release; after it, every reading is two hours after the one before, so a
// batch of BatchConfig.ProcessingTime one hour has run by the first poll after its creation.
type heldClock struct {
	mu       sync.Mutex
	base     time.Time
	released bool
	steps    int
}

func (c *heldClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		c.steps++
	}
	return c.base.Add(time.Duration(c.steps) * 2 * time.Hour)
}

func (c *heldClock) release() { c.mu.Lock(); defer c.mu.Unlock(); c.released = true }

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

// TestBatchRunCancel: cancelling a run cancels its provider batches and records what they completed, in runs
// that wait with AwaitBatch and in runs recorded before (the timer loop, DefaultVersion of wire.ChangeBatchAwait).
func TestBatchRunCancel(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t.Run("await", func(t *testing.T) {
		// The simulator and the activities share a clock 300 times as fast as the real one (AwaitBatch waits on
		// it while the workflow's clock stands still); the run is cancelled 32 minutes into the batches, when 3 of
		// each chunk's 7, 7 or 6 requests have run (the next at 34.3 and 40 minutes).
		clk := ratelimit.Scaled(start, 300)
		checkCancelled(t, clk.Now, clk, func(env *testsuite.TestWorkflowEnvironment) {
			env.SetTestTimeout(2 * time.Minute)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Go(func() {
				select {
				case <-clk.After(32 * time.Minute):
					env.CancelWorkflow()
				case <-stop:
				}
			})
			t.Cleanup(func() { close(stop); wg.Wait() })
		})
	})
	t.Run("timers", func(t *testing.T) {
		clk := &stepClock{now: start}
		checkCancelled(t, clk.Now, nil, func(env *testsuite.TestWorkflowEnvironment) {
			env.OnGetVersion(wire.ChangeBatchAwait, workflow.DefaultVersion, batchAwaitV1).Return(workflow.DefaultVersion)
			env.RegisterDelayedCallback(func() {
				clk.Advance(30 * time.Minute) // half of every batch has run
				env.CancelWorkflow()
			}, 20*time.Minute)
		})
	})
}

// checkCancelled runs simSpec in batch mode on a simulator whose batches take an hour by now, with the
// activities on clk (nil: the real clock), cancels it as arrange sets the environment up to, and checks that
// the batches were cancelled with 18 cells run and recorded.
func checkCancelled(t *testing.T, now func() time.Time, clk ratelimit.Clock, arrange func(env *testsuite.TestWorkflowEnvironment)) {
	s, err := sim.New(sim.Config{Now: now, Batch: sim.BatchConfig{ProcessingTime: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	st := tempStore(t)
	acts := &activities.Activities{Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir(), Clock: clk}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	activities.Register(env, acts)
	arrange(env)
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
// completion, at the batch price) is reserved against the pass's share of budget_usd; a chunk that does not fit
// waits for the collects of the chunks holding reservations, which turn them into what those batches cost. With
// a budget that covers each pass's first chunk and half its second, each pass sends its first batch, and at most
// one more once the first is collected; the others are never sent, the run stops with the budget exhausted, its
// other cells are recorded so, and the run costs less than its budget. A pass whose share runs out stops only
// itself: the other runs on within its share, so no chunk left unsent would have fitted what the budget has left
// (runs recorded before wire.ChangeBatchBudgetPerPass stopped every pass at the first one's stop).
func TestBatchRunReservesTheBudget(t *testing.T) {
	t.Run("per pass", func(t *testing.T) { checkBatchBudget(t, false) })
	t.Run("recorded before", func(t *testing.T) { checkBatchBudget(t, true) })
}

func checkBatchBudget(t *testing.T, before bool) {
	// The provider runs no batch until each pass has submitted its first chunk, so that both passes have
	// spent part of their shares when the first runs out whatever the machine's load.
	gate := &heldClock{base: time.Now()}
	s, err := sim.New(sim.Config{Now: gate.Now, Batch: sim.BatchConfig{ProcessingTime: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	var holder sync.WaitGroup
	defer holder.Wait()
	done := make(chan struct{})
	defer close(done)
	holder.Go(func() {
		deadline := time.After(time.Minute) // released anyway: the assertions below then say what was missing
		for len(s.Batches()) < 2 {
			select {
			case <-done:
				return
			case <-deadline:
				gate.release()
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		gate.release()
	})
	tok, err := llm.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	st := tempStore(t)
	acts := &activities.Activities{Clock: fastClock(), Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		Tokenizer: tok, OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond}
	spec := simSpec(srv.URL, true)
	spec.Models[0].Params.MaxTokens = 20
	worst := func(from, to int) usage.USD { return experimenttest.WorstBatchCost(t, spec, tok, from, to) }
	// Two passes of 20 cells run at once, each with half the budget; chunks of 7, 7 and 6.
	passes := spec.Passes()
	var share usage.USD
	for _, p := range passes {
		share = max(share, worst(p.Start, p.Start+7)+worst(p.Start+7, p.Start+14)/2)
	}
	spec.BudgetUSD = 2 * share

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	if before {
		env.OnGetVersion(wire.ChangeBatchBudgetPerPass, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	activities.Register(env, acts)
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, "budget-run"))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	bs := s.Batches()
	ran := 0
	for _, b := range bs {
		ran += len(b.Ran)
	}
	if len(bs) < 2 || len(bs) > 4 {
		t.Errorf("%d batches sent, want each pass's first chunk and at most one more each", len(bs))
	}
	recs, err := st.Records(context.Background(), "budget-run", 0, 40)
	if err != nil {
		t.Fatal(err)
	}
	answered, exhausted := 0, 0
	spent := make([]usage.USD, len(passes))
	unsent := map[int]int{} // each chunk none of whose cells was answered: its first cell, and its pass
	for i, p := range passes {
		for c := p.Start; c < p.End; c += 7 {
			unsent[c] = i
		}
	}
	for _, r := range recs {
		i := slices.IndexFunc(passes, func(p experiment.Pass) bool { return r.Index >= p.Start && r.Index < p.End })
		spent[i] += r.CostUSD
		switch {
		case r.Status != store.StatusFailed:
			answered++
			delete(unsent, passes[i].Start+(r.Index-passes[i].Start)/7*7)
		case r.ErrorClass == errclass.BudgetExhausted:
			exhausted++
		default:
			t.Errorf("cell %d: %s: %s", r.Index, r.ErrorClass, r.ErrorMessage)
		}
	}
	if answered != ran || answered < 14 || exhausted == 0 || answered+exhausted != 40 {
		t.Errorf("%d cells answered (%d ran in batches) and %d recorded %s, want those the batches ran and the rest",
			answered, ran, exhausted, errclass.BudgetExhausted)
	}
	if res.Stopped == "" || res.Summary.CostUSD <= 0 || res.Summary.CostUSD > spec.BudgetUSD {
		t.Errorf("stopped %q, cost $%v of a budget of $%v: want a stop and a cost within the budget", res.Stopped, res.Summary.CostUSD, spec.BudgetUSD)
	}
	if before {
		return
	}
	// A pass's share is at least half the budget (more once the other pass has ended): a chunk it never sent
	// did not fit what that left it.
	for _, c := range slices.Sorted(maps.Keys(unsent)) {
		p := passes[unsent[c]]
		end := min(c+7, p.End)
		if w, left := worst(c, end), share-spent[unsent[c]]; w <= left {
			t.Errorf("pass %d never sent cells %d-%d, and their worst case $%v fits the $%v left of its half of the budget",
				p.Index, c, end-1, w, left)
		}
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
	acts := &activities.Activities{Clock: fastClock(), Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
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
	runOnce := func(spec experiment.Spec, id string) { t.Helper(); runWith(t, acts, spec, id) }
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
			math.Abs((b[i].CostUSD-cost).Float()) > 1e-12 || a[i].CostUSD == 0 {
			t.Errorf("cell %d: all-sync %+v, mixed %+v", i, a[i], b[i])
		}
	}
}

// checkRanOnce checks that the simulator's batches ran n requests in all, each once.
func checkRanOnce(t *testing.T, bs []sim.Batch, n int) {
	t.Helper()
	seen := map[string]int{}
	for _, b := range bs {
		for _, id := range b.Ran {
			seen[id]++
		}
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("request %s ran %d times", id, k)
		}
	}
	if len(seen) != n {
		t.Errorf("%d requests ran in batches, want %d", len(seen), n)
	}
}

// checkHalfPrice holds the n records of run batchRun to those of run syncRun: the same answers, options and
// tokens, at half a cost that is not zero.
func checkHalfPrice(t *testing.T, st *store.SQLite, syncRun, batchRun string, n int) {
	t.Helper()
	recs := func(run string) []store.Record {
		r, err := st.Records(context.Background(), run, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sr, br := recs(syncRun), recs(batchRun)
	if len(sr) != n || len(br) != n {
		t.Fatalf("%d sync and %d batch records, want %d each", len(sr), len(br), n)
	}
	for i := range sr {
		a, b := sr[i], br[i]
		if a.Status != b.Status || a.OptionID != b.OptionID || a.Raw != b.Raw || a.PromptTokens != b.PromptTokens ||
			a.CompletionTokens != b.CompletionTokens || math.Abs((b.CostUSD-a.CostUSD/2).Float()) > 1e-12 || a.CostUSD == 0 {
			t.Errorf("cell %d: sync %+v, batch %+v", i, a, b)
		}
	}
}

// runWith runs spec through ExperimentWorkflow with acts and returns its result.
func runWith(t *testing.T, acts *activities.Activities, spec experiment.Spec, id string) wire.Result {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	activities.Register(env, acts)
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, id))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	var res wire.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// embedRunSpec is an embed spec of two models over texts on a simulator at url: requests of at most 3 texts
// and 40 tokens, so that the texts pack into several requests, with a repeated text and one too long for any
// request.
func embedRunSpec(url string, batchMode bool) experiment.Spec {
	s := experiment.Spec{Name: "embed batch", Kind: experiment.KindEmbed,
		Embed: &experiment.EmbedSettings{Texts: experiment.EmbedItems, MaxInputsPerRequest: 3, MaxTokensPerRequest: 40}}
	for i, name := range []string{"text-embedding-3-small", "text-embedding-3-large"} {
		s.Models = append(s.Models, experiment.Model{ID: fmt.Sprint("e", i), Name: name, Provider: "sim",
			BaseURL: url + "/v1", Price: &experiment.Price{InputPerMTok: 0.02}})
	}
	for i := range 14 {
		text := fmt.Sprintf("Statement %d: the weather in town %d is mild today.", i, i)
		switch i {
		case 9:
			text = "Statement 2: the weather in town 2 is mild today." // text 2 again
		case 12:
			text = strings.Repeat("far too long for one request ", 20)
		}
		s.Questionnaire.Items = append(s.Questionnaire.Items, experiment.Item{ID: fmt.Sprint("t", i), Text: text})
	}
	s.Run.Cache = experiment.CacheOff
	if batchMode {
		s.Run.Cache = experiment.CacheReadWrite
		s.Run.Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: 2}
	}
	s.ApplyDefaults()
	return s
}

// readCSV reads a CSV file of a run's outputs into a header and rows.
func readCSV(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%s: %v (%d rows)", path, err, len(rows))
	}
	return rows[0], rows[1:]
}

// TestBatchEmbedRunSameOutputs runs an embed spec through ExperimentWorkflow with the real activities, once
// synchronously and once in batch mode, against one simulator: the batch run's embeddings.parquet has the same
// vectors, and its embeddings.csv the same columns but for the cost (half) and how the run got them; its
// requests are the synchronous run's, one line each, in one batch per chunk; and the vectors it keeps in the
// response cache serve a synchronous run of the same texts without a call.
func TestBatchEmbedRunSameOutputs(t *testing.T) {
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	tok, err := llm.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{Clock: fastClock(), Store: tempStore(t), Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		Tokenizer: tok, OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond}

	syncRes := runWith(t, acts, embedRunSpec(srv.URL, false), "embed-sync")
	syncReqs := s.Requests()
	if len(s.Batches()) != 0 || len(syncReqs) == 0 {
		t.Fatalf("the synchronous run made %d batches and %d requests", len(s.Batches()), len(syncReqs))
	}
	batchRes := runWith(t, acts, embedRunSpec(srv.URL, true), "embed-batch")
	if n := len(s.Requests()); n != len(syncReqs) {
		t.Errorf("the batch run made %d synchronous requests", n-len(syncReqs))
	}

	// The batch lines are the synchronous requests: named by their first cells, each run once, two per batch.
	want := map[string]bool{}
	perModel := map[string]int{}
	for _, q := range syncReqs {
		first, _, _ := strings.Cut(q.Cell, ",")
		idx, err := strconv.Atoi(first)
		if err != nil {
			t.Fatalf("request cell header %q", q.Cell)
		}
		m := fmt.Sprint("e", idx/14)
		want[m+"/"+first] = true
		perModel[m]++
	}
	bs := s.Batches()
	t.Logf("%d synchronous requests %v, %d batches", len(syncReqs), perModel, len(bs))
	if wantBatches := (perModel["e0"]+1)/2 + (perModel["e1"]+1)/2; len(bs) != wantBatches {
		t.Errorf("%d batches, want %d: one per chunk of 2 of the %v requests", len(bs), wantBatches, perModel)
	}
	ran := map[string]int{}
	for _, b := range bs {
		if b.Endpoint != "/v1/embeddings" || len(b.CustomIDs) > 2 || len(b.Ran) != len(b.CustomIDs) {
			t.Errorf("batch %s: %s with %d lines, %d ran", b.ID, b.Endpoint, len(b.CustomIDs), len(b.Ran))
		}
		for _, id := range b.Ran {
			ran[id]++
		}
	}
	for id, n := range ran {
		if n != 1 || !want[id] {
			t.Errorf("line %s ran %d times; a synchronous request starts with its cell: %v", id, n, want[id])
		}
	}
	if len(ran) != len(want) {
		t.Errorf("%d lines ran, want the %d synchronous requests", len(ran), len(want))
	}

	// Every cell recorded once, in the first round.
	recs, err := acts.Store.Records(context.Background(), "embed-batch", 0, 28)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 28 {
		t.Fatalf("%d batch records, want 28", len(recs))
	}
	for _, r := range recs {
		tooLong := r.Index%14 == 12
		if tooLong != (r.Status == store.StatusFailed) || (tooLong && r.ErrorClass != errclass.TextTooLong) ||
			(!tooLong && r.Attempts != 1) {
			t.Errorf("record %d: %s %s, %d attempts", r.Index, r.Status, r.ErrorClass, r.Attempts)
		}
	}

	// The same vectors.
	syncVecs, err := results.ReadVectors(filepath.Join(syncRes.OutputDir, results.VectorsFile))
	if err != nil {
		t.Fatal(err)
	}
	batchVecs, err := results.ReadVectors(filepath.Join(batchRes.OutputDir, results.VectorsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(syncVecs) != 28 || len(batchVecs) != 28 {
		t.Fatalf("%d sync and %d batch vectors, want 28 each", len(syncVecs), len(batchVecs))
	}
	for i, a := range syncVecs {
		b := batchVecs[i]
		if a.Index != b.Index || a.Model != b.Model || a.TextID != b.TextID || a.Text != b.Text || a.Status != b.Status ||
			a.Dims != b.Dims || !slices.Equal(a.Vector, b.Vector) {
			t.Errorf("vector %d: sync %s/%s %s %d dims, batch %s/%s %s %d dims, equal vectors %v", i,
				a.Model, a.TextID, a.Status, a.Dims, b.Model, b.TextID, b.Status, b.Dims, slices.Equal(a.Vector, b.Vector))
		}
	}

	// The same index but for the cost and the facts of the run.
	head, syncRows := readCSV(t, filepath.Join(syncRes.OutputDir, results.VectorIndexFile))
	_, batchRows := readCSV(t, filepath.Join(batchRes.OutputDir, results.VectorIndexFile))
	if len(syncRows) != 28 || len(batchRows) != 28 {
		t.Fatalf("%d sync and %d batch index rows", len(syncRows), len(batchRows))
	}
	costs := 0.0
	for i := range syncRows {
		for j, col := range head {
			a, b := syncRows[i][j], batchRows[i][j]
			switch col {
			case "latency_ms", "attempts", "cached":
			case "cost_usd":
				ca, _ := strconv.ParseFloat(a, 64)
				cb, _ := strconv.ParseFloat(b, 64)
				costs += ca
				if math.Abs(cb-ca/2) > 1e-9 {
					t.Errorf("row %d: batch cost %s, sync %s: want half", i, b, a)
				}
			default:
				if a != b {
					t.Errorf("row %d %s: batch %q, sync %q", i, col, b, a)
				}
			}
		}
	}
	if costs == 0 {
		t.Error("the synchronous run cost nothing: the comparison of costs proves nothing")
	}

	// The vectors the batch run kept in the cache answer a synchronous run of the same texts: no call.
	cached := embedRunSpec(srv.URL, false)
	cached.Run.Cache = experiment.CacheReadWrite
	runWith(t, acts, cached, "embed-cached")
	if n := len(s.Requests()); n != len(syncReqs) {
		t.Errorf("a synchronous run after the batch run made %d requests, want none (cached)", n-len(syncReqs))
	}
	again, err := acts.Store.Records(context.Background(), "embed-cached", 0, 28)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again {
		if r.Index%14 != 12 && (!r.Cached || r.Raw != recs[i].Raw || r.Index != recs[i].Index) {
			t.Errorf("cached run record %d: cached %v, same vector %v", r.Index, r.Cached, r.Raw == recs[i].Raw)
		}
	}
	if len(again) != 28 {
		t.Errorf("%d records of the cached run, want 28", len(again))
	}
}

// pictureServer serves PNG pictures by path on loopback and counts the downloads of each.
type pictureServer struct {
	*httptest.Server
	mu   sync.Mutex
	pics map[string][]byte
	hits map[string]int
}

func newPictureServer(t *testing.T, sizes map[string][2]int) *pictureServer {
	t.Helper()
	ps := &pictureServer{pics: map[string][]byte{}, hits: map[string]int{}}
	for path, wh := range sizes {
		ps.pics[path] = pngOf(t, wh[0], wh[1], 0)
	}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps.mu.Lock()
		ps.hits[r.URL.Path]++
		pic, ok := ps.pics[r.URL.Path]
		ps.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pic)
	}))
	t.Cleanup(ps.Close)
	return ps
}

func (ps *pictureServer) digest(path string) string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	sum := sha256.Sum256(ps.pics[path])
	return hex.EncodeToString(sum[:])
}

// pngOf is a w×h PNG whose pixels depend on seed.
func pngOf(t *testing.T, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i) ^ seed
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// exportedRows reads a run's results.jsonl.
func exportedRows(t *testing.T, dir string) []results.Row {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []results.Row
	if err := results.ReadJSONL(f, func(r results.Row) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestBatchRunInlinePictures runs a spec whose items and a persona show pictures (image_transport inline, served
// on loopback) through ExperimentWorkflow with the real activities, synchronously and in batch mode: the batch
// run's cells have the synchronous run's cell columns (the pictures' digests, and the image tokens the simulator
// charged for the inlined bytes, included) at half the cost; a missing picture fails its cells alike; and the
// worker's fetcher downloads each picture once for the plan, the submissions and the collects.
func TestBatchRunInlinePictures(t *testing.T) {
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	pics := newPictureServer(t, map[string][2]int{"/face.png": {1024, 1024}, "/ad.png": {512, 300}, "/me.png": {100, 100}})
	acts := &activities.Activities{Clock: fastClock(), Store: tempStore(t), Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond,
		Images: imagefetch.New(imagefetch.Config{})}
	spec := func(batchMode bool) experiment.Spec {
		s := simSpec(srv.URL, batchMode)
		s.Models[0].RPM, s.Models[0].TPM = 0, 0 // the pictures' tokens would pace the synchronous run for seconds
		s.Questionnaire.Items[0].Images = []string{pics.URL + "/face.png"}
		s.Questionnaire.Items[1].Images = []string{pics.URL + "/face.png", pics.URL + "/ad.png"}
		s.Questionnaire.Items[3].Images = []string{pics.URL + "/gone.png"}
		s.Personas[1].Images = []string{pics.URL + "/me.png"}
		s.ApplyDefaults()
		return s
	}
	syncRes := runWith(t, acts, spec(false), "pictures-sync")
	hits := map[string]int{}
	pics.mu.Lock()
	maps.Copy(hits, pics.hits)
	pics.mu.Unlock()
	batchRes := runWith(t, acts, spec(true), "pictures-batch")
	if len(s.Batches()) != 6 {
		t.Errorf("%d batches, want 6: chunks of 7, 7 and 6 cells of two seeds", len(s.Batches()))
	}
	pics.mu.Lock()
	for p, n := range pics.hits {
		if n != hits[p] && p != "/gone.png" {
			t.Errorf("%s downloaded again by the batch run (%d times): the worker's fetcher holds it", p, n-hits[p])
		}
	}
	pics.mu.Unlock()

	sr, br := exportedRows(t, syncRes.OutputDir), exportedRows(t, batchRes.OutputDir)
	if len(sr) != 40 || len(br) != 40 {
		t.Fatalf("%d sync and %d batch rows, want 40 each", len(sr), len(br))
	}
	withPictures, failed := 0, 0
	for i := range sr {
		a, b := sr[i], br[i]
		if math.Abs((b.CostUSD - a.CostUSD/2).Float()) > 1e-12 {
			t.Errorf("cell %s: batch cost %v, sync %v: want half", a.CellID, b.CostUSD, a.CostUSD)
		}
		a.CostUSD, b.CostUSD = 0, 0
		if ca, cb := results.CellColumns(a), results.CellColumns(b); !slices.Equal(ca, cb) {
			t.Errorf("cell %s:\nsync  %q\nbatch %q", a.CellID, ca, cb)
		}
		if a.ImageSHA256 != "" {
			withPictures++
		}
		if a.Status == "failed" {
			failed++
		}
	}
	// Items 1 and 2 show pictures to every persona, item 3 only to p1; item 4's picture is missing.
	if want := 2*2*5 + 2*1; withPictures != want || failed != 2*5 {
		t.Errorf("%d cells with pictures (want %d), %d failed (want 10): the comparison proves less than it should", withPictures, want, failed)
	}
	for _, r := range br {
		if r.ItemID == "2" && r.PersonaID == "p1" {
			want := pics.digest("/me.png") + "," + pics.digest("/face.png") + "," + pics.digest("/ad.png")
			if r.ImageSHA256 != want || r.PromptTokens < 765+255+255 {
				t.Errorf("cell %s: image_sha256 %q (want %q), %d prompt tokens (want the pictures' 1,275 at least)",
					r.CellID, r.ImageSHA256, want, r.PromptTokens)
			}
		}
		if r.ItemID == "4" && (r.ErrorClass != errclass.ImageUnavailable || r.ErrorCode != "http_404") {
			t.Errorf("cell %s: %s %s, want the missing picture's failure", r.CellID, r.ErrorClass, r.ErrorCode)
		}
	}
}

// TestBatchRunRefusesAChangedPicture: a picture whose bytes change with every download (here seen by activities
// without a shared fetcher) gives each build of a chunk other lines: the chunk is never submitted, and its cells
// are recorded failed saying why; the other chunks run.
func TestBatchRunRefusesAChangedPicture(t *testing.T) {
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	var mu sync.Mutex
	n := 0
	pics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		seed := byte(n)
		mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngOf(t, 16, 16, seed))
	}))
	defer pics.Close()
	st := tempStore(t)
	acts := &activities.Activities{Clock: fastClock(), Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir()}
	spec := simSpec(srv.URL, true)
	spec.Questionnaire.Items[0].Images = []string{pics.URL + "/live.png"}
	spec.ApplyDefaults()
	res := runWith(t, acts, spec, "changing")
	if n := len(s.Batches()); n != 4 {
		t.Errorf("%d batches, want 4: the chunks without the picture", n)
	}
	recs, err := st.Records(context.Background(), "changing", 0, 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 40 {
		t.Fatalf("%d records, want 40", len(recs))
	}
	for _, r := range recs {
		refused := r.Index%20 < 7 // chunk 0 of each seed holds the picture's cells
		if refused != (r.Status == store.StatusFailed) ||
			(refused && (r.ErrorClass != errclass.BatchRefused || !strings.Contains(r.ErrorMessage, "picture's bytes changed"))) {
			t.Errorf("cell %d: %s %s %q", r.Index, r.Status, r.ErrorClass, r.ErrorMessage)
		}
	}
	if res.Summary.Failed != 14 {
		t.Errorf("summary %+v, want 14 failed", res.Summary)
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
	acts := &activities.Activities{Clock: fastClock(), Store: st, Models: llm.NewRegistry(&http.Client{Transport: lose}, keys, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond}
	runOnce := func(spec experiment.Spec, id string) wire.Result { t.Helper(); return runWith(t, acts, spec, id) }
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
	for _, b := range bs {
		if b.Format != sim.BatchAnthropic {
			t.Errorf("batch %s of format %s, want Anthropic's", b.ID, b.Format)
		}
	}
	checkRanOnce(t, bs, 40)
	checkHalfPrice(t, st, "sync-run", "batch-run", 40)
	if syncRes.Summary.Failed != 0 || batchRes.Summary.Failed != 0 || batchRes.Summary.Cells != 40 {
		t.Errorf("summaries: sync %+v, batch %+v", syncRes.Summary, batchRes.Summary)
	}
	if got, want := batchRes.Summary.CostUSD, syncRes.Summary.CostUSD/2; math.Abs((got-want).Float()) > 1e-9 || want == 0 {
		t.Errorf("batch run cost %v, want half of %v", got, syncRes.Summary.CostUSD)
	}
}
