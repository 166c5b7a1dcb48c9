package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/optionprobs"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
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
func (r *recorder) answerRecord(c experiment.Cell, a respcache.Answer) store.Record {
	return answerRecord(r.spec, c, a, r.price, r.priced)
}

// answerRecord is the record of cell c of spec answered with a, its cost at price when priced: one record for an
// answer, whether a synchronous call, the response cache or a provider batch gave it.
//
// The written answer is matched to the item's options as the cell showed them (under a json_schema answer, the JSON's "answer"); an
// answer the content filter withheld, or one cut at the completion cap before it named an option, is unparsed
// with a class that says so. Where the model's answer mode reads logprobs, the record carries the distribution
// over the options that the label token's alternatives give. Under mode verbalized the answer is the JSON object
// of stated probabilities (optionprobs.FromStated): the record carries them normalised, with their raw sum, and
// its option is the most likely one (unparsed with candidates on a tie); an unusable statement is unparsed, its
// schema invalid and its error_message saying why.
func answerRecord(spec *experiment.Spec, c experiment.Cell, a respcache.Answer, price experiment.Price, priced bool) store.Record {
	// The model read the options as the cell showed them: the answer is matched and its distribution read
	// against the labels it saw (the shown set's ids; never the spec's ids, which the prompt does not show),
	// then mapped back by position to canonical ids and order, so analyses pool across orders.
	shown := spec.Shown(c)
	set := shown.Set
	mode := spec.CellAnswer(c)
	text := a.Text
	var schema string
	if mode.Mode == experiment.AnswerJSONSchema {
		id, ok := jsonAnswer(a.Text, set)
		schema = store.SchemaInvalid
		if ok {
			text, schema = id, store.SchemaValid
		}
	}
	var stated optionprobs.Dist
	var statedSum float64
	var statedErr error
	m := experiment.MatchResult{}
	if mode.Mode == experiment.AnswerVerbalized {
		stated, statedSum, statedErr = optionprobs.FromStated(a.Text, set)
		m = statedAnswer(stated, statedErr, set)
		schema = store.SchemaInvalid
		if statedErr == nil {
			schema = store.SchemaValid
		}
	} else {
		m = experiment.Match(text, set)
	}
	if m.OptionID != "" {
		m.OptionID, _ = shown.CanonicalID(m.OptionID)
	}
	for k, id := range m.Candidates {
		if cid, ok := shown.CanonicalID(id); ok {
			m.Candidates[k] = cid
		}
	}
	rec := store.Record{
		Index:            c.Index,
		Status:           m.Status,
		OptionID:         m.OptionID,
		Raw:              a.Text,
		Candidates:       strings.Join(m.Candidates, ","),
		PromptTokens:     a.PromptTokens,
		CompletionTokens: a.CompletionTokens,
		FinishReason:     a.FinishReason,
		Schema:           schema,
		// The call's, or for a cached answer the call's that produced it (respcache.Answer keeps them).
		ServedModel:       a.ServedModel,
		SystemFingerprint: a.SystemFingerprint,
	}
	switch {
	case a.FinishReason == llm.FinishContentFilter:
		rec.Status, rec.OptionID, rec.Candidates = store.StatusUnparsed, "", ""
		rec.ErrorClass = errclass.ContentFiltered
		rec.ErrorMessage = "the provider's content filter withheld the answer (finish_reason content_filter)"
	case m.Status == experiment.MatchUnparsed && a.FinishReason == llm.FinishLength:
		rec.ErrorClass = errclass.Truncated
		rec.ErrorMessage = fmt.Sprintf("the answer was cut at the completion cap (%d tokens) before it named an option (finish_reason length); raise max_tokens",
			spec.Models[c.Model].Params.CompletionCap())
	case statedErr != nil:
		rec.ErrorMessage = "verbalized answer unusable: " + statedErr.Error()
	}
	if stated.Probs != nil && rec.ErrorClass == "" {
		rec.Probs, rec.Coverage, rec.ProbsSum = shown.CanonicalProbs(stated.Probs), stated.Coverage, statedSum
	}
	if mode.Logprobs {
		if d, ok := optionprobs.FromLogprobs(a.Logprobs, set, mode.Prefix); ok {
			rec.Probs, rec.Coverage = shown.CanonicalProbs(d.Probs), d.Coverage
		}
	}
	if priced {
		rec.CostUSD = llm.Cost(price, a.PromptTokens, a.CompletionTokens)
	}
	return rec
}

// statedAnswer is the written answer of a verbalized cell: the option with the highest stated probability;
// unparsed with the tied options as candidates when several share it, and unparsed without any when the
// statement was unusable (err).
func statedAnswer(d optionprobs.Dist, err error, set experiment.OptionSet) experiment.MatchResult {
	if err != nil {
		return experiment.MatchResult{Status: experiment.MatchUnparsed}
	}
	top := d.Probs[d.Argmax()]
	var tied []string
	for k, p := range d.Probs {
		if p == top {
			tied = append(tied, set.Options[k].ID)
		}
	}
	if len(tied) > 1 {
		return experiment.MatchResult{Status: experiment.MatchUnparsed, Candidates: tied}
	}
	return experiment.MatchResult{Status: experiment.MatchOK, OptionID: tied[0]}
}

// jsonAnswer reads the label of a json_schema answer: a JSON object whose "answer" is one of set's ids (the
// labels shown, which the schema's enum lists). ok is false for anything else (the server did not apply the
// schema), and the text is then matched as written.
func jsonAnswer(text string, set experiment.OptionSet) (string, bool) {
	var v struct {
		Answer *string `json:"answer"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil || v.Answer == nil {
		return "", false
	}
	for _, o := range set.Options {
		if o.ID == *v.Answer {
			return o.ID, true
		}
	}
	return "", false
}

// noLogprobs is the error that ends a model whose answer mode reads logprobs when an answer came without them.
func noLogprobs(m experiment.Model) *llm.Error {
	return &llm.Error{Class: errclass.NoLogprobs, Code: "no_logprobs", Message: fmt.Sprintf(
		"model %s (%s) answered without logprobs, which answer mode %s reads; its server does not return them "+
			"(reasoning models and some servers do not): use answer: {mode: samples} for a distribution over the seeds", m.ID, m.Name, experiment.AnswerLogprobs)}
}

// failedRecord is the record of a cell whose last try failed with e.
func failedRecord(idx int, e *llm.Error, t wire.Tries) store.Record {
	return store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: string(e.Class), ErrorCode: e.Code, ErrorMessage: describe(e),
		LatencyMS: t.LatencyMS, Attempts: t.Sent, Tries: t.Transient}
}

// describe is what a failed cell says about its provider's answer: the status and code, then the message.
func describe(e *llm.Error) string {
	msg := strings.TrimPrefix(e.Error(), "llm: "+string(e.Class))
	return strings.TrimSpace(strings.TrimPrefix(msg, ":"))
}
