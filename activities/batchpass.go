package activities

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/batchapi"
	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// The activities of a batch pass. A batch pass is one (model, seed) whose model runs in batch mode; the workflow
// that drives it (workflows/batchpass.go) calls PlanBatchPass once and records the plan, then for each chunk
// SubmitBatch, AwaitBatch until the batch is terminal (batchawait.go: one long activity per status the batch goes
// through, polling inside; runs recorded before call PollBatch between durable timers), CollectBatch, and
// CleanupBatch (batchcleanup.go), submitting what comes back as Again in the next round; CancelBatch when the run
// is cancelled, and AwaitBatch again until the provider ended the batch; CollectCandidates when an Anthropic
// submission found several batches that could be its own. Each activity but AwaitBatch is short, and all are
// idempotent: SubmitBatch creates at most one batch per (run, pass, chunk, round, try) however often it runs,
// AwaitBatch only reads, and CollectBatch records each line as the store records any cell, so running it again
// writes nothing new.
//
// Three formats run here: the OpenAI format (providers openai and sim: batchapi.OpenAI, whose batches carry their
// key in their metadata), Anthropic's Message Batches (provider anthropic: batchapi.Anthropic, whose batches
// carry none, so that a submission is found again by the intent the workflow recorded before it; see
// BatchChunkInput.Intent) and Gemini's Batch API (provider gemini: batchapi.Gemini, whose batches carry their key
// in their display name, and are submitted as the OpenAI format's are).

// passName is a pass's name in batch metadata: stable for a run.
func passName(spec *experiment.Spec, p experiment.Pass) string {
	return fmt.Sprintf("%s/%d/%d", spec.Models[p.Model].ID, spec.Seeds[p.Seed], p.Start)
}

// batchPricingOf is model m's batch price.
func batchPricingOf(m experiment.Model) batchPricing {
	p, ok := llm.BatchPriceFor(m)
	return batchPricing{price: p, priced: ok}
}

// batchDriver is what polling, cancelling and collecting need of a provider's batch API: batchapi.OpenAI,
// batchapi.Anthropic and batchapi.Gemini are batch drivers.
type batchDriver interface {
	Poll(ctx context.Context, id string) (wire.BatchInfo, error)
	Cancel(ctx context.Context, id string) (wire.BatchInfo, error)
	Collect(ctx context.Context, info wire.BatchInfo, fn func(batchformat.Result) error) error
	Cleanup(ctx context.Context, info wire.BatchInfo) error
}

// batchAPI is a model's batch API: its format, its driver, and the redaction of its client's key.
type batchAPI struct {
	format    wire.BatchFormat
	driver    batchDriver
	openAI    *batchapi.OpenAI    // set for the OpenAI format
	anthropic *batchapi.Anthropic // set for the Anthropic format
	gemini    *batchapi.Gemini    // set for the Gemini format
	redact    func(string) string
}

// batchAPIOf is model m's batch API, through the client of its endpoint.
func (a *Activities) batchAPIOf(m experiment.Model) (batchAPI, error) {
	switch f := formatOf(m); f {
	case wire.FormatAnthropic:
		c, err := a.Models.AnthropicClient(m)
		if err != nil {
			return batchAPI{}, refused(err)
		}
		d := batchapi.NewAnthropic(c)
		return batchAPI{format: f, driver: d, anthropic: d, redact: c.Redact}, nil
	case wire.FormatGemini:
		c, err := a.Models.GeminiClient(m)
		if err != nil {
			return batchAPI{}, refused(err)
		}
		d := batchapi.NewGemini(c)
		return batchAPI{format: f, driver: d, gemini: d, redact: c.Redact}, nil
	}
	c, err := a.Models.Client(m)
	if err != nil {
		return batchAPI{}, refused(err)
	}
	d := batchapi.NewOpenAI(c)
	return batchAPI{format: wire.FormatOpenAI, driver: d, openAI: d, redact: c.Redact}, nil
}

// refused makes the errors no retry can cure non-retryable: a chunk whose batch holds other requests, what
// batch mode cannot send, an Anthropic chunk that more than one batch could be (its candidates in the failure's
// details, wire.BatchCandidates), an endpoint whose uploads cannot be found again, results of another chunk's
// requests, and the provider's (or the worker's) refusals that are no transient failure (a missing key, an
// invalid request, an exhausted quota).
func refused(err error) error {
	var le *llm.Error
	var amb *batchapi.AmbiguousError
	if errors.As(err, &amb) {
		// The candidates go with the refusal, so that the workflow can wait for them and record its own.
		return temporal.NewNonRetryableApplicationError(err.Error(), errclass.BatchRefused, err,
			wire.BatchCandidates{IDs: amb.Candidates})
	}
	if errors.Is(err, batchapi.ErrChunkChanged) || errors.Is(err, batchapi.ErrAmbiguous) || errors.Is(err, batchapi.ErrNotFindable) ||
		errors.Is(err, errNoIntent) || errors.Is(err, errForeignResult) || (errors.As(err, &le) && !le.Class.Retryable()) {
		return temporal.NewNonRetryableApplicationError(err.Error(), errclass.BatchRefused, err)
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
// synchronous pass does, with the cost at the batch price counted as saved) and those no line can carry (a
// picture that cannot be fetched, a text too long, a request larger than a batch), and cuts the others into
// chunks. An embed pass serves its cached vectors first and packs the rest, as the synchronous embed pass does; a
// chat pass fetches its pictures first, since their digests are part of the cache keys.
func (a *Activities) PlanBatchPass(ctx context.Context, in wire.BatchPassInput) (wire.BatchPlan, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.BatchPlan{}, err
	}
	recs, err := a.Store.Records(ctx, in.RunID, in.Pass.Start, in.Pass.End)
	if err != nil {
		return wire.BatchPlan{}, fmt.Errorf("records of pass %d: %w", in.Pass.Index, err)
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
	b, err := a.batchBuilder(spec, in.Pass.Model)
	if err != nil {
		return wire.BatchPlan{}, refused(err)
	}
	m := spec.Models[in.Pass.Model]
	pr := batchPricingOf(m)
	reads := spec.CachePolicy(m).Reads()
	var settled store.Batch // the records written before any batch, and the cache's tallies
	tally := store.CacheTally{}
	if spec.IsEmbed() && reads {
		if cells, err = a.serveBatchVectors(ctx, b, cells, pr, &settled, &tally); err != nil {
			return wire.BatchPlan{}, err
		}
	}
	var reqs []batchRequest
	unsent, err := b.build(ctx, cells, func(r batchRequest) error {
		r.Line = nil // sized and digested: a plan of inline pictures must not hold them all
		reqs = append(reqs, r)
		return nil
	})
	if err != nil {
		return wire.BatchPlan{}, refused(err)
	}
	if !spec.IsEmbed() && reads && len(reqs) > 0 {
		if reqs, err = a.serveBatchAnswers(ctx, spec, reqs, pr, &settled, &tally); err != nil {
			return wire.BatchPlan{}, err
		}
	}
	var plan wire.BatchPlan
	plan.Cached = len(settled.Records)
	chunks, lines, tooBig, err := planBatchChunks(spec, reqs)
	if err != nil {
		return wire.BatchPlan{}, refused(err)
	}
	plan.Chunks, plan.Digests = chunks, make([]string, len(chunks))
	for i, ls := range lines {
		plan.Digests[i] = linesDigest(ls)
	}
	if spec.BudgetUSD > 0 {
		plan.Costs = make([]usage.USD, len(chunks))
		for i, ls := range lines {
			plan.Costs[i] = worstCost(spec, a.Tokenizer, ls)
		}
	}
	for _, u := range append(unsent, tooBig...) {
		settled.Records = append(settled.Records, u.rec)
	}
	plan.Failed = len(settled.Records) - plan.Cached
	if tally != (store.CacheTally{}) {
		settled.Tally = map[string]store.CacheTally{m.Name: tally}
	}
	for i := 0; i == 0 || i < len(settled.Records); i += collectPage {
		page := store.Batch{Records: settled.Records[i:min(len(settled.Records), i+collectPage)]}
		if i == 0 {
			page.Tally = settled.Tally // with the first page, or alone
		}
		if len(page.Records) == 0 && page.Tally == nil {
			break
		}
		if err := a.Store.Write(ctx, in.RunID, page); err != nil {
			return wire.BatchPlan{}, fmt.Errorf("record cells settled before any batch: %w", err)
		}
	}
	for _, r := range settled.Records {
		plan.Usage.Add(r.Usage())
	}
	plan.Format = formatOf(m)
	return plan, nil
}

// serveBatchAnswers adds the records of the chat requests the response cache answers to settled and returns the
// others.
func (a *Activities) serveBatchAnswers(ctx context.Context, spec *experiment.Spec, reqs []batchRequest, pr batchPricing,
	settled *store.Batch, tally *store.CacheTally) ([]batchRequest, error) {
	keys := make([]store.CacheKey, len(reqs))
	for i, r := range reqs {
		keys[i] = r.Key
	}
	found, err := respcache.Lookup(ctx, a.Store, keys)
	if err != nil {
		return nil, fmt.Errorf("response cache: %w", err)
	}
	left := reqs[:0:0]
	for _, r := range reqs {
		ans, ok := found.Answers[r.Key]
		if !ok {
			left = append(left, r)
			continue
		}
		rec := answerRecord(spec, r.Cell, ans, pr.price, pr.priced)
		rec.Cached = true
		r.Pics.stamp(&rec)
		settled.Records = append(settled.Records, rec)
		tally.Hits++
	}
	return left, nil
}

// serveBatchVectors adds the records of the embed cells whose vectors the response cache holds to settled and
// returns the others. An entry that fails validation is a miss, counted invalid, and replaced when the fresh
// vector is collected.
func (a *Activities) serveBatchVectors(ctx context.Context, b *batchBuilder, cells []int, pr batchPricing,
	settled *store.Batch, tally *store.CacheTally) ([]int, error) {
	endpoint := respcache.Endpoint(b.model)
	key := func(idx int) store.CacheKey {
		_, t := b.spec.EmbedCell(idx)
		return respcache.VectorKey(endpoint, b.model.Name, b.texts[t].Text, b.spec.Embed.Dimensions)
	}
	var keys []store.CacheKey
	seen := map[store.CacheKey]bool{}
	for _, idx := range cells {
		if k := key(idx); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	vs, err := lookupVectors(ctx, a.Store, keys, b.spec.Embed.Dimensions)
	if err != nil {
		return nil, fmt.Errorf("response cache: %w", err)
	}
	var rest []int
	for _, idx := range cells {
		k := key(idx)
		v, ok := vs.found[k]
		if !ok {
			if vs.invalid[k] != nil {
				tally.Invalid++
			}
			rest = append(rest, idx)
			continue
		}
		settled.Records = append(settled.Records, cachedVectorRecord(idx, v, pr.price, pr.priced))
		tally.Hits++
	}
	return rest, nil
}

// SubmitBatch makes sure the chunk's batch of this round exists and returns it: batchapi.OpenAI.Submit for the
// OpenAI format, batchapi.Anthropic.Submit with the recorded intent for Anthropic's. Its lines are built again from
// its cells, and must be those the plan built (BatchChunkInput.Digest).
func (a *Activities) SubmitBatch(ctx context.Context, in wire.BatchChunkInput) (wire.BatchInfo, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.BatchInfo{}, err
	}
	m := spec.Models[in.Pass.Model]
	api, err := a.batchAPIOf(m)
	if err != nil {
		return wire.BatchInfo{}, err
	}
	if api.format == wire.FormatAnthropic && in.Intent.IsZero() {
		return wire.BatchInfo{}, refused(errNoIntent)
	}
	reqs, err := a.chunkRequests(ctx, spec, in)
	if err != nil {
		return wire.BatchInfo{}, refused(err)
	}
	input := chunkInput(api.format, reqs)
	key := batchformat.Key{Run: in.RunID, Pass: passName(spec, in.Pass), Chunk: in.Chunk, Round: in.Round, Try: in.Try}
	var info wire.BatchInfo
	switch api.format {
	case wire.FormatAnthropic:
		info, err = api.anthropic.Submit(ctx, batchapi.AnthropicSubmission{Input: input, Requests: len(reqs),
			Intent: in.Intent, Known: in.Known})
	case wire.FormatGemini:
		// A later attempt may follow one that created the batch and died before it learnt so.
		info, err = api.gemini.Submit(ctx, batchapi.GeminiSubmission{
			Key: key, Model: m.Name, Input: input, Since: in.Since, Resumed: activity.GetInfo(ctx).Attempt > 1})
	default:
		info, err = api.openAI.Submit(ctx, batchapi.Submission{
			Key: key, Endpoint: batchEndpoint(spec), Input: input, Since: in.Since, Prior: in.Known})
	}
	return info, refused(err)
}

// chunkRequests builds the lines of a chunk's cells again, as its plan built them.
func (a *Activities) chunkRequests(ctx context.Context, spec *experiment.Spec, in wire.BatchChunkInput) ([]batchRequest, error) {
	b, err := a.batchBuilder(spec, in.Pass.Model)
	if err != nil {
		return nil, err
	}
	reqs, err := b.batchRequests(ctx, in.Cells.Indexes(), in.Digest)
	if err != nil {
		return nil, fmt.Errorf("chunk %d round %d: %w", in.Chunk, in.Round, err)
	}
	return reqs, nil
}

// PollBatch returns the batch as it stands.
func (a *Activities) PollBatch(ctx context.Context, in wire.BatchRef) (wire.BatchInfo, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.BatchInfo{}, err
	}
	api, err := a.batchAPIOf(spec.Models[in.Model])
	if err != nil {
		return wire.BatchInfo{}, err
	}
	return api.driver.Poll(ctx, in.ID)
}

// CancelBatch asks for the batch to be cancelled and returns it.
func (a *Activities) CancelBatch(ctx context.Context, in wire.BatchRef) (wire.BatchInfo, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.BatchInfo{}, err
	}
	api, err := a.batchAPIOf(spec.Models[in.Model])
	if err != nil {
		return wire.BatchInfo{}, err
	}
	return api.driver.Cancel(ctx, in.ID)
}

// collectPage is how many records CollectBatch writes in one transaction.
const collectPage = 500

// CollectBatch records every result of a terminal batch as the synchronous pass records a call's (see
// batchResultOutcome and embedResultOutcome), with its answer in the response cache when the model's policy
// writes, and returns the cells to submit again: those that never ran or failed transiently, and those the
// results do not mention. A batch the provider failed as a whole has no results: the cells of the lines its
// errors name are recorded failed with the provider's reason (rejectedLines), the others are submitted again. The chunk's lines are built again and must be those submitted (the digest of
// BatchChunkInput): a result is recorded only under the keys and picture digests of the request that got it.
func (a *Activities) CollectBatch(ctx context.Context, in wire.BatchCollectInput) (wire.BatchCollected, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.BatchCollected{}, err
	}
	m := spec.Models[in.Pass.Model]
	api, err := a.batchAPIOf(m)
	if err != nil {
		return wire.BatchCollected{}, err
	}
	reqs, err := a.chunkRequests(ctx, spec, in.BatchChunkInput)
	if err != nil {
		return wire.BatchCollected{}, refused(err)
	}
	out, err := a.record(ctx, spec, api, in.BatchChunkInput, reqs, []wire.BatchInfo{in.Batch})
	return out, refused(err)
}

// CollectCandidates records the results of the terminal batches an Anthropic submission could not tell apart
// (wire.BatchCandidates) that are the chunk's, as CollectBatch records one batch's, and returns the cells to
// submit again. A candidate is the chunk's when every one of its results is for a request of the chunk (custom ids
// are the cells' ids): each candidate's results are read once to tell, and nothing of a candidate with any other
// result is recorded. Several candidates can be the chunk's (a stale create landing late, another run of the same
// spec): the answers of all of them are recorded, a cell answered by several once, by the first of them in id
// order whose result settles it (one to be sent again leaves it to the next), so that the records do not depend on
// the order results come in; the chunk is not
// submitted again for a cell any of them answered. The candidates recorded are BatchCollected.Adopted.
func (a *Activities) CollectCandidates(ctx context.Context, in wire.BatchCandidatesInput) (wire.BatchCollected, error) {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.BatchCollected{}, err
	}
	api, err := a.batchAPIOf(spec.Models[in.Pass.Model])
	if err != nil {
		return wire.BatchCollected{}, err
	}
	reqs, err := a.chunkRequests(ctx, spec, in.BatchChunkInput)
	if err != nil {
		return wire.BatchCollected{}, refused(err)
	}
	ids := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		ids[r.CustomID] = true
	}
	batches := slices.Clone(in.Batches)
	slices.SortFunc(batches, func(x, y wire.BatchInfo) int { return strings.Compare(x.ID, y.ID) })
	var ours []wire.BatchInfo
	for _, b := range batches {
		err := api.driver.Collect(ctx, b, func(r batchformat.Result) error {
			if !ids[r.CustomID] {
				return errForeignResult
			}
			return nil
		})
		switch {
		case errors.Is(err, errForeignResult):
			continue // another client's batch: none of it is ours to record
		case err != nil:
			return wire.BatchCollected{}, fmt.Errorf("read candidate batch %s: %w", b.ID, err)
		}
		ours = append(ours, b)
	}
	out, err := a.record(ctx, spec, api, in.BatchChunkInput, reqs, ours)
	if err != nil {
		return wire.BatchCollected{}, refused(err)
	}
	for _, b := range ours {
		out.Adopted = append(out.Adopted, b.ID)
	}
	return out, nil
}

// record records the results of the terminal batches of a chunk whose requests are reqs, in order, each request's
// first result that answers it (one that is to be sent again leaves it to a later batch), and returns what it
// recorded and the cells no batch answered: those that never ran or failed transiently, and those the results do
// not mention, with the most frequent reason among them (AgainReason). A result line that could not be read
// records its request's cells BatchUnreadable; one that names no request is skipped, and its cell goes again. A
// result for a request that is not of the chunk is errForeignResult.
func (a *Activities) record(ctx context.Context, spec *experiment.Spec, api batchAPI, in wire.BatchChunkInput,
	reqs []batchRequest, batches []wire.BatchInfo) (wire.BatchCollected, error) {
	m := spec.Models[in.Pass.Model]
	byID := make(map[string]int, len(reqs))
	for i, r := range reqs {
		byID[r.CustomID] = i
	}
	answered := make([]bool, len(reqs))
	pr := batchPricingOf(m)
	writes := spec.CachePolicy(m).Writes()
	now := time.Now()
	if a.Clock != nil {
		now = a.Clock.Now()
	}
	vectors := &embedState{} // checks an embed pass's vectors as the synchronous pass does
	if spec.Embed != nil {
		vectors.dims = spec.Embed.Dimensions
	}
	var out wire.BatchCollected
	var page store.Batch
	again := make(map[int]string) // why each request to be sent again is, by its index in reqs
	unnamed := 0                  // unreadable results that name no request
	for _, b := range batches {
		flush := func() error {
			if len(page.Records) == 0 {
				return nil
			}
			if err := a.Store.Write(ctx, in.RunID, page); err != nil {
				return fmt.Errorf("record batch %s: %w", b.ID, err)
			}
			page = store.Batch{}
			return nil
		}
		add := func(rec store.Record) {
			page.Records = append(page.Records, rec)
			out.Usage.Add(rec.Usage())
			if rec.Status == store.StatusFailed {
				out.Failed++
			}
			out.Recorded++
		}
		latency := 0.0
		if !b.CreatedAt.IsZero() {
			latency = float64(now.Sub(b.CreatedAt).Microseconds()) / 1000
		}
		err := api.driver.Collect(ctx, b, func(r batchformat.Result) error {
			if r.Outcome == batchformat.Unreadable && r.CustomID == "" {
				unnamed++ // a line that names no request it can be matched to: its cell is not answered
				return nil
			}
			i, ok := byID[r.CustomID]
			if !ok {
				return fmt.Errorf("%w: batch %s: result for %q", errForeignResult, b.ID, r.CustomID)
			}
			if answered[i] {
				return nil // a line given twice, or answered by an earlier batch, counts once
			}
			req := reqs[i]
			if req.Embed != nil {
				o := embedResultOutcome(req, r, vectors.check, pr, in.Round+1, latency)
				if o.Again {
					again[i] = o.Reason
					return nil
				}
				answered[i] = true
				for _, rec := range o.Records {
					add(rec)
				}
				for _, k := range o.Keep {
					if writes {
						page.Cache = append(page.Cache, respcache.VectorEntry(req.Keys[k.Text], m.Name, in.RunID, k.Vector, now))
					}
				}
			} else {
				o := batchResultOutcome(spec, req.Cell, api.format, r, pr, api.redact, in.Round+1, latency)
				if o.Again {
					again[i] = o.Reason
					return nil
				}
				answered[i] = true
				if o.Answer != nil {
					req.Pics.stamp(o.Record) // as the synchronous pass stamps an answer
				}
				add(*o.Record)
				if o.Answer != nil && writes {
					page.Cache = append(page.Cache, respcache.Entry(req.Key, m.Name, in.RunID, *o.Answer, now))
				}
			}
			if len(page.Records) >= collectPage {
				return flush()
			}
			return nil
		})
		if err == nil && b.Status == wire.BatchStatusFailed {
			// A batch failed as a whole ran nothing; the lines its errors name fail their cells.
			for _, rec := range rejectedLines(b, reqs, answered, api.redact, in.Round+1) {
				add(rec)
			}
		}
		if err == nil {
			err = flush()
		}
		if err != nil {
			return wire.BatchCollected{}, err
		}
	}
	var cells []int
	reasons := map[string]int{}
	for i, r := range reqs {
		if answered[i] {
			continue
		}
		cells = append(cells, r.cells()...) // not answered: never ran, or to be sent again
		why, ok := again[i]
		switch {
		case ok:
		case unnamed > 0:
			why = "unreadable_result" // the results do not mention it, and some of them named nothing readable
		default:
			why = "missing"
		}
		reasons[why]++
	}
	slices.Sort(cells)
	out.Again = experiment.CellsOf(cells...)
	out.AgainReason = mostFrequent(reasons)
	if len(cells) > 0 {
		next, err := a.againLines(ctx, spec, in.Pass.Model, reqs, cells)
		if err != nil {
			return wire.BatchCollected{}, err
		}
		out.AgainDigest, out.AgainCost = linesDigest(next), worstCost(spec, a.Tokenizer, next)
	}
	return out, nil
}

// mostFrequent is the key of n with the largest count, the first in name order among equals; "" when n is empty.
func mostFrequent(n map[string]int) string {
	best := ""
	for _, k := range slices.Sorted(maps.Keys(n)) {
		if best == "" || n[k] > n[best] {
			best = k
		}
	}
	return best
}

// againLines are the lines of the cells to submit again (ascending), as the next round will build them: a chat
// cell's line is the one it had; embeddings texts are packed again, since their requests change when some are
// answered.
func (a *Activities) againLines(ctx context.Context, spec *experiment.Spec, model int, reqs []batchRequest, again []int) ([]batchRequest, error) {
	if !spec.IsEmbed() {
		set := make(map[int]bool, len(again))
		for _, c := range again {
			set[c] = true
		}
		var sub []batchRequest
		for _, r := range reqs {
			if set[r.Cell.Index] {
				sub = append(sub, r)
			}
		}
		return sub, nil
	}
	b, err := a.batchBuilder(spec, model)
	if err != nil {
		return nil, err
	}
	next, err := b.batchRequests(ctx, again, "")
	if err != nil {
		return nil, fmt.Errorf("the cells to submit again: %w", err)
	}
	return next, nil
}
