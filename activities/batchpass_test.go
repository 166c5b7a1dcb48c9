package activities

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

type simClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *simClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *simClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type batchHarness struct {
	t    *testing.T
	sim  *sim.Server
	clk  *simClock
	url  string
	st   *store.SQLite
	acts *Activities
	env  *testsuite.TestActivityEnvironment
	spec experiment.Spec
}

func newBatchHarness(t *testing.T, cfg sim.BatchConfig) *batchHarness {
	t.Helper()
	clk := &simClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s, err := sim.New(sim.Config{Now: clk.Now, Batch: cfg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "batch.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &batchHarness{t: t, sim: s, clk: clk, url: srv.URL, st: st,
		acts: &Activities{Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, "")}}
	var suite testsuite.WorkflowTestSuite
	h.env = suite.NewTestActivityEnvironment()
	h.env.RegisterActivity(h.acts)
	return h
}

// specs are the sync and batch forms of one grid on the simulator.
func (h *batchHarness) specs(items, personas, maxRequests int) (syncSpec, batchSpec experiment.Spec) {
	syncSpec = testSpec(h.url, items, personas)
	syncSpec.Models[0].Name = "sim-chat"
	batchSpec = testSpec(h.url, items, personas)
	batchSpec.Models[0].Name = "sim-chat"
	batchSpec.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: maxRequests}
	return syncSpec, batchSpec
}

func (h *batchHarness) save(run string, spec experiment.Spec) {
	h.t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, _, err := SaveSpec(context.Background(), h.st, run, raw); err != nil {
		h.t.Fatal(err)
	}
	h.spec = spec
}

func run[T any](h *batchHarness, fn any, in any) T {
	h.t.Helper()
	v, err := h.env.ExecuteActivity(fn, in)
	if err != nil {
		h.t.Fatal(err)
	}
	var out T
	if err := v.Get(&out); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// drive runs a batch pass to its end as the workflow will: plan, submit every chunk (twice, as a retried
// attempt would), wait, collect, and submit what comes back in the next round.
func (h *batchHarness) drive(runID string, wait time.Duration, rounds int) wire.BatchPlan {
	h.t.Helper()
	pass := h.spec.Passes()[0]
	plan := run[wire.BatchPlan](h, h.acts.PlanBatchPass, wire.BatchPassInput{RunID: runID, Pass: pass})
	if len(plan.Digests) != len(plan.Chunks) {
		h.t.Fatalf("plan of %d chunks with %d digests", len(plan.Chunks), len(plan.Digests))
	}
	var known []string
	for i, cells := range plan.Chunks {
		digest := plan.Digests[i]
		for round := 0; round < rounds && cells.Len() > 0; round++ {
			// As the workflow does: the intent recorded before the submission, the batches adopted so far.
			in := wire.BatchChunkInput{RunID: runID, Pass: pass, Chunk: i, Round: round, Cells: cells, Digest: digest,
				Intent: h.clk.Now(), Known: slices.Clone(known)}
			info := run[wire.BatchInfo](h, h.acts.SubmitBatch, in)
			if again := run[wire.BatchInfo](h, h.acts.SubmitBatch, in); again.ID != info.ID {
				h.t.Fatalf("chunk %d round %d: a second submit created %s besides %s", i, round, again.ID, info.ID)
			}
			known = append(known, info.ID)
			h.clk.Advance(wait)
			info = run[wire.BatchInfo](h, h.acts.PollBatch, wire.BatchRef{RunID: runID, Model: pass.Model, ID: info.ID})
			if !info.Status.Terminal() {
				h.t.Fatalf("chunk %d: %s after %v", i, info.Status, wait)
			}
			got := run[wire.BatchCollected](h, h.acts.CollectBatch, wire.BatchCollectInput{BatchChunkInput: in, Batch: info})
			cells, digest = got.Again, got.AgainDigest
		}
	}
	return plan
}

func (h *batchHarness) records(run string) map[int]store.Record {
	recs, err := h.st.Records(context.Background(), run, 0, h.spec.NumCells())
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[int]store.Record{}
	for _, r := range recs {
		out[r.Index] = r
	}
	return out
}

// TestBatchPassSameCellsAtHalfPrice: a batch pass records every cell once, with the answers, options and tokens
// of a synchronous pass of the same spec, at half its cost, in one batch per chunk.
func TestBatchPassSameCellsAtHalfPrice(t *testing.T) {
	h := newBatchHarness(t, sim.BatchConfig{ProcessingTime: time.Hour})
	syncSpec, batchSpec := h.specs(4, 5, 7) // 20 cells: chunks of 7, 7, 6

	sh := newHarness(t, syncSpec)
	if _, err := sh.runPass(ratelimit.Limits{Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	want := sh.records()

	h.save("batch-run", batchSpec)
	plan := h.drive("batch-run", time.Hour, 1)
	if len(plan.Chunks) != 3 || plan.Cached != 0 {
		t.Fatalf("plan %+v, want 3 chunks and nothing cached", plan)
	}
	if n := len(h.sim.Batches()); n != 3 {
		t.Errorf("%d batches, want one per chunk", n)
	}
	got := h.records("batch-run")
	if len(got) != 20 || len(want) != 20 {
		t.Fatalf("%d batch records, %d sync records, want 20 each", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Status != w.Status || g.OptionID != w.OptionID || g.Raw != w.Raw || g.PromptTokens != w.PromptTokens ||
			g.CompletionTokens != w.CompletionTokens || g.Cached {
			t.Errorf("cell %d: batch %+v, sync %+v", i, g, w)
		}
		if math.Abs((g.CostUSD-w.CostUSD/2).Float()) > 1e-12 || w.CostUSD == 0 {
			t.Errorf("cell %d: batch cost %v, sync %v: want half", i, g.CostUSD, w.CostUSD)
		}
	}
	// Collecting again records nothing new and asks nothing again.
	pass := h.spec.Passes()[0]
	bs := h.sim.Batches()
	in := wire.BatchChunkInput{RunID: "batch-run", Pass: pass, Chunk: 0, Cells: plan.Chunks[0]}
	info := run[wire.BatchInfo](h, h.acts.PollBatch, wire.BatchRef{RunID: "batch-run", ID: bs[0].ID})
	again := run[wire.BatchCollected](h, h.acts.CollectBatch, wire.BatchCollectInput{BatchChunkInput: in, Batch: info})
	if again.Recorded != 7 || again.Again.Len() != 0 || len(h.records("batch-run")) != 20 {
		t.Errorf("second collect %+v", again)
	}

	// Another run of the same spec is answered by the response cache: no batch at all.
	h.save("rerun", batchSpec)
	plan = h.drive("rerun", time.Hour, 1)
	if plan.Cached != 20 || len(plan.Chunks) != 0 || len(h.sim.Batches()) != 3 {
		t.Errorf("rerun plan %+v with %d batches; want 20 cached and no new batch", plan, len(h.sim.Batches()))
	}
	if r := h.records("rerun")[3]; !r.Cached || r.Raw != want[3].Raw {
		t.Errorf("rerun record %+v, want cached with the same answer", r)
	}
}

// TestBatchPassExpiryResubmitsTheRest: a batch that expires 60% of the way through has its 60% recorded and the
// other 40% — only those — submitted again in the next round.
func TestBatchPassExpiryResubmitsTheRest(t *testing.T) {
	h := newBatchHarness(t, sim.BatchConfig{ProcessingTime: 10 * time.Hour, Window: 6 * time.Hour})
	_, batchSpec := h.specs(2, 5, 100) // 10 cells, one chunk
	h.save("run", batchSpec)
	h.drive("run", 10*time.Hour, 2)
	bs := h.sim.Batches()
	if len(bs) != 2 || len(bs[0].Ran) != 6 || len(bs[1].CustomIDs) != 4 {
		t.Fatalf("batches %+v; want 10 submitted, 6 run, then the other 4", bs)
	}
	for _, id := range bs[1].CustomIDs {
		for _, ran := range bs[0].Ran {
			if id == ran {
				t.Errorf("%s ran in the first batch and was submitted again", id)
			}
		}
	}
	// The second batch expires 60% of the way through too: 2 of its 4 ran.
	recs := h.records("run")
	if len(recs) != 8 {
		t.Fatalf("%d records, want 6 from the first batch and 2 from the second", len(recs))
	}
	for i, r := range recs {
		if wantAttempts := 1 + boolInt(i >= 6); r.Attempts != wantAttempts || r.Status == store.StatusFailed || i >= 8 {
			t.Errorf("cell %d: %+v, want answered in submission %d", i, r, wantAttempts)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBatchPassFailedLines: the status_code trap is recorded as the synchronous failure; a 500 goes again.
func TestBatchPassFailedLines(t *testing.T) {
	h := newBatchHarness(t, sim.BatchConfig{FailLines: map[string]int{"m/7/1/p0": 400, "m/7/1/p1": 500}})
	_, batchSpec := h.specs(1, 3, 100)
	h.save("run", batchSpec)
	pass := batchSpec.Passes()[0]
	plan := run[wire.BatchPlan](h, h.acts.PlanBatchPass, wire.BatchPassInput{RunID: "run", Pass: pass})
	in := wire.BatchChunkInput{RunID: "run", Pass: pass, Cells: plan.Chunks[0]}
	info := run[wire.BatchInfo](h, h.acts.SubmitBatch, in)
	info = run[wire.BatchInfo](h, h.acts.PollBatch, wire.BatchRef{RunID: "run", ID: info.ID})
	got := run[wire.BatchCollected](h, h.acts.CollectBatch, wire.BatchCollectInput{BatchChunkInput: in, Batch: info})
	if got.Recorded != 2 || got.Failed != 1 || got.Again.Len() != 1 || got.Again.Indexes()[0] != 1 {
		t.Errorf("collected %+v, want p0 failed, p2 answered, p1 again", got)
	}
	r := h.records("run")[0]
	if r.Status != store.StatusFailed || r.ErrorClass != "InvalidRequest" || r.ErrorCode != "context_length_exceeded" {
		t.Errorf("400 line record %+v", r)
	}
}

// TestBatchPassCancel: cancelling a running batch records what completed; the rest comes back to go again.
func TestBatchPassCancel(t *testing.T) {
	h := newBatchHarness(t, sim.BatchConfig{ProcessingTime: 10 * time.Hour})
	_, batchSpec := h.specs(2, 5, 100)
	h.save("run", batchSpec)
	pass := batchSpec.Passes()[0]
	plan := run[wire.BatchPlan](h, h.acts.PlanBatchPass, wire.BatchPassInput{RunID: "run", Pass: pass})
	in := wire.BatchChunkInput{RunID: "run", Pass: pass, Cells: plan.Chunks[0]}
	info := run[wire.BatchInfo](h, h.acts.SubmitBatch, in)
	h.clk.Advance(3 * time.Hour)
	info = run[wire.BatchInfo](h, h.acts.CancelBatch, wire.BatchRef{RunID: "run", ID: info.ID})
	if info.Status != wire.BatchStatusCancelled {
		t.Fatalf("after cancel: %s", info.Status)
	}
	got := run[wire.BatchCollected](h, h.acts.CollectBatch, wire.BatchCollectInput{BatchChunkInput: in, Batch: info})
	if got.Recorded != 3 || got.Again.Len() != 7 || len(h.records("run")) != 3 {
		t.Errorf("collected %+v, want 3 recorded and 7 to go again", got)
	}
}

// anthropicKeys is a worker's environment with an Anthropic key.
func anthropicKeys(k string) string {
	if k == experiment.DefaultAnthropicKeyEnv {
		return antKey
	}
	return ""
}

// anthropicSpecs are h.specs with the model on the simulator's Anthropic API.
func (h *batchHarness) anthropicSpecs(items, personas, maxRequests int) (syncSpec, batchSpec experiment.Spec) {
	syncSpec, batchSpec = h.specs(items, personas, maxRequests)
	for _, s := range []*experiment.Spec{&syncSpec, &batchSpec} {
		s.Models[0].Provider, s.Models[0].APIKeyEnv = experiment.ProviderAnthropic, ""
		s.Models[0].Params.MaxTokens = 8
		s.ApplyDefaults()
	}
	return syncSpec, batchSpec
}

// TestAnthropicBatchPassSameCellsAtHalfPrice: an anthropic model's batch pass runs Message Batches, one per chunk
// (each submitted twice, as a retried attempt would, with the same recorded intent), and records every cell
// with the answers, options and tokens of a synchronous pass of the same spec through /v1/messages, at half its
// cost.
func TestAnthropicBatchPassSameCellsAtHalfPrice(t *testing.T) {
	h := newBatchHarness(t, sim.BatchConfig{ProcessingTime: time.Hour})
	h.acts.Models = llm.NewRegistry(http.DefaultClient, anthropicKeys, "")
	syncSpec, batchSpec := h.anthropicSpecs(4, 5, 7) // 20 cells: chunks of 7, 7, 6

	sh := newHarness(t, syncSpec)
	sh.acts.Models = llm.NewRegistry(http.DefaultClient, anthropicKeys, "")
	if _, err := sh.runPass(ratelimit.Limits{Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	want := sh.records()

	h.save("batch-run", batchSpec)
	plan := h.drive("batch-run", time.Hour, 1)
	if len(plan.Chunks) != 3 || plan.Format != wire.FormatAnthropic {
		t.Fatalf("plan %+v, want 3 chunks of the Anthropic format", plan)
	}
	bs := h.sim.Batches()
	if len(bs) != 3 {
		t.Errorf("%d batches, want one per chunk", len(bs))
	}
	for _, b := range bs {
		if b.Format != sim.BatchAnthropic || len(b.Ran) != len(b.CustomIDs) {
			t.Errorf("batch %s: format %s, %d of %d ran; want Anthropic batches run to the end", b.ID, b.Format, len(b.Ran), len(b.CustomIDs))
		}
	}
	got := h.records("batch-run")
	if len(got) != 20 || len(want) != 20 {
		t.Fatalf("%d batch records, %d sync records, want 20 each", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Status != w.Status || g.OptionID != w.OptionID || g.Raw != w.Raw || g.PromptTokens != w.PromptTokens ||
			g.CompletionTokens != w.CompletionTokens || g.Status == store.StatusFailed {
			t.Errorf("cell %d: batch %+v, sync %+v", i, g, w)
		}
		if math.Abs((g.CostUSD-w.CostUSD/2).Float()) > 1e-12 || w.CostUSD == 0 {
			t.Errorf("cell %d: batch cost %v, sync %v: want half", i, g.CostUSD, w.CostUSD)
		}
	}
	// The batch answers are in the response cache under the synchronous pass's keys: a rerun makes no batch.
	h.save("rerun", batchSpec)
	plan = h.drive("rerun", time.Hour, 1)
	if plan.Cached != 20 || len(plan.Chunks) != 0 || len(h.sim.Batches()) != 3 {
		t.Errorf("rerun plan %+v with %d batches; want 20 cached and no new batch", plan, len(h.sim.Batches()))
	}
}

// loseCreate loses the answer of the first Anthropic batch create that reaches the server: the batch exists,
// the caller never learns its id, as when a worker dies after its create.
type loseCreate struct {
	mu   sync.Mutex
	lost int
}

func (l *loseCreate) RoundTrip(r *http.Request) (*http.Response, error) {
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

// TestAnthropicSubmitAfterALostCreate: an attempt whose create reached Anthropic but whose answer was lost is
// followed by one with the same recorded intent, which adopts that batch instead of creating a second one; the
// next chunk, of as many requests, is created, since the run knows the first one's id; and a submission that
// could be either of two unknown batches is refused, not guessed, and not retried.
func TestAnthropicSubmitAfterALostCreate(t *testing.T) {
	h := newBatchHarness(t, sim.BatchConfig{})
	lose := &loseCreate{}
	h.acts.Models = llm.NewRegistry(&http.Client{Transport: lose}, anthropicKeys, "")
	_, batchSpec := h.anthropicSpecs(2, 5, 5) // 10 cells: two chunks of 5
	h.save("run", batchSpec)
	pass := batchSpec.Passes()[0]
	plan := run[wire.BatchPlan](h, h.acts.PlanBatchPass, wire.BatchPassInput{RunID: "run", Pass: pass})
	if len(plan.Chunks) != 2 || plan.Chunks[0].Len() != plan.Chunks[1].Len() {
		t.Fatalf("plan %+v, want two chunks of one size", plan)
	}
	intent := h.clk.Now()
	first := wire.BatchChunkInput{RunID: "run", Pass: pass, Chunk: 0, Cells: plan.Chunks[0], Intent: intent}
	if _, err := h.env.ExecuteActivity(h.acts.SubmitBatch, first); err == nil || lose.lost != 1 {
		t.Fatalf("first attempt: %v (answers lost: %d), want the create's lost answer", err, lose.lost)
	}
	if n := len(h.sim.Batches()); n != 1 {
		t.Fatalf("%d batches after the lost create, want the one it made", n)
	}
	adopted := run[wire.BatchInfo](h, h.acts.SubmitBatch, first)
	if bs := h.sim.Batches(); len(bs) != 1 || adopted.ID != bs[0].ID {
		t.Fatalf("the retry returned %s; batches %+v; want the first attempt's batch adopted and none created", adopted.ID, bs)
	}

	second := wire.BatchChunkInput{RunID: "run", Pass: pass, Chunk: 1, Cells: plan.Chunks[1], Intent: intent, Known: []string{adopted.ID}}
	other := run[wire.BatchInfo](h, h.acts.SubmitBatch, second)
	if bs := h.sim.Batches(); len(bs) != 2 || other.ID == adopted.ID || bs[1].ID != other.ID {
		t.Fatalf("chunk 1 got %s; batches %+v; want a batch of its own", other.ID, bs)
	}
	// Chunk 1's batch collected as chunk 0's: its results are not chunk 0's requests, refused for good.
	wrong := run[wire.BatchInfo](h, h.acts.PollBatch, wire.BatchRef{RunID: "run", ID: other.ID})
	_, err := h.env.ExecuteActivity(h.acts.CollectBatch, wire.BatchCollectInput{BatchChunkInput: first, Batch: wrong})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || len(h.records("run")) != 0 {
		t.Errorf("collecting another chunk's batch: %v with %d records, want a non-retryable refusal and nothing recorded", err, len(h.records("run")))
	}
	for _, in := range []wire.BatchChunkInput{first, second} {
		info := run[wire.BatchInfo](h, h.acts.PollBatch, wire.BatchRef{RunID: "run", ID: map[int]string{0: adopted.ID, 1: other.ID}[in.Chunk]})
		if got := run[wire.BatchCollected](h, h.acts.CollectBatch, wire.BatchCollectInput{BatchChunkInput: in, Batch: info}); got.Recorded != 5 || got.Again.Len() != 0 {
			t.Errorf("chunk %d collected %+v, want its 5 cells", in.Chunk, got)
		}
	}
	if n := len(h.records("run")); n != 10 {
		t.Errorf("%d records, want every cell once", n)
	}

	// Not knowing the first chunk's batch, chunk 1 could be either: refused, and not to be retried.
	second.Known = nil
	_, err = h.env.ExecuteActivity(h.acts.SubmitBatch, second)
	if !errors.As(err, &app) || !app.NonRetryable() || app.Type() != errclass.BatchRefused || !strings.Contains(err.Error(), "more than one batch") {
		t.Errorf("an ambiguous submission: %v, want a non-retryable %s error", err, errclass.BatchRefused)
	}
	// Without an intent there is nothing to find a lost create by: refused before anything is sent.
	second.Intent = time.Time{}
	if _, err := h.env.ExecuteActivity(h.acts.SubmitBatch, second); !errors.As(err, &app) || !app.NonRetryable() || len(h.sim.Batches()) != 2 {
		t.Errorf("a submission without an intent: %v with %d batches, want refused before any create", err, len(h.sim.Batches()))
	}
}
