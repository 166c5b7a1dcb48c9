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

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/store"
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
}

// PassResult counts what a pass did. Cells already finished by an earlier attempt count as Done too.
type PassResult struct {
	Pass     int
	Cells    int
	Done     int
	OK       int
	Unparsed int
	Failed   int
	// Called is the number of calls this attempt sent; Retried the transient failures seen over all attempts.
	Called  int
	Retried int
	// BudgetExhausted says the pass stopped because its next call could have exceeded its share of the budget;
	// its unfinished cells are recorded as failed with ClassBudgetExhausted.
	BudgetExhausted bool
	// FirstFailure is the lowest index of a failed cell of the pass, -1 when none failed.
	FirstFailure int
	FirstError   string
	PromptTokens int
	// CompletionTokens and CostUSD add up the cells finished in this pass over all attempts.
	CompletionTokens int
	CostUSD          float64
}

// Progress is the heartbeat detail of RunSeedPass; a retried attempt starts from the last one recorded.
type Progress struct {
	Pass             int
	Cells            int
	Done             int
	Failed           int
	Retried          int
	Cached           int
	PromptTokens     int
	CompletionTokens int
	CostUSD          float64
}

// RunSeedPass calls every unfinished cell of the pass, concurrently within the pass's limits, and writes each
// result to the store as it lands. It never retries a call itself (DESIGN.md §2): a transient failure stops the
// dispatch of new calls, lets the calls in flight land, and fails the attempt with a retryable error whose next
// delay is the provider's Retry-After; the next attempt skips every finished cell. Permanent failures are recorded
// on their cell; Auth and QuotaExhausted fail the pass for good after recording every unfinished cell.
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
	p := &passRun{
		a:       a,
		spec:    spec,
		in:      in,
		model:   spec.Models[in.Pass.Model],
		attempt: int(info.Attempt),
		log:     activity.GetLogger(ctx),
		clock:   a.clock(),
	}
	p.price, p.priced = llm.PriceFor(p.model)
	p.budgeted, p.budget = in.Budgeted, in.BudgetUSD
	p.workflowID = info.WorkflowExecution.ID
	if err := p.loadFinished(ctx); err != nil {
		return PassResult{}, appError(ClassInternal, true, 0, err)
	}
	if activity.HasHeartbeatDetails(ctx) {
		var prev Progress
		if activity.GetHeartbeatDetails(ctx, &prev) == nil {
			// Retries are facts of the earlier attempts that no record keeps: carry them on.
			p.prog.Retried, p.res.Retried = prev.Retried, prev.Retried
		}
	}
	client, err := a.Models.Client(p.model)
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			return p.fail(ctx, string(le.Class), le.Error())
		}
		return p.fail(ctx, string(llm.ClassAuth), err.Error())
	}
	p.client = client
	lim := in.Limits
	lim.StartEmpty = true // see ratelimit's package doc: passes never assume the provider's bucket is full
	p.limiter = ratelimit.New(lim, p.clock)
	p.writer = a.Store.NewWriter(in.RunID, store.WriterOptions{})

	hbCtx, stopHB := context.WithCancel(ctx)
	var hbDone sync.WaitGroup
	hbDone.Go(func() { p.heartbeat(hbCtx) })
	// A stopping worker (Ctrl-C, deploy) gives its activities WorkerStopTimeout before it cancels them: stop
	// sending, and let the calls in flight land and be recorded, so that none of them is paid for twice.
	hbDone.Go(func() {
		select {
		case <-activity.GetWorkerStopChannel(ctx):
			p.mu.Lock()
			p.stop, p.workerStopping = true, true
			p.mu.Unlock()
		case <-hbCtx.Done():
		}
	})

	if spec.Run.Cumulative {
		p.dispatchCumulative(ctx)
	} else {
		p.dispatch(ctx, p.pending())
	}
	p.calls.Wait()
	stopHB()
	hbDone.Wait()
	// The attempt's context may be cancelled (worker shutdown, workflow cancelled): the answers that already
	// arrived are paid for and must still be written, so the writer gets a context of its own.
	closeCtx, cancelClose := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	werr := p.writer.Close(closeCtx)
	cancelClose()
	activity.RecordHeartbeat(ctx, p.progress())

	if p.budgetOut {
		var cost float64
		n, err := a.failUnfinished(ctx, FailInput{RunID: in.RunID, Start: in.Pass.Start, End: in.Pass.End,
			Class: ClassBudgetExhausted, Message: p.budgetMessage(), Attempts: p.attempt}, &cost)
		if err != nil {
			return p.result(), appError(ClassInternal, true, 0, err)
		}
		p.mu.Lock()
		p.res.Done += n
		p.res.Failed += n
		p.res.BudgetExhausted = true
		p.mu.Unlock()
	}
	switch {
	case werr != nil:
		return p.result(), appError(ClassInternal, true, 0, fmt.Errorf("write results: %w", werr))
	case p.fatal != nil:
		return p.fail(ctx, string(p.fatal.Class), p.fatal.Error())
	case ctx.Err() != nil:
		return p.result(), ctx.Err()
	case p.workerStopping && p.transient == nil && p.unfinished() > 0:
		return p.result(), appError(ClassWorkerStopping, true, 0, errors.New("the worker is stopping; the pass resumes on the next attempt"))
	case p.transient != nil:
		return p.result(), appError(string(p.transient.Class), true, RetryDelay(p.attempt, p.retryAfter), p.transient)
	}
	return p.result(), nil
}

// passRun is the state of one attempt of a pass.
type passRun struct {
	a       *Activities
	spec    *experiment.Spec
	in      PassInput
	model   experiment.Model
	price   experiment.Price
	priced  bool
	attempt int
	log     log.Logger
	clock   ratelimit.Clock
	client  *llm.Client
	limiter *ratelimit.Limiter
	writer  *store.Writer
	calls   sync.WaitGroup

	mu         sync.Mutex
	finished   []bool // by cell index - Start
	prog       Progress
	res        PassResult
	stop       bool
	transient  *llm.Error
	fatal      *llm.Error
	retryAfter time.Duration
	// history holds each persona's earlier turns in cumulative mode.
	history [][]experiment.Turn

	workflowID string
	// budget is this pass's share of the run's budget: spent (cells finished, over all attempts) plus reserved
	// (worst case of the calls in flight) never exceeds it.
	budgeted  bool
	budget    float64
	spent     float64
	reserved  float64
	budgetOut bool
	// workerStopping says the worker asked its activities to end.
	workerStopping bool
}

// unfinished counts the cells of the pass without a result.
func (p *passRun) unfinished() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, f := range p.finished {
		if !f {
			n++
		}
	}
	return n
}

func (a *Activities) clock() ratelimit.Clock {
	if a.Clock != nil {
		return a.Clock
	}
	return ratelimit.SystemClock()
}

// loadFinished marks the cells an earlier attempt finished and counts them, so the pass resumes where it was.
func (p *passRun) loadFinished(ctx context.Context) error {
	done, err := p.a.Store.Records(ctx, p.in.RunID, p.in.Pass.Start, p.in.Pass.End)
	if err != nil {
		return fmt.Errorf("read finished cells: %w", err)
	}
	p.finished = make([]bool, p.in.Pass.Len())
	p.res = PassResult{Pass: p.in.Pass.Index, Cells: p.in.Pass.Len(), FirstFailure: -1}
	p.prog = Progress{Pass: p.in.Pass.Index, Cells: p.in.Pass.Len()}
	if p.spec.Run.Cumulative {
		p.history = make([][]experiment.Turn, len(p.spec.Personas))
	}
	for _, r := range done {
		p.finished[r.Index-p.in.Pass.Start] = true
		p.count(r)
		if p.history != nil && r.Status != store.StatusFailed {
			c := p.spec.Cell(r.Index)
			// done is in index order, so each persona's turns come back in item order.
			p.history[c.Persona] = append(p.history[c.Persona], experiment.Turn{User: p.userMessage(c), Assistant: r.Raw})
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

// count adds a finished record to the pass's totals. Callers hold p.mu or own p exclusively.
func (p *passRun) count(r store.Record) {
	p.res.Done++
	p.prog.Done++
	switch r.Status {
	case store.StatusOK:
		p.res.OK++
	case store.StatusUnparsed:
		p.res.Unparsed++
	default:
		p.res.Failed++
		p.prog.Failed++
		if p.res.FirstFailure < 0 || r.Index < p.res.FirstFailure {
			p.res.FirstFailure = r.Index
			p.res.FirstError = r.ErrorClass + ": " + r.ErrorMessage
		}
	}
	if r.Cached {
		p.prog.Cached++
	}
	p.res.PromptTokens += r.PromptTokens
	p.res.CompletionTokens += r.CompletionTokens
	p.res.CostUSD += r.CostUSD
	p.spent += r.CostUSD
	p.prog.PromptTokens += r.PromptTokens
	p.prog.CompletionTokens += r.CompletionTokens
	p.prog.CostUSD += r.CostUSD
}

// pending lists the unfinished cells of the pass in submission order.
func (p *passRun) pending() []int {
	var out []int
	for i, f := range p.finished {
		if !f {
			out = append(out, p.in.Pass.Start+i)
		}
	}
	return out
}

func (p *passRun) stopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stop
}

// dispatch sends the given cells in order, each once a gate of the limiter lets it through. It returns when every
// cell was sent or the dispatch stopped; calls in flight are owned by p.calls.
func (p *passRun) dispatch(ctx context.Context, cells []int) {
	for _, idx := range cells {
		if ctx.Err() != nil || p.stopped() {
			return
		}
		c := p.spec.Cell(idx)
		var hist []experiment.Turn
		if p.history != nil {
			p.mu.Lock()
			hist = p.history[c.Persona]
			p.mu.Unlock()
		}
		msgs, err := p.spec.Render(c, hist)
		if err != nil {
			p.record(store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: string(llm.ClassInvalidRequest),
				ErrorMessage: "render prompt: " + err.Error(), Attempts: p.attempt})
			continue
		}
		reserve := p.reserveTokens(msgs)
		cost, ok := p.reserveBudget(ctx, msgs)
		if !ok {
			return
		}
		permit, err := p.limiter.Acquire(ctx, reserve)
		if err != nil {
			p.unreserve(cost, 0)
			return // ctx is done: the cells stay unfinished for the next attempt
		}
		if p.stopped() {
			permit.Release(0)
			p.unreserve(cost, 0)
			return
		}
		p.mu.Lock()
		p.res.Called++
		p.mu.Unlock()
		p.calls.Go(func() { p.call(ctx, c, msgs, permit, cost) })
	}
}

// dispatchCumulative runs the items in order and the personas of one item side by side; each persona's prompt
// carries its own earlier questions and answers.
func (p *passRun) dispatchCumulative(ctx context.Context) {
	perItem := len(p.spec.Personas)
	for start := p.in.Pass.Start; start < p.in.Pass.End; start += perItem {
		var cells []int
		for i := start; i < start+perItem; i++ {
			if !p.finished[i-p.in.Pass.Start] {
				cells = append(cells, i)
			}
		}
		p.dispatch(ctx, cells)
		p.calls.Wait() // the next item needs this item's answers
		if ctx.Err() != nil || p.stopped() {
			return
		}
	}
}

// reserveTokens is the TPM reservation of a call: its prompt's tokens plus the completion it may produce. Counting
// costs a tokenizer pass, so it is only done when a token limit needs it.
func (p *passRun) reserveTokens(msgs []experiment.Message) int {
	if p.in.Limits.TPM <= 0 || p.a.Tokenizer == nil {
		return 0
	}
	return p.worstTokens(msgs)
}

// worstTokens is a call's prompt tokens plus the most it may complete.
func (p *passRun) worstTokens(msgs []experiment.Message) int {
	return p.a.Tokenizer.CountMessages(p.model.Name, msgs) + p.maxTokens()
}

// maxTokens is the completion a call may produce: the model's max_tokens, or the default assumed for it.
func (p *passRun) maxTokens() int {
	if n := p.model.Params.MaxTokens; n > 0 {
		return n
	}
	return experiment.DefaultMaxTokens
}

// reserveBudget reserves a call's worst-case cost against the pass's share of the budget. When it does not fit,
// the pass asks the workflow for its current share once (finished passes may have left budget behind); when it
// still does not fit, the pass stops sending calls and reports the budget exhausted.
func (p *passRun) reserveBudget(ctx context.Context, msgs []experiment.Message) (float64, bool) {
	if !p.budgeted {
		return 0, true
	}
	cost := 0.0
	if p.priced && p.a.Tokenizer != nil {
		cost = llm.Cost(p.price, p.a.Tokenizer.CountMessages(p.model.Name, msgs), p.maxTokens())
	}
	for refreshed := false; ; refreshed = true {
		p.mu.Lock()
		if p.spent+p.reserved+cost <= p.budget {
			p.reserved += cost
			p.mu.Unlock()
			return cost, true
		}
		p.mu.Unlock()
		if refreshed || !p.refreshShare(ctx) {
			break
		}
	}
	p.mu.Lock()
	p.budgetOut = true
	p.stop = true
	p.mu.Unlock()
	return 0, false
}

// unreserve ends a call's reservation; spent is what the call turned out to cost.
func (p *passRun) unreserve(reserved, spent float64) {
	if !p.budgeted {
		return
	}
	p.mu.Lock()
	p.reserved -= reserved
	p.spent += spent
	p.mu.Unlock()
}

func (p *passRun) budgetMessage() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("not run: the next call could exceed this pass's share of budget_usd ($%.4f of $%.4f spent)", p.spent, p.budget)
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
	p.mu.Lock()
	if sh.Budgeted && sh.BudgetUSD > p.budget {
		p.budget = sh.BudgetUSD
		grew = true
	}
	p.mu.Unlock()
	return grew
}

// call makes one model call and records its outcome.
func (p *passRun) call(ctx context.Context, c experiment.Cell, msgs []experiment.Message, permit *ratelimit.Permit, reserved float64) {
	timeout := time.Duration(p.spec.Run.CallTimeout)
	if timeout <= 0 {
		timeout = experiment.DefaultCallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	start := p.clock.Now()
	resp, err := p.client.Chat(cctx, llm.Request{
		Model:    p.model.Name,
		Messages: msgs,
		Seed:     p.spec.Seeds[c.Seed],
		Params:   p.model.Params,
		CellID:   p.spec.CellID(c),
	})
	cancel()
	latency := p.clock.Now().Sub(start)
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
			p.unreserve(reserved, reserved)
		} else {
			p.unreserve(reserved, 0)
		}
		if ctx.Err() != nil {
			return // the attempt is cancelled: the cell stays unfinished
		}
		p.failed(c, e, latency)
		return
	}
	// Providers charge a request's max_tokens against TPM when it arrives and do not refund what the completion
	// left unused, so only the prompt estimate is trued up.
	used = resp.PromptTokens + p.maxTokens()
	p.observe(resp.RateLimit)
	m := experiment.Match(resp.Text, p.spec.OptionsFor(c.Item))
	rec := store.Record{
		Index:            c.Index,
		Status:           m.Status,
		OptionID:         m.OptionID,
		Raw:              resp.Text,
		Candidates:       strings.Join(m.Candidates, ","),
		PromptTokens:     resp.PromptTokens,
		CompletionTokens: resp.CompletionTokens,
		LatencyMS:        float64(latency.Microseconds()) / 1000,
		Attempts:         p.attempt,
	}
	if p.priced {
		rec.CostUSD = llm.Cost(p.price, resp.PromptTokens, resp.CompletionTokens)
	}
	if p.history != nil {
		p.mu.Lock()
		p.history[c.Persona] = append(p.history[c.Persona], experiment.Turn{User: msgs[len(msgs)-1].Content, Assistant: resp.Text})
		p.mu.Unlock()
	}
	// The record's cost is added to spent when it is counted; here only the reservation ends.
	p.unreserve(reserved, 0)
	p.record(rec)
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

// failed handles a failed call by its class (DESIGN.md §2).
func (p *passRun) failed(c experiment.Cell, e *llm.Error, latency time.Duration) {
	switch {
	case e.Class.Retryable():
		if e.RetryAfter > 0 {
			p.limiter.PauseUntil(p.clock.Now().Add(e.RetryAfter))
		}
		p.mu.Lock()
		p.prog.Retried++
		p.res.Retried = p.prog.Retried
		p.stop = true
		if p.transient == nil || e.RetryAfter > p.retryAfter {
			p.transient = e
			p.retryAfter = max(p.retryAfter, e.RetryAfter)
		}
		p.mu.Unlock()
	case e.Class == llm.ClassAuth || e.Class == llm.ClassQuotaExhausted:
		p.mu.Lock()
		p.stop = true
		if p.fatal == nil {
			p.fatal = e
		}
		p.mu.Unlock()
	default:
		p.logFailure(c, e)
		p.record(store.Record{Index: c.Index, Status: store.StatusFailed, ErrorClass: string(e.Class), ErrorCode: e.Code,
			ErrorMessage: e.Message, LatencyMS: float64(latency.Microseconds()) / 1000, Attempts: p.attempt})
	}
}

func (p *passRun) logFailure(c experiment.Cell, e *llm.Error) {
	if p.spec.Run.OnError == experiment.OnErrorIgnore {
		return
	}
	p.log.Warn("model call failed", "model", p.model.ID, "seed", p.spec.Seeds[c.Seed],
		"item", p.spec.Questionnaire.Items[c.Item].ID, "persona", p.spec.Personas[c.Persona].ID,
		"class", string(e.Class), "error", e.Message)
}

// record writes a finished cell and counts it. Under on_error=raise a failure stops the dispatch.
func (p *passRun) record(r store.Record) {
	err := p.writer.Add(context.Background(), r)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		// The writer keeps the error and Close returns it; the attempt fails and is retried.
		p.stop = true
		return
	}
	p.finished[r.Index-p.in.Pass.Start] = true
	p.count(r)
	if r.Status == store.StatusFailed && p.spec.Run.OnError == experiment.OnErrorRaise {
		p.stop = true
	}
}

func (p *passRun) progress() Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.prog
}

func (p *passRun) result() PassResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res
}

// shareEvery is how often a running pass asks the workflow for its current share.
const shareEvery = 2 * time.Second

// heartbeat reports progress, and picks up a grown share, until ctx ends. Heartbeats are also how a cancellation reaches the activity.
func (p *passRun) heartbeat(ctx context.Context) {
	every := p.a.HeartbeatEvery
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	lastShare := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			activity.RecordHeartbeat(ctx, p.progress())
			if time.Since(lastShare) >= shareEvery {
				lastShare = time.Now()
				p.refreshShare(ctx)
			}
		}
	}
}

// fail records every unfinished cell of the pass with the class and ends the pass for good.
func (p *passRun) fail(ctx context.Context, class, msg string) (PassResult, error) {
	var cost float64
	n, err := p.a.failUnfinished(ctx, FailInput{RunID: p.in.RunID, Start: p.in.Pass.Start, End: p.in.Pass.End,
		Class: class, Message: msg, Attempts: p.attempt}, &cost)
	if err != nil {
		return p.result(), appError(ClassInternal, true, 0, err)
	}
	res := p.result()
	res.Failed += n
	res.Done += n
	if res.FirstFailure < 0 && n > 0 {
		res.FirstError = class + ": " + msg
	}
	return res, appError(class, false, 0, errors.New(msg))
}
