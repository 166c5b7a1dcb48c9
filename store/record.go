// Package store is the results store: one row per cell keyed by (run, cell index), written in batched
// transactions as results land, read back in submission order. Two back ends: a SQLite file (modernc.org/sqlite,
// WAL), the default, and PostgreSQL (pgx), which workers on several machines share. Open picks one by its DSN.
package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/silicolab/silico/usage"
)

// Cell statuses.
const (
	StatusOK       = "ok"
	StatusUnparsed = "unparsed"
	StatusFailed   = "failed"
)

// The values of Record.Schema.
const (
	SchemaValid   = "valid"
	SchemaInvalid = "invalid"
)

// Record is what one finished cell produced. Facts of the grid (model, item text, persona, ...) are not stored:
// they follow from the spec and the cell index.
type Record struct {
	Index    int    `json:"index"`
	Status   string `json:"status"`
	OptionID string `json:"option_id,omitempty"`
	// Raw is the model's text, always kept.
	Raw string `json:"raw,omitempty"`
	// Candidates lists the tied options of an unparsed answer, comma-separated.
	Candidates string `json:"candidates,omitempty"`
	ErrorClass string `json:"error_class,omitempty"`
	// ErrorCode is the provider's error code or type ("rate_limit_exceeded", "context_length_exceeded"), or
	// the kind of a transport failure ("timeout"), secrets removed; empty when there was none.
	ErrorCode        string    `json:"error_code,omitempty"`
	ErrorMessage     string    `json:"error_message,omitempty"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	CostUSD          usage.USD `json:"cost_usd"`
	LatencyMS        float64   `json:"latency_ms"`
	// Attempts counts the requests sent for the cell, over every execution of the run (a --retry-failed
	// execution adds its requests to what the earlier ones recorded): tries, rate-limited requests and the
	// probes of an outage alike. Zero for a cell that never reached the provider.
	Attempts int `json:"attempts"`
	// Tries counts the requests charged to the cell against run.max_attempts, over every execution of the run
	// like Attempts, so Tries <= Attempts. Rate limits and the requests of an outage are never charged.
	// Zero in records written before the store kept it.
	Tries int `json:"tries"`
	// Cached says the answer came from the response cache: no call was made, its tokens and its cost (what the
	// call would have cost) were not spent.
	Cached bool `json:"cached,omitempty"`
	// ImageSHA256 are the hex SHA-256 digests of the pictures the cell sent, in the order sent, joined with ','.
	ImageSHA256 string `json:"image_sha256,omitempty"`
	// FinishReason is why the provider stopped generating ("stop", "length", "content_filter"), as it said;
	// empty when it said nothing or the call failed.
	FinishReason string `json:"finish_reason,omitempty"`
	// Probs is the cell's probability of each answer option, in the order of the item's options, renormalised
	// over the options (they sum to 1): read from the label token's logprobs, or the probabilities a verbalized
	// answer stated; nil when the cell has no distribution (none asked for, or none usable).
	Probs []float64 `json:"probs,omitempty"`
	// Schema says whether a json_schema answer was JSON of the schema naming one of the options, or a verbalized
	// answer a usable object of probabilities (SchemaValid), or not (SchemaInvalid); empty under other answer
	// modes.
	Schema string `json:"schema,omitempty"`
	// Coverage is the probability mass the model put on valid option labels before renormalisation, in (0, 1];
	// zero when Probs is nil.
	Coverage float64 `json:"coverage,omitempty"`
	// ProbsSum is, under the verbalized answer mode, the sum of the probabilities the model stated before Probs
	// normalised them (any non-negative number; 1 when the model's numbers already summed to 1); zero under
	// other modes and when the stated probabilities were unusable.
	ProbsSum float64 `json:"probs_sum,omitempty"`
	// ServedModel is the model the provider says answered (its response's model, e.g. a dated snapshot of the
	// name asked for) and SystemFingerprint OpenAI's system_fingerprint, as llm.Provenance cleaned them. A
	// cached answer keeps those of the call that produced it. Empty when the provider sent none, the call
	// failed, or the record was written before the store kept them.
	ServedModel       string `json:"served_model,omitempty"`
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
}

// Usage is what the record's call consumed. A cell answered from the response cache consumed nothing: its cost
// is saved.
func (r Record) Usage() usage.Usage {
	if r.Cached {
		return usage.Usage{SavedUSD: r.CostUSD}
	}
	return usage.Usage{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, CostUSD: r.CostUSD}
}

// EncodeProbs writes option probabilities as the store keeps them: comma-separated, each in the shortest form
// that reads back to the same float64; "" for none.
func EncodeProbs(p []float64) string {
	if len(p) == 0 {
		return ""
	}
	b := make([]byte, 0, 20*len(p))
	for i, v := range p {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return string(b)
}

// DecodeProbs reads what EncodeProbs wrote.
func DecodeProbs(s string) ([]float64, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]float64, len(parts))
	for i, f := range parts {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("probs %q: %w", s, err)
		}
		out[i] = v
	}
	return out, nil
}
