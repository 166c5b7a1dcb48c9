package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"

	"github.com/silicolab/silico/cache"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

// PassInput is one RunSeedPass: a range of cells of one (model, seed) and this pass's share of the model's limits
// and of the run's budget.
type PassInput struct {
	RunID string
	Pass  experiment.Pass
	// Limits is this pass's share of its model's limits; Concurrency is already capped by run.max_concurrency.
	Limits ratelimit.Limits
	// Budgeted says the run has a budget; BudgetUSD is then this pass's share of it.
	Budgeted  bool
	BudgetUSD float64
	// ModelAnswered says an earlier pass of the model got answers: its endpoint is known to exist, so a refused
	// connection is an outage to wait out, not a wrong base_url to fail fast on.
	ModelAnswered bool `json:",omitempty"`
}

// PassResult counts what a pass did. Cells already finished by an earlier attempt count as Done too.
type PassResult struct {
	Pass     int
	Cells    int
	Done     int
	OK       int
	Unparsed int
	Failed   int
	// Called is the number of requests this attempt sent; Retried the failed requests (rate limits included)
	// that were tried again, over all attempts.
	Called  int
	Retried int
	// Cached counts the cells answered from the response cache, over all attempts.
	Cached int
	// BudgetExhausted says the pass stopped because its next call could have exceeded its share of the budget;
	// its unfinished cells are recorded as failed with ClassBudgetExhausted.
	BudgetExhausted bool
	// FirstFailure is the lowest index of a failed cell of the pass, -1 when none failed.
	FirstFailure int
	FirstError   string
	// Usage adds up the cells finished in this pass over all attempts.
	usage.Usage
}

// Progress is the heartbeat detail of RunSeedPass; a retried attempt starts from the last one recorded.
type Progress struct {
	Pass    int
	Cells   int
	Done    int
	Failed  int
	Retried int
	Cached  int
	usage.Usage
	// Tries are the tries used so far by the unfinished cells that failed.
	Tries map[int]Tries `json:",omitempty"`
	// Answered says the model's endpoint answered at least once in this pass.
	Answered bool `json:",omitempty"`
	// LastFinished is when a cell last finished, or the pass first started: the stall timeout counts from it.
	LastFinished time.Time
	// Storms counts the attempts in a row that ended in a storm of failures without finishing a cell.
	Storms int `json:",omitempty"`
	// LastClass and LastMessage are the last failure seen, the reason recorded when the pass gives up.
	LastClass   string `json:",omitempty"`
	LastMessage string `json:",omitempty"`
}

// RunSeedPass calls every unfinished cell of the pass, concurrently within the pass's limits, and writes each
// result to the store as it lands. The next attempt of a pass skips every finished cell.
//
// Failures are handled by what they mean (see health): a transient failure of one cell (server error, transport
// error, timeout, malformed body) is tried again inside the attempt after a short delay, until the cell has used
// run.max_attempts tries and is recorded failed with its last class and message. A rate limit pauses the pass
// for Retry-After and lowers its concurrency; it never uses up a cell's tries. When many cells fail one after the
// other (a storm) the attempt ends with a retryable error of the failure's class, and Temporal's retry policy
// backs the pass off. An endpoint that never answered is given up after a few seconds (Unreachable), a pass in
// which nothing finished for run.stall_timeout is given up (Stalled), and Auth and QuotaExhausted end the model
// at once; in those cases every unfinished cell is recorded with the reason.
//
// Calls in flight are never cancelled by the attempt's context: a heartbeat that fails while the Temporal server
// restarts, or a cancelled workflow, stops the dispatch of new calls, and the calls already sent land and are
// recorded, since the results store does not need the server. Each call is bounded by run.call_timeout.
func (a *Activities) RunSeedPass(ctx context.Context, in PassInput) (PassResult, error) {
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return PassResult{}, appError(ClassInternal, true, 0, err)
	}
	if in.Pass.Start < 0 || in.Pass.End > spec.NumCells() || in.Pass.Start > in.Pass.End {
		return PassResult{}, appError(ClassInvalidSpec, false, 0,
			fmt.Errorf("pass %d: cells [%d,%d) outside the grid of %d", in.Pass.Index, in.Pass.Start, in.Pass.End, spec.NumCells()))
	}
	info := activity.GetInfo(ctx)
	clk := a.clock()
	var prev Progress
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &prev)
	}
	model := spec.Models[in.Pass.Model]
	p := &passRun{
		a:          a,
		spec:       spec,
		in:         in,
		model:      model,
		log:        activity.GetLogger(ctx),
		clock:      clk,
		workflowID: info.WorkflowExecution.ID,
		health:     newHealth(spec.Run.MaxAttempts, time.Duration(spec.Run.StallTimeout), prev, in.ModelAnswered, clk.Now()),
		memory:     newMemory(spec.Run.Cumulative, len(spec.Personas)),
		obs:        a.observer(),
	}
	p.price, p.priced = llm.PriceFor(model)
	if in.Budgeted {
		p.budget = &budget{limit: in.BudgetUSD}
	}
	if err := p.loadFinished(ctx); err != nil {
		return PassResult{}, appError(ClassInternal, true, 0, err)
	}
	// Retries are facts of the earlier attempts that no record keeps: carry them on.
	p.tally.retried(prev.Retried)
	// Record at once, so that even an attempt that fails before its first tick leaves the stall clock behind.
	activity.RecordHeartbeat(ctx, p.progress())
	if p.health.stalled(clk.Now()) {
		return p.giveUpStalled(ctx)
	}

	client, err := a.Models.Client(model)
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			return p.giveUp(ctx, string(le.Class), le.Code, le.Error())
		}
		return p.giveUp(ctx, ClassClientSetup, "", err.Error())
	}
	p.client = client
	lim := in.Limits
	lim.StartEmpty = true // see ratelimit's package doc: passes never assume the provider's bucket is full
	p.limiter = ratelimit.New(lim, clk)
	p.cache = newPassCache(a.Store, spec.CachePolicy(model), model, in.RunID, in.Pass.Index, p.log)
	p.images = newPassImages(a.Images, spec, model)
	p.writer = store.NewWriter(a.Store, in.RunID, store.WriterOptions{CacheFailed: func(n int, err error) {
		p.log.Error("RESPONSE CACHE WRITE FAILED: the answers are recorded, but not cached", "entries", n, "error", err)
	}})

	// Calls and writes use a context that the attempt's cancellation does not reach (see the doc above);
	// dispatch stops when halt is called.
	runCtx := context.WithoutCancel(ctx)
	dctx, halt := context.WithCancel(runCtx)
	p.halt = halt
	var bg sync.WaitGroup
	bgCtx, stopBG := context.WithCancel(runCtx)
	bg.Go(func() { p.heartbeat(ctx, bgCtx) })
	bg.Go(func() { p.refreshShares(bgCtx) })
	if p.cache.claims() && !spec.IsEmbed() { // an embed pass claims nothing (see dispatchEmbed)
		bg.Go(func() { p.renewClaims(bgCtx) })
	}
	bg.Go(func() {
		select {
		case <-activity.GetWorkerStopChannel(ctx):
			// A stopping worker (Ctrl-C, deploy) gives its activities WorkerStopTimeout before it cancels them:
			// stop sending, and let the calls in flight land and be recorded.
			p.stop(stopWorker)
		case <-ctx.Done():
			p.stop(stopCancelled)
		case <-bgCtx.Done():
		}
	})

	switch {
	case spec.IsEmbed():
		p.dispatchEmbed(dctx, runCtx)
	case spec.Run.Cumulative:
		perItem := len(spec.Personas)
		for start := in.Pass.Start; start < in.Pass.End && dctx.Err() == nil; start += perItem {
			// The next item needs this item's answers: each item's personas run side by side, items in order.
			p.dispatch(dctx, runCtx, p.pending(start, start+perItem))
		}
	default:
		p.dispatch(dctx, runCtx, p.pending(in.Pass.Start, in.Pass.End))
	}
	p.calls.Wait()
	p.cache.wait()
	p.images.wait()
	halt()
	stopBG()
	bg.Wait()
	p.reportQueued(0)
	// The answers that arrived are paid for and must be written even when the attempt was cancelled.
	closeCtx, cancelClose := context.WithTimeout(runCtx, 30*time.Second)
	werr := p.writer.Close(closeCtx)
	cancelClose()
	p.releaseClaims(runCtx)
	defer activity.RecordHeartbeat(ctx, p.progress()) // after the give-ups below are counted

	reason := p.stopReason()
	switch {
	case werr != nil:
		return p.tally.result(), appError(ClassInternal, true, 0, fmt.Errorf("write results: %w", werr))
	case reason == stopFatal:
		e := p.fatalError()
		return p.giveUp(ctx, string(e.Class), e.Code, e.Error())
	case reason == stopUnreachable:
		return p.giveUp(ctx, ClassUnreachable, p.lastCode(), p.unreachableMessage())
	case reason == stopStalled:
		return p.giveUpStalled(ctx)
	case reason == stopBudget:
		if _, err := p.recordUnfinished(ctx, ClassBudgetExhausted, "", p.budget.message()); err != nil {
			return p.tally.result(), appError(ClassInternal, true, 0, err)
		}
		res := p.tally.result()
		res.BudgetExhausted = true
		return res, nil
	case reason == stopCancelled:
		return p.tally.result(), ctx.Err()
	case reason == stopWorker && p.tally.unfinished() > 0:
		return p.tally.result(), appError(ClassWorkerStopping, true, 0, errors.New("the worker is stopping; the pass resumes on the next attempt"))
	case reason == stopStorm:
		e := p.health.lastError()
		n := p.health.endAttempt()
		return p.tally.result(), appError(string(e.Class), true, RetryDelay(n, p.retryAfter()),
			fmt.Errorf("%d cells failed in a row, the attempt ends and the pass is retried: %w", stormCells, e))
	}
	return p.tally.result(), nil
}

// stopReason says why a pass stopped dispatching before its cells ran out. The first reason wins.
type stopReason int

const (
	running         stopReason = iota
	stopFatal                  // Auth or QuotaExhausted: no call of the model can succeed
	stopUnreachable            // the endpoint never answered
	stopStalled                // nothing finished for run.stall_timeout
	stopStorm                  // many cells failed one after the other: Temporal backs the pass off
	stopBudget                 // the next call could exceed the pass's share of the budget
	stopRaise                  // on_error=raise and a cell failed
	stopCancelled              // the attempt's context ended (workflow cancelled, heartbeat lost, timed out)
	stopWorker                 // the worker is stopping
)

// passRun is the state of one attempt of a pass. Its parts each do one job: queue (which cells to call next),
// health (what failures mean), budget, memory (cumulative mode), tally (the counts), limiter (the gates).
type passRun struct {
	a          *Activities
	spec       *experiment.Spec
	in         PassInput
	model      experiment.Model
	price      experiment.Price
	priced     bool
	log        log.Logger
	clock      ratelimit.Clock
	workflowID string
	client     *llm.Client
	limiter    *ratelimit.Limiter
	writer     *store.Writer
	cache      *passCache
	obs        Observer
	// queued is what the pass last reported to obs.Queued.
	queued int
	images *passImages
	health *health
	memory *memory
	budget *budget
	tally  tally
	calls  sync.WaitGroup
	halt   context.CancelFunc

	mu     sync.Mutex
	reason stopReason
	fatal  *llm.Error
	// pausedUntil is the latest Retry-After end: the floor of the next attempt's delay after a storm.
	pausedUntil time.Time
}

func (a *Activities) clock() ratelimit.Clock {
	if a.Clock != nil {
		return a.Clock
	}
	return ratelimit.SystemClock()
}

// stop ends the dispatch for reason, unless an earlier reason already did.
func (p *passRun) stop(reason stopReason) {
	p.mu.Lock()
	if p.reason == running {
		p.reason = reason
	}
	p.mu.Unlock()
	if p.halt != nil {
		p.halt()
	}
}

func (p *passRun) stopReason() stopReason {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason
}

func (p *passRun) fatalError() *llm.Error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fatal
}

func (p *passRun) retryAfter() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(0, p.pausedUntil.Sub(p.clock.Now()))
}

// loadFinished marks the cells an earlier attempt finished and counts them, so the pass resumes where it was.
func (p *passRun) loadFinished(ctx context.Context) error {
	done, err := p.a.Store.Records(ctx, p.in.RunID, p.in.Pass.Start, p.in.Pass.End)
	if err != nil {
		return fmt.Errorf("read finished cells: %w", err)
	}
	p.tally.init(p.in.Pass)
	for _, r := range done {
		p.tally.count(r)
		p.budget.settle(0, r.Usage().CostUSD)
		if r.Status != store.StatusFailed && p.spec.Run.Cumulative {
			c := p.spec.Cell(r.Index)
			// done is in index order, so each persona's turns come back in item order.
			p.memory.add(c.Persona, experiment.Turn{User: p.userMessage(c), Assistant: r.Raw})
		}
	}
	return nil
}

// userMessage is the plain (history-free) user message of a cell: what a cumulative history repeats.
func (p *passRun) userMessage(c experiment.Cell) string {
	msgs, err := p.spec.Render(c, nil)
	if err != nil || len(msgs) == 0 {
		return ""
	}
	return msgs[len(msgs)-1].Content
}

// pending lists the unfinished cells of [start, end) in submission order.
func (p *passRun) pending(start, end int) []int {
	var out []int
	for i := start; i < end; i++ {
		if !p.tally.isFinished(i) {
			out = append(out, i)
		}
	}
	return out
}

// dispatch calls the given cells, each once a gate of the limiter lets it through, and tries failed ones again
// as health decides. It returns when every cell finished or dctx ended (p.stop); calls in flight are owned by
// p.calls and use runCtx.
func (p *passRun) dispatch(dctx, runCtx context.Context, cells []int) {
	q := newCellQueue(p.clock, cells)
	for {
		idx, ok := q.next(dctx)
		if !ok {
			return
		}
		c := p.spec.Cell(idx)
		p.images.prefetch(dctx, p.spec, q.peek(p.images.ahead()))
		var msgs []experiment.Message
		var pics pictures
		var err error
		var key *store.CacheKey
		if p.cache.reads() {
			l := p.take(dctx, idx, q.peek(2*lookAhead))
			switch {
			case l.stopped:
				q.done()
				return
			case l.err != nil:
				err = l.err
			case l.hit != nil:
				p.serve(c, l.msgs, *l.hit, l.pics)
				q.done()
				continue
			case l.taken:
				// Another run is calling this very request: its answer will be in the cache.
				q.retry(idx, p.clock.Now().Add(claimPoll))
				continue
			}
			msgs, pics = l.msgs, l.pics
			if p.cache.writes() {
				key = &l.key
			}
		} else {
			msgs, err = p.spec.Render(c, p.memory.of(c.Persona))
			if err == nil {
				msgs, pics, err = p.images.resolve(dctx, msgs)
				if err != nil {
					err = imageError{err}
				}
			}
			if err == nil && p.cache.writes() {
				k := p.cache.key(p.request(c, msgs, pics))
				key = &k
			}
		}
		if err != nil {
			if dctx.Err() != nil {
				q.done()
				return // stopping: the cell stays unfinished for the next attempt
			}
			p.record(unprepared(idx, err), nil)
			q.done()
			continue
		}
		cost := p.worstCost(msgs)
		if !p.reserveBudget(dctx, cost) {
			q.done()
			return
		}
		permit, err := p.limiter.Acquire(dctx, p.reserveTokens(msgs))
		if err != nil {
			p.budget.settle(cost, 0)
			q.done()
			return // stopping: the cell stays unfinished for the next attempt
		}
		p.tally.called()
		p.calls.Go(func() {
			if p.call(runCtx, c, msgs, pics, key, permit, cost) {
				q.retry(idx, p.retryAt(idx))
			} else {
				q.done()
			}
		})
	}
}

// retryAt is when a cell that failed transiently may be tried again.
func (p *passRun) retryAt(idx int) time.Time {
	t := p.health.triesOf(idx)
	switch {
	case p.health.refusing():
		return p.clock.Now().Add(cellRetryDelay(t.Sent))
	case t.Transient == 0:
		return p.clock.Now() // rate-limited: the limiter's pause decides
	}
	return p.clock.Now().Add(cellRetryDelay(t.Transient))
}

// reserveTokens is the TPM reservation of a call: its prompt's tokens plus the completion it may produce. Counting
// costs a tokenizer pass, so it is only done when a token limit needs it.
func (p *passRun) reserveTokens(msgs []experiment.Message) int {
	if p.in.Limits.TPM <= 0 || p.a.Tokenizer == nil {
		return 0
	}
	return p.a.Tokenizer.CountMessages(p.model.Name, msgs) + p.maxTokens()
}

// maxTokens is the completion a call may produce: the model's max_tokens, or the default assumed for it.
func (p *passRun) maxTokens() int {
	if n := p.model.Params.MaxTokens; n > 0 {
		return n
	}
	return experiment.DefaultMaxTokens
}

// worstCost is the most a call can cost: its prompt and the longest completion. Zero without a budget.
func (p *passRun) worstCost(msgs []experiment.Message) float64 {
	if p.budget == nil || !p.priced || p.a.Tokenizer == nil {
		return 0
	}
	return llm.Cost(p.price, p.a.Tokenizer.CountMessages(p.model.Name, msgs), p.maxTokens())
}

// reserveBudget reserves a call's worst-case cost against the pass's share of the budget. When it does not fit,
// the pass asks the workflow for its current share once (finished passes may have left budget behind); when it
// still does not fit, the pass stops with the budget exhausted.
func (p *passRun) reserveBudget(ctx context.Context, cost float64) bool {
	if p.budget.reserve(cost) {
		return true
	}
	if p.refreshShare(ctx) && p.budget.reserve(cost) {
		return true
	}
	p.stop(stopBudget)
	return false
}

// call makes one request for cell c and records its outcome, and its answer in the response cache under key
// when key is set. It reports whether the cell must be tried again.
func (p *passRun) call(ctx context.Context, c experiment.Cell, msgs []experiment.Message, pics pictures, key *store.CacheKey, permit *ratelimit.Permit, reserved float64) (again bool) {
	timeout := time.Duration(p.spec.Run.CallTimeout)
	if timeout <= 0 {
		timeout = experiment.DefaultCallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	start := p.clock.Now()
	resp, err := p.client.Chat(cctx, p.request(c, msgs, pics))
	cancel()
	now := p.clock.Now()
	latency := now.Sub(start)
	outcome := "ok"
	if err != nil {
		outcome = string(llm.Classify(err).Class)
	}
	p.obs.Call(p.model.Name, outcome, latency)
	// The permit is held until the outcome is recorded: with on_error=raise, the dispatcher must see the stop
	// before the freed slot lets it send the next cell.
	var used int
	defer func() { permit.Release(used) }()
	if err != nil {
		e := llm.Classify(err)
		if e.Class == llm.ClassTransport {
			// A call that timed out or lost its connection may still have been served and billed: keep its
			// tokens and its cost counted.
			used = -1
			p.budget.settle(reserved, reserved)
		} else {
			p.budget.settle(reserved, 0)
		}
		return p.failed(c, e, latency, now)
	}
	// Providers charge a request's max_tokens against TPM when it arrives and do not refund what the completion
	// left unused, so only the prompt estimate is trued up.
	used = resp.PromptTokens + p.maxTokens()
	p.observe(resp.RateLimit)
	p.limiter.Succeeded()
	answer := cache.Answer{Text: resp.Text, PromptTokens: resp.PromptTokens, CompletionTokens: resp.CompletionTokens}
	rec := p.answerRecord(c, answer)
	rec.LatencyMS = float64(latency.Microseconds()) / 1000
	rec.Attempts = p.health.answer(c.Index, now)
	pics.stamp(&rec)
	p.obs.Used(p.model.Name, rec.Usage())
	p.memory.add(c.Persona, experiment.Turn{User: msgs[len(msgs)-1].Content, Assistant: resp.Text})
	// The record's cost is added to spent when it is counted; here only the reservation ends.
	p.budget.settle(reserved, 0)
	var entry *store.CacheEntry
	if key != nil {
		e := cache.Entry(*key, p.model.Name, p.in.RunID, answer, now)
		entry = &e
	}
	p.record(rec, entry)
	return false
}

// answerRecord is the record of cell c answered with a: the text matched to the item's options, the tokens, and
// the cost at the model's price.
func (p *passRun) answerRecord(c experiment.Cell, a cache.Answer) store.Record {
	m := experiment.Match(a.Text, p.spec.OptionsFor(c.Item))
	rec := store.Record{
		Index:            c.Index,
		Status:           m.Status,
		OptionID:         m.OptionID,
		Raw:              a.Text,
		Candidates:       strings.Join(m.Candidates, ","),
		PromptTokens:     a.PromptTokens,
		CompletionTokens: a.CompletionTokens,
	}
	if p.priced {
		rec.CostUSD = llm.Cost(p.price, a.PromptTokens, a.CompletionTokens)
	}
	return rec
}

// observe pauses the model's gates when the provider says a budget of its window is used up.
func (p *passRun) observe(rl llm.RateLimitInfo) {
	now := p.clock.Now()
	if rl.RemainingRequests == 0 && rl.ResetRequests > 0 {
		p.limiter.PauseUntil(now.Add(rl.ResetRequests))
	}
	if rl.RemainingTokens == 0 && rl.ResetTokens > 0 {
		p.limiter.PauseUntil(now.Add(rl.ResetTokens))
	}
}

// failed handles a failed request by its class. It reports whether the cell must be tried again.
func (p *passRun) failed(c experiment.Cell, e *llm.Error, latency time.Duration, now time.Time) (again bool) {
	return p.failedRequest(c.Index, e, latency, now, func(tries Tries) {
		p.logFailure(c, e)
		p.record(failedRecord(c.Index, e, tries), nil)
	})
}

// failedRequest handles a failed request by its class; key names the request in health (a cell, or the first
// cell of an embeddings batch) and fail records what the request was for as failed with its tries. It reports
// whether the request must be sent again.
func (p *passRun) failedRequest(key int, e *llm.Error, latency time.Duration, now time.Time, fail func(Tries)) (again bool) {
	switch {
	case e.Class.Retryable():
		if e.Class == llm.ClassRateLimited {
			// The account's state, not the cell's: wait as the provider asks, and send less at once.
			pause := e.RetryAfter
			if pause <= 0 {
				pause = defaultRateLimitPause
			}
			p.limiter.PauseUntil(now.Add(pause))
			p.limiter.Backoff()
			p.mu.Lock()
			if now.Add(pause).After(p.pausedUntil) {
				p.pausedUntil = now.Add(pause)
			}
			p.mu.Unlock()
		}
		v, tries := p.health.failure(key, e, latency, now)
		switch v {
		case cellFailed:
			fail(tries)
			return false
		case storm:
			p.stop(stopStorm)
		case unreachable:
			p.stop(stopUnreachable)
		}
		p.tally.retried(1)
		p.obs.Retried(p.model.Name)
		return true
	case e.Class == llm.ClassAuth || e.Class == llm.ClassQuotaExhausted:
		p.mu.Lock()
		if p.fatal == nil {
			p.fatal = e
		}
		p.mu.Unlock()
		p.stop(stopFatal)
		return false
	default:
		tries := p.health.finished(key, now)
		tries.LatencyMS = float64(latency.Microseconds()) / 1000
		fail(tries)
		return false
	}
}

// failedRecord is the record of a cell whose last try failed with e.
func failedRecord(idx int, e *llm.Error, t Tries) store.Record {
	return store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: string(e.Class), ErrorCode: e.Code, ErrorMessage: describe(e),
		LatencyMS: t.LatencyMS, Attempts: t.Sent}
}

// describe is what a failed cell says about its provider's answer: the status and code, then the message.
func describe(e *llm.Error) string {
	msg := strings.TrimPrefix(e.Error(), "llm: "+string(e.Class))
	return strings.TrimSpace(strings.TrimPrefix(msg, ":"))
}

func (p *passRun) logFailure(c experiment.Cell, e *llm.Error) {
	if p.spec.Run.OnError == experiment.OnErrorIgnore {
		return
	}
	p.log.Warn("model call failed", "model", p.model.ID, "seed", p.spec.Seeds[c.Seed],
		"item", p.spec.Questionnaire.Items[c.Item].ID, "persona", p.spec.Personas[c.Persona].ID,
		"class", string(e.Class), "error", e.Message)
}

// record writes a finished cell, with the cache entry of its answer when e is set, and counts it. Under
// on_error=raise a failure stops the dispatch.
func (p *passRun) record(r store.Record, e *store.CacheEntry) {
	var err error
	if e != nil {
		err = p.writer.AddAnswer(context.Background(), r, *e)
	} else {
		err = p.writer.Add(context.Background(), r)
	}
	if err != nil {
		// The writer keeps the error and Close returns it; the attempt fails and is retried.
		p.stop(stopCancelled)
		return
	}
	if p.cache.reads() {
		t := store.CacheTally{Misses: 1}
		if r.Cached {
			t = store.CacheTally{Hits: 1}
		}
		p.writer.Tally(p.model.Name, t)
		p.obs.Looked(p.model.Name, t)
	}
	p.tally.count(r)
	p.budget.settle(0, r.Usage().CostUSD)
	if r.Status == store.StatusFailed && p.spec.Run.OnError == experiment.OnErrorRaise {
		p.stop(stopRaise)
	}
}

// reportQueued tells the observer how many cells the pass has waiting now. Only the heartbeat goroutine and,
// after it stopped, RunSeedPass call it.
func (p *passRun) reportQueued(n int) {
	if d := n - p.queued; d != 0 {
		p.obs.Queued(p.model.Name, d)
		p.queued = n
	}
}

func (p *passRun) progress() Progress {
	pr := p.tally.progress()
	p.health.save(&pr)
	return pr
}

func (p *passRun) unreachableMessage() string {
	base := p.client.BaseURL()
	msg := fmt.Sprintf("model %s: base_url %s never answered", p.model.ID, base)
	if e := p.health.lastError(); e != nil {
		msg += ": " + e.Message
	}
	return msg + "; check base_url and that the server is up"
}

// shareEvery is how often a running pass asks the workflow for its current share.
const shareEvery = 2 * time.Second

// heartbeat reports progress, and gives the pass up when it stalled, until bg ends. Heartbeats are also how a
// cancellation reaches the activity (through ctx).
func (p *passRun) heartbeat(ctx, bg context.Context) {
	every := p.a.HeartbeatEvery
	if every <= 0 {
		every = time.Second
	}
	tick(bg, every, func() {
		activity.RecordHeartbeat(ctx, p.progress())
		p.reportQueued(max(0, p.tally.unfinished()-p.limiter.Stats().InFlight))
		if p.health.stalled(p.clock.Now()) {
			p.stop(stopStalled)
		}
	})
}

// refreshShares picks up a grown share every shareEvery until ctx ends. It runs apart from the heartbeat, so a
// slow query can never delay a heartbeat past its timeout.
func (p *passRun) refreshShares(ctx context.Context) {
	tick(ctx, shareEvery, func() { p.refreshShare(ctx) })
}

// tick calls fn every d until ctx ends. The pass's background loops (heartbeat, shares, claims) are ticks.
func tick(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// refreshShare asks the workflow for the pass's current share and applies it; shares never shrink. It reports
// whether the share grew.
func (p *passRun) refreshShare(ctx context.Context) bool {
	if p.a.Shares == nil || p.workflowID == "" {
		return false
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sh, err := p.a.Shares.Share(qctx, p.workflowID, p.in.Pass.Index)
	if err != nil {
		return false
	}
	grew := false
	old := p.limiter.Limits()
	nl := sh.Limits
	nl.StartEmpty = true
	if nl.Concurrency > old.Concurrency || nl.RPM > old.RPM || nl.TPM > old.TPM {
		nl.Concurrency = max(nl.Concurrency, old.Concurrency)
		nl.RPM, nl.TPM = max(nl.RPM, old.RPM), max(nl.TPM, old.TPM)
		p.limiter.SetLimits(nl)
		grew = true
	}
	if sh.Budgeted && p.budget.grow(sh.BudgetUSD) {
		grew = true
	}
	return grew
}

// recordUnfinished records every unfinished cell of the pass as failed with class, the provider's code and msg
// (each with the tries it used), where no record exists yet, and counts them.
func (p *passRun) recordUnfinished(ctx context.Context, class, code, msg string) (int, error) {
	var recs []store.Record
	for _, idx := range p.pending(p.in.Pass.Start, p.in.Pass.End) {
		t := p.health.triesOf(idx)
		recs = append(recs, store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: class, ErrorCode: code,
			ErrorMessage: msg, Attempts: t.Sent, LatencyMS: t.LatencyMS})
	}
	if len(recs) == 0 {
		return 0, nil
	}
	// A give-up never replaces an answer (the store's rule), so a stale attempt's late answer survives it.
	if err := p.a.Store.Put(context.WithoutCancel(ctx), p.in.RunID, recs); err != nil {
		return 0, fmt.Errorf("record unfinished cells: %w", err)
	}
	for _, r := range recs {
		p.tally.count(r)
	}
	return len(recs), nil
}

// giveUp records every unfinished cell with class, code and msg and ends the pass for good.
func (p *passRun) giveUp(ctx context.Context, class, code, msg string) (PassResult, error) {
	return p.giveUpAs(ctx, class, class, code, msg)
}

// lastCode is the provider's code of the last failure, "" when none.
func (p *passRun) lastCode() string {
	if e := p.health.lastError(); e != nil {
		return e.Code
	}
	return ""
}

// giveUpStalled ends a pass in which nothing finished for the stall timeout. Its cells say what the provider
// last did (their class is the last failure's); the pass's error is Stalled.
func (p *passRun) giveUpStalled(ctx context.Context) (PassResult, error) {
	cellClass := ClassStalled
	if e := p.health.lastError(); e != nil {
		cellClass = string(e.Class)
	}
	return p.giveUpAs(ctx, ClassStalled, cellClass, p.lastCode(), p.health.stallMessage(p.model.ID))
}

func (p *passRun) giveUpAs(ctx context.Context, passClass, cellClass, code, msg string) (PassResult, error) {
	if _, err := p.recordUnfinished(ctx, cellClass, code, msg); err != nil {
		return p.tally.result(), appError(ClassInternal, true, 0, err)
	}
	return p.tally.result(), appError(passClass, false, 0, errors.New(msg))
}
