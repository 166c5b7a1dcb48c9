package activities

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// RunSeedPass calls every unfinished cell of the pass, concurrently within the pass's limits, and writes each
// result to the store as it lands. The next attempt of a pass skips every finished cell.
//
// A pass is a pipeline of small parts: the preparer turns a cell into its request and cache key, the window
// looks cells up in the response cache ahead of the dispatcher, the admitter lets a request go when the budget,
// the endpoint's breaker and the limiter allow it, the caller sends it, the judge says what its outcome means
// (an answer; the cell's own failure, tried again until run.max_attempts; the provider's failure, charged to no
// cell) and the recorder writes it. RunSeedPass only assembles them.
//
// A provider outage opens the endpoint's breaker, which every pass of the model on this worker shares: the pass
// then waits inside its attempt, heartbeating, while one probe at a time goes out at growing intervals; the first
// answer closes it. Nothing that fails during an outage costs a cell a try, and a cell whose last try fails is
// held until the breaker has decided whether it was an outage's (judge.decide). An endpoint that never answered
// is given up after a few seconds (Unreachable), a pass in which nothing finished for run.stall_timeout is given
// up (Stalled; its cells are Outage while the breaker is open, saying since when the provider is down), and Auth
// and QuotaExhausted end the model at once; in those cases every unfinished cell is recorded with the reason.
//
// Calls in flight are never cancelled by the attempt's context: a heartbeat that fails while the Temporal server
// restarts, or a cancelled workflow, stops the dispatch of new calls, and the calls already sent land and are
// recorded, since the results store does not need the server. Each call is bounded by run.call_timeout.
func (a *Activities) RunSeedPass(ctx context.Context, in wire.PassInput) (wire.PassResult, error) {
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.PassResult{}, appError(errclass.Internal, err)
	}
	if in.Pass.Start < 0 || in.Pass.End > spec.NumCells() || in.Pass.Start > in.Pass.End {
		return wire.PassResult{}, appError(errclass.InvalidSpec,
			fmt.Errorf("pass %d: cells [%d,%d) outside the grid of %d", in.Pass.Index, in.Pass.Start, in.Pass.End, spec.NumCells()))
	}
	var prev wire.PassProgress
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &prev)
	}
	p := a.newPass(ctx, spec, in, prev)
	if err := p.loadFinished(ctx); err != nil {
		return wire.PassResult{}, appError(errclass.Internal, err)
	}
	p.tally.retried(prev.Retried) // retries are facts of the earlier attempts that no record keeps
	if res := p.tally.result(); in.ModelAnswered || res.OK+res.Unparsed > res.Cached {
		p.refused.answered() // the endpoint served this model: its refusals are the cells' own
	}
	// Record at once, so that even an attempt that fails before its first tick leaves the stall clock behind.
	activity.RecordHeartbeat(ctx, p.progress())
	if p.judge.stalled(p.clock.Now()) {
		return p.giveUpStalled(ctx)
	}
	call, err := a.callerFor(p.model, spec.IsEmbed())
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			return p.giveUp(ctx, string(le.Class), le.Code, le.Error())
		}
		return p.giveUp(ctx, errclass.ClientSetup, "", err.Error())
	}
	call.timeout, call.clock, call.obs = callTimeout(spec), p.clock, p.obs
	p.call = call
	p.rec.writer = store.NewWriter(a.Store, in.RunID, store.WriterOptions{CacheFailed: func(n int, err error) {
		p.log.Error("RESPONSE CACHE WRITE FAILED: the answers are recorded, but not cached", "entries", n, "error", err)
	}})

	// Calls and writes use a context that the attempt's cancellation does not reach (see the doc above);
	// dispatch stops when the stopper halts it.
	runCtx := context.WithoutCancel(ctx)
	dctx, halt := context.WithCancel(runCtx)
	p.stop.halt = halt
	stopBG := p.background(ctx, runCtx)
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
	if p.window != nil {
		p.window.wait()
	}
	p.images.wait()
	halt()
	stopBG()
	return p.finish(ctx, runCtx)
}

// pass is one attempt of a pass: its parts, and the calls in flight it owns.
type pass struct {
	a     *Activities
	spec  *experiment.Spec
	in    wire.PassInput
	model experiment.Model
	log   log.Logger
	clock ratelimit.Clock
	obs   Observer

	tally   *tally
	budget  *budget
	memory  *memory
	images  *passImages
	cu      *cacheUse
	prep    *preparer
	window  *window // nil unless the pass reads the response cache
	brk     *breaker.Breaker
	judge   *judge
	refused *refusals
	limiter *ratelimit.Limiter
	share   *shareKeeper
	admit   *admitter
	call    *caller
	stop    *stopper
	rec     *recorder
	outage  *outageWatch
	calls   callGroup
}

// newPass assembles the parts of one attempt of pass in, continuing from the previous attempt's heartbeat prev.
func (a *Activities) newPass(ctx context.Context, spec *experiment.Spec, in wire.PassInput, prev wire.PassProgress) *pass {
	clk := a.clock()
	model := spec.Models[in.Pass.Model]
	info := activity.GetInfo(ctx)
	p := &pass{a: a, spec: spec, in: in, model: model, log: activity.GetLogger(ctx), clock: clk, obs: a.observer(),
		tally: &tally{}, memory: newMemory(spec.Run.Cumulative, len(spec.Personas)),
		images: newPassImages(a.Images, spec, model), stop: newStopper(func() {})}
	if in.Budgeted {
		p.budget = &budget{limit: in.BudgetUSD}
	}
	p.cu = newCacheUse(a.Store, spec.CachePolicy(model), model, in.RunID, in.Pass.Index)
	p.prep = newPreparer(spec, model, p.memory, p.images, p.cu != nil)
	price, priced := llm.PriceFor(model)
	p.rec = &recorder{tally: p.tally, budget: p.budget, stop: p.stop, obs: p.obs, cu: p.cu, spec: spec, model: model,
		price: price, priced: priced}
	if p.cu.reads() {
		p.window = newWindow(p.cu, p.prep, clk, p.log, p.rec.invalid)
	}
	// The breaker is the endpoint's, shared by every pass of the model on this worker; a new worker's breaker
	// takes up the outage the last attempt saw, so the backoff goes on where it was.
	p.brk = a.breakers().For(respcache.Endpoint(model) + " " + model.Name)
	if p.brk.Restore(prev.Outage) {
		p.log.Warn("the provider was down when the last attempt ended: probing as it was", "model", model.ID,
			"state", prev.Outage.Describe(clk.Now()))
	}
	p.refused = &refusals{}
	p.judge = newJudge(spec.Run.MaxAttempts, time.Duration(spec.Run.StallTimeout), p.brk,
		func(cell int) string { return in.RunID + "/" + strconv.Itoa(cell) }, prev, in.ModelAnswered, clk.Now())
	lim := in.Limits
	lim.StartEmpty = true // see ratelimit's package doc: passes never assume the provider's bucket is full
	p.limiter = ratelimit.New(lim, clk)
	p.share = &shareKeeper{shares: a.Shares, workflowID: info.WorkflowExecution.ID, pass: in.Pass.Index,
		limiter: p.limiter, budget: p.budget}
	p.admit = &admitter{budget: p.budget, share: p.share, brk: p.brk, limiter: p.limiter, stop: p.stop,
		tok: a.Tokenizer, model: model, price: price, priced: priced, tpm: in.Limits.TPM > 0, gen: p.brk.Generation()}
	p.outage = &outageWatch{rep: a.Outages, workflowID: info.WorkflowExecution.ID, pass: in.Pass.Index, model: model,
		obs: p.obs, log: p.log, last: prev.Outage}
	return p
}

// callerFor is the caller of model m's calls, through the client of its provider: Anthropic's Messages API for
// provider anthropic, else the OpenAI-compatible client, which an embed pass also embeds with.
func (a *Activities) callerFor(m experiment.Model, embed bool) (*caller, error) {
	if m.Provider == experiment.ProviderAnthropic && !embed {
		c, err := a.Models.AnthropicClient(m)
		if err != nil {
			return nil, err
		}
		return &caller{client: c, model: m.Name}, nil
	}
	c, err := a.Models.Client(m)
	if err != nil {
		return nil, err
	}
	return &caller{client: c, embedder: c, model: m.Name}, nil
}

// callTimeout bounds each call of a run.
func callTimeout(spec *experiment.Spec) time.Duration {
	if t := time.Duration(spec.Run.CallTimeout); t > 0 {
		return t
	}
	return experiment.DefaultCallTimeout
}

func (a *Activities) clock() ratelimit.Clock {
	if a.Clock != nil {
		return a.Clock
	}
	return ratelimit.SystemClock()
}

// breakers is the worker's set of endpoint breakers; without one (tests) every Activities makes its own.
func (a *Activities) breakers() *breaker.Set {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Breakers == nil {
		a.Breakers = breaker.NewSet(a.clock(), breaker.Policy{})
	}
	return a.Breakers
}

// loadFinished marks the cells an earlier attempt finished and counts them, so the pass resumes where it was.
func (p *pass) loadFinished(ctx context.Context) error {
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
			p.memory.add(c.Persona, experiment.Turn{User: p.prep.userMessage(c), Assistant: r.Raw})
		}
	}
	return nil
}

// pending lists the unfinished cells of [start, end) in submission order.
func (p *pass) pending(start, end int) []int {
	var out []int
	for i := start; i < end; i++ {
		if !p.tally.isFinished(i) {
			out = append(out, i)
		}
	}
	return out
}

// progress is the heartbeat detail now: the counts, then the judge's state as it stands after them.
func (p *pass) progress() wire.PassProgress {
	pr := p.tally.progress()
	pr.Model = p.model.ID
	p.judge.save(&pr, p.clock.Now())
	return pr
}
