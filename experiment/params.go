package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ReasoningEfforts are the values of params.reasoning_effort.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// MaxTopLogprobs is the most alternatives per token OpenAI's API returns (top_logprobs 0–20).
const MaxTopLogprobs = 20

// reasoningPrefixes start the names of OpenAI's reasoning models, which take max_completion_tokens instead of
// max_tokens and return no logprobs.
var reasoningPrefixes = []string{"o1", "o3", "o4", "gpt-5"}

// IsReasoningModel says whether name is one of OpenAI's reasoning models (o1, o3, o4, gpt-5 and their variants).
func IsReasoningModel(name string) bool {
	return slices.ContainsFunc(reasoningPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// paramNames are the keys of params: an extra key may not be one of them (it would be sent twice), nor a key
// silico itself sends.
var paramNames = []string{"temperature", "top_p", "max_tokens", "stop", "presence_penalty", "frequency_penalty",
	"logit_bias", "reasoning_effort", "max_completion_tokens", "logprobs", "top_logprobs", "response_format", "n"}

// ownKeys are the request body keys silico sets itself.
var ownKeys = []string{"model", "messages", "seed", "stream", "stream_options"}

// CompletionCap is the most completion tokens a call may produce as far as budgets and estimates know:
// max_completion_tokens or max_tokens, else DefaultMaxTokens.
func (p Params) CompletionCap() int {
	switch {
	case p.MaxCompletionTokens > 0:
		return p.MaxCompletionTokens
	case p.MaxTokens > 0:
		return p.MaxTokens
	}
	return DefaultMaxTokens
}

// checkParams checks the params of model m at path p (models[i]).
func checkParams(errs *Errors, p string, m Model) {
	q := m.Params
	p += ".params"
	between := func(key string, v *float64, lo, hi float64) {
		if v != nil && (*v < lo || *v > hi || math.IsNaN(*v)) {
			errs.add(p+"."+key, "%v is out of range; want a number from %v to %v", *v, lo, hi)
		}
	}
	between("temperature", q.Temperature, 0, 2)
	if t := q.TopP; t != nil && (*t <= 0 || *t > 1 || math.IsNaN(*t)) {
		errs.add(p+".top_p", "%v is out of range; want a number above 0 and at most 1", *t)
	}
	nonNegative(errs, p+".max_tokens", q.MaxTokens, "a number of tokens ≥ 0 (0: the provider's default)")
	nonNegative(errs, p+".max_completion_tokens", q.MaxCompletionTokens, "a number of tokens ≥ 0 (0: the provider's default)")
	if q.MaxTokens > 0 && q.MaxCompletionTokens > 0 {
		errs.add(p+".max_completion_tokens", "both max_tokens and max_completion_tokens are set; set one (max_completion_tokens also counts a reasoning model's reasoning tokens)")
	}
	if len(q.Stop) > 4 && m.Provider != ProviderAnthropic {
		errs.add(p+".stop", "%d stop sequences; OpenAI-compatible APIs accept at most 4", len(q.Stop))
	}
	between("presence_penalty", q.PresencePenalty, -2, 2)
	between("frequency_penalty", q.FrequencyPenalty, -2, 2)
	for _, tok := range slices.Sorted(maps.Keys(q.LogitBias)) {
		if _, err := strconv.ParseUint(tok, 10, 32); err != nil {
			errs.add(p+".logit_bias."+tok, "%q is not a token id; logit_bias maps token ids of the model's tokenizer (\"1639\") to a bias", tok)
		}
		if b := q.LogitBias[tok]; b < -100 || b > 100 {
			errs.add(p+".logit_bias."+tok, "%d is out of range; want a bias from -100 to 100", b)
		}
	}
	if e := q.ReasoningEffort; e != "" && !slices.Contains(ReasoningEfforts, e) {
		errs.add(p+".reasoning_effort", "unknown effort %q; want %s", e, oneOf(ReasoningEfforts))
	}
	if n := q.TopLogprobs; n != nil {
		switch {
		case *n < 0 || *n > MaxTopLogprobs:
			errs.add(p+".top_logprobs", "%d is out of range; want a number of alternatives from 0 to %d", *n, MaxTopLogprobs)
		case !q.Logprobs:
			errs.add(p+".top_logprobs", "needs logprobs: true (or answer: {mode: logprobs}, which sets both)")
		}
	}
	if q.N != 0 && q.N != 1 {
		errs.add(p+".n", "%d choices per call: silico records one answer per cell, so only n: 1 is accepted; for several samples of a cell add seeds (answer: {mode: samples} turns them into a distribution)", q.N)
	}
	if len(q.ResponseFormat) > 0 {
		if msg := checkResponseFormat(q.ResponseFormat); msg != "" {
			errs.add(p+".response_format", "%s", msg)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(q.Extra)) {
		switch {
		case slices.Contains(paramNames, k):
			errs.add(p+".extra."+k, "%s is a parameter of its own; set it as params.%s, outside extra", k, k)
		case slices.Contains(ownKeys, k):
			errs.add(p+".extra."+k, "silico sets %s itself; extra holds only keys a server adds (top_k, min_p, repeat_penalty)", k)
		case !json.Valid(q.Extra[k]):
			errs.add(p+".extra."+k, "is not a JSON value")
		}
	}
	if IsReasoningModel(m.Name) && m.Provider != ProviderAnthropic {
		if q.Logprobs {
			errs.add(p+".logprobs", "%s is a reasoning model: OpenAI returns no logprobs for it; use answer: {mode: samples} for a distribution over the seeds", m.Name)
		}
	}
	if m.Provider == ProviderGemini {
		// The keys a request of provider gemini cannot carry the same way in both modes: the batch line is
		// Gemini's native GenerateContentRequest (llm.GeminiBody), which has no field for them.
		for _, kv := range []struct {
			key string
			set bool
		}{{"logit_bias", len(q.LogitBias) > 0}, {"reasoning_effort", q.ReasoningEffort != ""},
			{"logprobs", q.Logprobs}, {"top_logprobs", q.TopLogprobs != nil}, {"extra", len(q.Extra) > 0}} {
			if kv.set {
				errs.add(p+"."+kv.key, "provider gemini sends no %s: a batch line is Gemini's native request, which has no such field; remove it", kv.key)
			}
		}
	}
	if m.Provider == ProviderAnthropic {
		for _, kv := range []struct {
			key string
			set bool
		}{{"presence_penalty", q.PresencePenalty != nil}, {"frequency_penalty", q.FrequencyPenalty != nil},
			{"logit_bias", len(q.LogitBias) > 0}, {"reasoning_effort", q.ReasoningEffort != ""},
			{"max_completion_tokens", q.MaxCompletionTokens > 0}, {"logprobs", q.Logprobs},
			{"top_logprobs", q.TopLogprobs != nil}, {"response_format", len(q.ResponseFormat) > 0}} {
			if kv.set {
				errs.add(p+"."+kv.key, "Anthropic's Messages API has no %s; remove it for provider anthropic (extra: sends keys it does have, such as top_k)", kv.key)
			}
		}
	}
}

// checkResponseFormat says what is wrong with a response_format, or "".
func checkResponseFormat(raw json.RawMessage) string {
	var rf struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return "want an object such as {type: json_object} or {type: json_schema, json_schema: {name: answer, schema: {...}}}"
	}
	switch rf.Type {
	case "text", "json_object":
		return ""
	case "json_schema":
		var js struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(rf.JSONSchema, &js); err != nil || js.Name == "" || len(bytes.TrimSpace(js.Schema)) == 0 {
			return "type json_schema needs json_schema: {name: ..., schema: {...}} (answer: {mode: json_schema} builds one from each item's options)"
		}
		return ""
	}
	return fmt.Sprintf("type %q; want %s", rf.Type, oneOf([]string{"text", "json_object", "json_schema"}))
}
