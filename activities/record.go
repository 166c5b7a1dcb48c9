package activities

import (
	"context"
	"strings"

	"github.com/silicolab/silico/cache"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
)

// recorder writes what a pass finishes: each cell's record, with the cache entry of a fresh answer, through the
// results writer's group commit; and it counts it (tally, budget, cache tallies, metrics). Under on_error=raise
// a failure stops the dispatch.
type recorder struct {
	writer *store.Writer
	tally  *tally
	budget *budget
	stop   *stopper
	obs    Observer
	cu     *cacheUse
	spec   *experiment.Spec
	model  experiment.Model
	price  experiment.Price
	priced bool
}

// record writes a finished cell, with the cache entry of its answer when e is set, and counts it.
func (r *recorder) record(rec store.Record, e *store.CacheEntry) {
	var err error
	if e != nil {
		err = r.writer.AddAnswer(context.Background(), rec, *e)
	} else {
		err = r.writer.Add(context.Background(), rec)
	}
	if err != nil {
		// The writer keeps the error and Close returns it; the attempt fails and is retried.
		r.stop.stop(stopCancelled)
		return
	}
	if r.cu.reads() {
		t := store.CacheTally{Misses: 1}
		if rec.Cached {
			t = store.CacheTally{Hits: 1}
		}
		r.writer.Tally(r.model.Name, t)
		r.obs.Looked(r.model.Name, t)
	}
	r.tally.count(rec)
	r.budget.settle(0, rec.Usage().CostUSD)
	if rec.Status == store.StatusFailed && r.spec.Run.OnError == experiment.OnErrorRaise {
		r.stop.stop(stopRaise)
	}
}

// invalid counts cache entries that failed validation.
func (r *recorder) invalid(n int) { r.writer.Tally(r.model.Name, store.CacheTally{Invalid: n}) }

// answerRecord is the record of cell c answered with a: the text matched to the item's options, the tokens, and
// the cost at the model's price.
func (r *recorder) answerRecord(c experiment.Cell, a cache.Answer) store.Record {
	return answerRecord(r.spec, c, a, r.price, r.priced)
}

// answerRecord is the record of cell c of spec answered with a, its cost at price when priced: one record for an
// answer, whether a synchronous call, the response cache or a provider batch gave it.
func answerRecord(spec *experiment.Spec, c experiment.Cell, a cache.Answer, price experiment.Price, priced bool) store.Record {
	m := experiment.Match(a.Text, spec.OptionsFor(c.Item))
	rec := store.Record{
		Index:            c.Index,
		Status:           m.Status,
		OptionID:         m.OptionID,
		Raw:              a.Text,
		Candidates:       strings.Join(m.Candidates, ","),
		PromptTokens:     a.PromptTokens,
		CompletionTokens: a.CompletionTokens,
	}
	if priced {
		rec.CostUSD = llm.Cost(price, a.PromptTokens, a.CompletionTokens)
	}
	return rec
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
