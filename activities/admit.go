package activities

import (
	"context"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/usage"
)

// admission is a request let through every gate: its limiter permit, its breaker ticket and the worst-case cost
// reserved against the budget. Whoever holds one ends all three: the permit released, the ticket reported (or
// released, when the request is not sent), the reservation settled.
type admission struct {
	permit   *ratelimit.Permit
	ticket   breaker.Ticket
	reserved usage.USD
}

// admitter decides when a request may go: its worst-case cost fits the pass's share of the budget, the endpoint's
// breaker admits it (closed, or this request is the probe of an outage), and the limiter's gates (concurrency,
// RPM, TPM) let it through. Only the dispatcher calls it.
type admitter struct {
	budget  *budget
	share   *shareKeeper
	brk     *breaker.Breaker
	limiter *ratelimit.Limiter
	stop    *stopper
	tok     *llm.Tokenizer
	model   experiment.Model
	price   experiment.Price
	priced  bool
	tpm     bool // the pass has a token limit: reservations count tokens
	// gen is the breaker generation the pass last admitted in: when it changed, an outage began or ended, and the
	// pass starts again at a low concurrency that grows back with answers, as after a rate limit.
	gen uint64
}

// admit waits until a request of the given worst-case cost and token reservation may go. It returns false when
// the dispatch ends first (the pass is stopping, or its budget share is used up).
func (ad *admitter) admit(ctx context.Context, cost usage.USD, tokens int) (admission, bool) {
	if !ad.reserveBudget(ctx, cost) {
		return admission{}, false
	}
	// The limiter first: a pass waiting for its own gates holds no probe that every pass of the endpoint needs.
	permit, err := ad.limiter.Acquire(ctx, tokens)
	if err != nil {
		ad.budget.settle(cost, 0)
		return admission{}, false
	}
	tk, err := ad.brk.Admit(ctx)
	if err != nil {
		permit.Release(0)
		ad.budget.settle(cost, 0)
		return admission{}, false
	}
	if ctx.Err() != nil {
		// The dispatch stopped while the gates let the request through: a gate whose permit and the stop are
		// ready at once may hand out the permit, and each call landing after a stop would then let one more go.
		ad.abandon(admission{permit: permit, ticket: tk, reserved: cost})
		return admission{}, false
	}
	if g := ad.brk.Generation(); g != ad.gen {
		ad.gen = g
		ad.limiter.Backoff()
	}
	return admission{permit: permit, ticket: tk, reserved: cost}, true
}

// abandon ends an admission whose request is not sent after all.
func (ad *admitter) abandon(adm admission) {
	adm.permit.Release(0)
	ad.brk.Release(adm.ticket)
	ad.budget.settle(adm.reserved, 0)
}

// chatTokens is the TPM reservation of a chat call: its prompt's tokens plus the completion it may produce.
// Counting costs a tokenizer pass, so it is only done when a token limit needs it.
func (ad *admitter) chatTokens(msgs []experiment.Message) int {
	if !ad.tpm || ad.tok == nil {
		return 0
	}
	return ad.tok.CountMessages(ad.model.Name, msgs) + maxTokens(ad.model)
}

// chatCost is the most a chat call can cost: its prompt and the longest completion. Zero without a budget.
func (ad *admitter) chatCost(msgs []experiment.Message) usage.USD {
	if ad.budget == nil || !ad.priced || ad.tok == nil {
		return 0
	}
	return llm.Cost(ad.price, ad.tok.CountMessages(ad.model.Name, msgs), maxTokens(ad.model))
}

// maxTokens is the completion a call may produce: the model's max_completion_tokens or max_tokens, or the
// default assumed for it.
func maxTokens(m experiment.Model) int { return m.Params.CompletionCap() }

// reserveBudget reserves a call's worst-case cost against the pass's share of the budget. When it does not fit,
// the pass asks the workflow for its current share once (finished passes may have left budget behind); when it
// still does not fit, the pass stops with the budget exhausted.
func (ad *admitter) reserveBudget(ctx context.Context, cost usage.USD) bool {
	if ad.budget.reserve(cost) {
		return true
	}
	if ad.share.refresh(ctx) && ad.budget.reserve(cost) {
		return true
	}
	ad.stop.stop(stopBudget)
	return false
}
