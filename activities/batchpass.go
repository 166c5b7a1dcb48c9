package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/batch"
	"github.com/silicolab/silico/batchapi"
	"github.com/silicolab/silico/cache"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

// The activities of a batch pass. A batch pass is one (model, seed) whose model runs in batch mode; the workflow
// that drives it (workflows/batchpass.go) calls PlanBatchPass once and records the plan, then for each chunk
// SubmitBatch, PollBatch between durable timers until the batch is terminal, and CollectBatch, submitting what
// comes back as Again in the next round; CancelBatch when the run is cancelled. Each activity is short and
// idempotent: SubmitBatch creates at most one batch per (run, pass, chunk, round) however often it runs, and
// CollectBatch records each line as the store records any cell, so running it again writes nothing new.
//
// Both formats run here: the OpenAI format (providers openai and sim: batchapi.OpenAI, whose batches carry their
// key in their metadata) and Anthropic's Message Batches (provider anthropic: batchapi.Anthropic, whose batches
// carry none, so that a submission is found again by the intent the workflow recorded before it; see
// BatchChunkInput.Intent).

// BatchPassInput names a batch pass of a run.
type BatchPassInput struct {
	RunID string          `json:"run_id"`
	Pass  experiment.Pass `json:"pass"`
}

// BatchPlan is what PlanBatchPass decided: the cells of each chunk, in order, how many cells the response cache
// answered (recorded at once), and the batch format of the pass's model, which says how the workflow submits.
// Chunks are sets of spans, so the plan of a million cells is a few bytes of
// history, not megabytes (Temporal refuses a payload over 2 MiB).
type BatchPlan struct {
	Chunks []experiment.CellSet `json:"chunks"`
	Cached int                  `json:"cached"`
	// Costs are the chunks' worst-case costs at the batch price, which the workflow reserves against budget_usd
	// before it submits each: every prompt and the longest completion. Empty when the run has no budget.
	Costs []float64 `json:"costs,omitempty"`
	// Format is the model's batch format; empty in plans recorded before it was part of the plan, which were all
	// of the OpenAI format.
	Format batch.Format `json:"format,omitempty"`
}

// BatchChunkInput names one chunk's batch of one round: the cells it asks for, as the recorded plan (or the
// previous round's Again) lists them.
type BatchChunkInput struct {
	RunID string             `json:"run_id"`
	Pass  experiment.Pass    `json:"pass"`
	Chunk int                `json:"chunk"`
	Round int                `json:"round"`
	Cells experiment.CellSet `json:"cells"`
	// Since is the run's start: no batch of this run is older, which bounds the listing SubmitBatch makes.
	Since time.Time `json:"since"`
	// Intent is when the workflow decided to submit this chunk's round, recorded in the history as part of this
	// input before any attempt runs: every attempt of the submission gets the same one. Anthropic's batches carry
	// no metadata, so an attempt that follows one that died after its create (before the batch's id was known)
	// adopts the batch created since the intent with as many requests, instead of paying for a second one. The
	// workflow submits one Anthropic chunk at a time, so that no other chunk of the run is created meanwhile.
	// Required for the Anthropic format, unused by the OpenAI format (its batches carry their key).
	Intent time.Time `json:"intent,omitzero"`
	// Known are the ids of the Anthropic batches the run has adopted so far, which are never this chunk's.
	Known []string `json:"known,omitempty"`
}

// BatchRef names a batch of a model of a run.
type BatchRef struct {
	RunID string `json:"run_id"`
	Model int    `json:"model"`
	ID    string `json:"id"`
}

// BatchCollectInput is a chunk and the terminal batch whose results to record.
type BatchCollectInput struct {
	BatchChunkInput
	Batch batch.Info `json:"batch"`
}

// BatchCollected is what CollectBatch recorded, and the cells to submit again.
type BatchCollected struct {
	Recorded int                `json:"recorded"`
	Failed   int                `json:"failed"`
	Again    experiment.CellSet `json:"again,omitempty"`
	// AgainCost is the worst-case cost of the Again cells, as BatchPlan.Costs; zero without a budget.
	AgainCost float64 `json:"again_cost,omitempty"`
	// Usage is what the recorded cells consumed, at the batch price.
	Usage usage.Usage `json:"usage"`
}

// ClassBatch is the error type of a batch pass that cannot go on: the provider holds a batch of the chunk with
// other requests, or the spec asks for what batch mode cannot send.
const ClassBatch = "BatchRefused"

// ClassBatchNotRun is the error class of a cell the provider's batches never ran in run.max_attempts
// submissions (they expired or were cancelled by the provider each time).
const ClassBatchNotRun = "BatchNotRun"

// passName is a pass's name in batch metadata: stable for a run.
func passName(spec *experiment.Spec, p experiment.Pass) string {
	return fmt.Sprintf("%s/%d/%d", spec.Models[p.Model].ID, spec.Seeds[p.Seed], p.Start)
}

// batchPricingOf is model m's batch price.
func batchPricingOf(m experiment.Model) batchPricing {
	p, ok := llm.BatchPriceFor(m)
	return batchPricing{price: p, priced: ok}
}

// batchDriver is what polling, cancelling and collecting need of a provider's batch API: batchapi.OpenAI and
// batchapi.Anthropic are batch drivers.
type batchDriver interface {
	Poll(ctx context.Context, id string) (batch.Info, error)
	Cancel(ctx context.Context, id string) (batch.Info, error)
	Collect(ctx context.Context, info batch.Info, fn func(batch.Result) error) error
}

// batchAPI is a model's batch API: its format, its driver, and the redaction of its client's key.
type batchAPI struct {
	format    batch.Format
	driver    batchDriver
	openAI    *batchapi.OpenAI    // set for the OpenAI format
	anthropic *batchapi.Anthropic // set for the Anthropic format
	redact    func(string) string
}

// batchAPIOf is model m's batch API, through the client of its endpoint.
func (a *Activities) batchAPIOf(m experiment.Model) (batchAPI, error) {
	if f := formatOf(m); f == batch.FormatAnthropic {
		c, err := a.Models.AnthropicClient(m)
		if err != nil {
			return batchAPI{}, refused(err)
		}
		d := batchapi.NewAnthropic(c)
		return batchAPI{format: f, driver: d, anthropic: d, redact: c.Redact}, nil
	}
	c, err := a.Models.Client(m)
	if err != nil {
		return batchAPI{}, refused(err)
	}
	d := batchapi.NewOpenAI(c)
	return batchAPI{format: batch.FormatOpenAI, driver: d, openAI: d, redact: c.Redact}, nil
}

// refused makes the errors no retry can cure non-retryable: a chunk whose batch holds other requests, what
// batch mode cannot send, an Anthropic chunk that more than one batch could be, results of another chunk's
// requests, and the provider's (or the worker's) refusals that are no transient failure (a missing key, an
// invalid request, an exhausted quota).
func refused(err error) error {
	var le *llm.Error
	if errors.Is(err, batchapi.ErrChunkChanged) || errors.Is(err, errBatchPictures) || errors.Is(err, batchapi.ErrAmbiguous) ||
		errors.Is(err, errNoIntent) || errors.Is(err, errForeignResult) || (errors.As(err, &le) && !le.Class.Retryable()) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ClassBatch, err)
	}
	return err
}

// errForeignResult is a batch result for a request the chunk does not have: the batch is not the chunk's, and its
// answers must not be recorded as the chunk's.
var errForeignResult = errors.New("batch: a result for a request that is not of this chunk")

// errNoIntent refuses an Anthropic submission whose input records no intent: without one, an attempt after a
// create whose answer was lost would create the batch again.
var errNoIntent = errors.New("batch: an Anthropic submission needs the intent the workflow recorded before it")

// PlanBatchPass finds the pass's cells without a record, records those the response cache answers (as a
// synchronous pass does, with the cost at the batch price counted as saved) and cuts the others into chunks.
func (a *Activities) PlanBatchPass(ctx context.Context, in BatchPassInput) (BatchPlan, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return BatchPlan{}, err
	}
	recs, err := a.Store.Records(ctx, in.RunID, in.Pass.Start, in.Pass.End)
	if err != nil {
		return BatchPlan{}, fmt.Errorf("records of pass %d: %w", in.Pass.Index, err)
	}
	done := make(map[int]bool, len(recs))
	for _, r := range recs {
		done[r.Index] = true
	}
	var cells []int
	for i := in.Pass.Start; i < in.Pass.End; i++ {
		if !done[i] {
			cells = append(cells, i)
		}
	}
	reqs, err := batchRequests(spec, cells)
	if err != nil {
		return BatchPlan{}, refused(err)
	}
	m := spec.Models[in.Pass.Model]
	var plan BatchPlan
	if spec.CachePolicy(m).Reads() && len(reqs) > 0 {
		keys := make([]store.CacheKey, len(reqs))
		for i, r := range reqs {
			keys[i] = r.Key
		}
		found, err := cache.Lookup(ctx, a.Store, keys)
		if err != nil {
			return BatchPlan{}, fmt.Errorf("response cache: %w", err)
		}
		var served []store.Record
		left := reqs[:0:0]
		pr := batchPricingOf(m)
		for _, r := range reqs {
			ans, ok := found.Answers[r.Key]
			if !ok {
				left = append(left, r)
				continue
			}
			m := experiment.Match(ans.Text, spec.OptionsFor(r.Cell.Item))
			rec := store.Record{Index: r.Cell.Index, Status: m.Status, OptionID: m.OptionID, Raw: ans.Text,
				Candidates: strings.Join(m.Candidates, ","), PromptTokens: ans.PromptTokens,
				CompletionTokens: ans.CompletionTokens, Cached: true}
			if pr.priced {
				rec.CostUSD = llm.Cost(pr.price, ans.PromptTokens, ans.CompletionTokens)
			}
			served = append(served, rec)
		}
		if len(served) > 0 {
			tally := map[string]store.CacheTally{m.Name: {Hits: len(served)}}
			if err := a.Store.Write(ctx, in.RunID, store.Batch{Records: served, Tally: tally}); err != nil {
				return BatchPlan{}, fmt.Errorf("record cached cells: %w", err)
			}
		}
		plan.Cached = len(served)
		reqs = left
	}
	if plan.Chunks, err = planBatchChunks(spec, reqs); err != nil {
		return BatchPlan{}, refused(err)
	}
	if spec.BudgetUSD > 0 {
		// The chunks cut reqs in order, one after the other.
		plan.Costs = make([]float64, len(plan.Chunks))
		at := 0
		for i, ch := range plan.Chunks {
			plan.Costs[i] = worstCost(spec, a.Tokenizer, reqs[at:at+ch.Len()])
			at += ch.Len()
		}
	}
	plan.Format = formatOf(m)
	return plan, nil
}

// SubmitBatch makes sure the chunk's batch of this round exists and returns it: batchapi.OpenAI.Submit for the
// OpenAI format, batchapi.Anthropic.Submit with the recorded intent for Anthropic's.
func (a *Activities) SubmitBatch(ctx context.Context, in BatchChunkInput) (batch.Info, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return batch.Info{}, err
	}
	m := spec.Models[in.Pass.Model]
	api, err := a.batchAPIOf(m)
	if err != nil {
		return batch.Info{}, err
	}
	if api.format == batch.FormatAnthropic && in.Intent.IsZero() {
		return batch.Info{}, refused(errNoIntent)
	}
	reqs, err := batchRequests(spec, in.Cells.Indexes())
	if err != nil {
		return batch.Info{}, refused(err)
	}
	input := chunkInput(api.format, reqs)
	var info batch.Info
	if api.format == batch.FormatAnthropic {
		info, err = api.anthropic.Submit(ctx, batchapi.AnthropicSubmission{Input: input, Requests: len(reqs),
			Intent: in.Intent, Known: in.Known})
	} else {
		info, err = api.openAI.Submit(ctx, batchapi.Submission{
			Key:      batch.Key{Run: in.RunID, Pass: passName(spec, in.Pass), Chunk: in.Chunk, Round: in.Round},
			Endpoint: batch.EndpointChat, Input: input, Since: in.Since})
	}
	return info, refused(err)
}

// PollBatch returns the batch as it stands.
func (a *Activities) PollBatch(ctx context.Context, in BatchRef) (batch.Info, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return batch.Info{}, err
	}
	api, err := a.batchAPIOf(spec.Models[in.Model])
	if err != nil {
		return batch.Info{}, err
	}
	return api.driver.Poll(ctx, in.ID)
}

// CancelBatch asks for the batch to be cancelled and returns it.
func (a *Activities) CancelBatch(ctx context.Context, in BatchRef) (batch.Info, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return batch.Info{}, err
	}
	api, err := a.batchAPIOf(spec.Models[in.Model])
	if err != nil {
		return batch.Info{}, err
	}
	return api.driver.Cancel(ctx, in.ID)
}

// collectPage is how many records CollectBatch writes in one transaction.
const collectPage = 500

// CollectBatch records every result of a terminal batch as the synchronous pass records a call's (see
// batchResultOutcome), with its answer in the response cache when the model's policy writes, and returns the
// cells to submit again: those that never ran or failed transiently, and those the results do not mention.
func (a *Activities) CollectBatch(ctx context.Context, in BatchCollectInput) (BatchCollected, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return BatchCollected{}, err
	}
	m := spec.Models[in.Pass.Model]
	api, err := a.batchAPIOf(m)
	if err != nil {
		return BatchCollected{}, err
	}
	reqs, err := batchRequests(spec, in.Cells.Indexes())
	if err != nil {
		return BatchCollected{}, refused(err)
	}
	byID := make(map[string]batchRequest, len(reqs))
	for _, r := range reqs {
		byID[r.CustomID] = r
	}
	seen := make(map[string]bool, len(reqs))
	pr := batchPricingOf(m)
	writes := spec.CachePolicy(m).Writes()
	now := time.Now()
	if a.Clock != nil {
		now = a.Clock.Now()
	}
	latency := 0.0
	if !in.Batch.CreatedAt.IsZero() {
		latency = float64(now.Sub(in.Batch.CreatedAt).Microseconds()) / 1000
	}
	var out BatchCollected
	var again []int
	var page store.Batch
	flush := func() error {
		if len(page.Records) == 0 {
			return nil
		}
		if err := a.Store.Write(ctx, in.RunID, page); err != nil {
			return fmt.Errorf("record batch %s: %w", in.Batch.ID, err)
		}
		page = store.Batch{}
		return nil
	}
	err = api.driver.Collect(ctx, in.Batch, func(r batch.Result) error {
		req, ok := byID[r.CustomID]
		if !ok {
			return fmt.Errorf("%w: batch %s: result for %q", errForeignResult, in.Batch.ID, r.CustomID)
		}
		if seen[r.CustomID] {
			return nil // a line given twice counts once
		}
		seen[r.CustomID] = true
		o := batchResultOutcome(spec, req.Cell, api.format, r, pr, api.redact, in.Round+1, latency)
		if o.Again {
			again = append(again, req.Cell.Index)
			return nil
		}
		page.Records = append(page.Records, *o.Record)
		out.Usage.Add(o.Record.Usage())
		if o.Record.Status == store.StatusFailed {
			out.Failed++
		}
		out.Recorded++
		if o.Answer != nil && writes {
			page.Cache = append(page.Cache, cache.Entry(req.Key, m.Name, in.RunID, *o.Answer, now))
		}
		if len(page.Records) >= collectPage {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return BatchCollected{}, refused(err)
	}
	for _, r := range reqs {
		if !seen[r.CustomID] {
			again = append(again, r.Cell.Index) // not in the results: never ran
		}
	}
	slices.Sort(again)
	out.Again = experiment.CellsOf(again...)
	if len(again) > 0 && spec.BudgetUSD > 0 {
		left := make([]batchRequest, 0, len(again))
		for _, r := range reqs {
			if _, ok := slices.BinarySearch(again, r.Cell.Index); ok {
				left = append(left, r)
			}
		}
		out.AgainCost = worstCost(spec, a.Tokenizer, left)
	}
	return out, nil
}
