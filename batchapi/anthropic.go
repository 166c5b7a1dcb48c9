package batchapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

// ErrAmbiguous is returned by Anthropic.Submit when more than one unknown batch could be the one an earlier
// attempt created: adopting either might record another chunk's answers, creating another might pay twice.
var ErrAmbiguous = errors.New("batchapi: more than one batch could be this chunk's")

// AmbiguousError is ErrAmbiguous with the batches that could be the chunk's: the caller can wait for them to end
// and tell its own apart by their results (their custom ids are the chunk's requests), where Submit cannot.
type AmbiguousError struct {
	// Candidates are the ids of the unknown batches created since the intent with as many requests, ascending.
	Candidates []string
}

// Error says which batches could be the chunk's.
func (e *AmbiguousError) Error() string { return fmt.Sprintf("%v: %v", ErrAmbiguous, e.Candidates) }

// Unwrap makes an AmbiguousError ErrAmbiguous.
func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// AnthropicSubmission is one chunk of requests to run as an Anthropic Message Batch.
type AnthropicSubmission struct {
	// Input is the create request's body (batchformat.Encode of the lines in FormatAnthropic).
	Input []byte
	// Requests is how many requests Input holds.
	Requests int
	// Intent is when this chunk's first create was about to be sent, as the caller recorded it before sending
	// (an activity heartbeat, the workflow's state): zero when no create of it was ever begun.
	Intent time.Time
	// Known are the ids of the batches the run has already adopted for other chunks.
	Known []string
}

// Anthropic drives Anthropic's Message Batches.
//
// Its batches carry no metadata, so a batch is found again by what can be seen of it: created at or after the
// intent of its chunk, with as many requests, and not already a known batch of the run. An attempt records its
// intent before it creates; a retry that finds exactly one such batch adopts it, one that finds none creates, and
// one that finds several stops with an AmbiguousError naming them rather than guess.
type Anthropic struct {
	c        *llm.AnthropicClient
	pageSize int
}

// NewAnthropic returns a driver of the API c calls.
func NewAnthropic(c *llm.AnthropicClient) *Anthropic { return &Anthropic{c: c, pageSize: 100} }

// Submit returns the batch of s: the one an earlier attempt created after s.Intent, or a new one.
func (a *Anthropic) Submit(ctx context.Context, s AnthropicSubmission) (wire.BatchInfo, error) {
	if !s.Intent.IsZero() {
		found, err := a.find(ctx, s)
		if err != nil {
			return wire.BatchInfo{}, err
		}
		switch len(found) {
		case 0:
		case 1:
			return found[0], nil
		default:
			ids := make([]string, len(found))
			for i, f := range found {
				ids[i] = f.ID
			}
			slices.Sort(ids)
			return wire.BatchInfo{}, &AmbiguousError{Candidates: ids}
		}
	}
	data, err := a.c.CreateMessageBatch(ctx, s.Input)
	if err != nil {
		return wire.BatchInfo{}, fmt.Errorf("create message batch: %w", err)
	}
	return decode(data)
}

// find lists the unknown batches created since s.Intent with s.Requests requests.
func (a *Anthropic) find(ctx context.Context, s AnthropicSubmission) ([]wire.BatchInfo, error) {
	var out []wire.BatchInfo
	after := ""
	for {
		data, err := a.c.ListMessageBatches(ctx, after, a.pageSize)
		if err != nil {
			return nil, fmt.Errorf("list message batches: %w", err)
		}
		var page struct {
			Data    []batchformat.AnthropicBatch `json:"data"`
			HasMore bool                         `json:"has_more"`
			LastID  string                       `json:"last_id"`
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return nil, fmt.Errorf("list message batches: %w", err)
		}
		for _, b := range page.Data {
			// The provider's clock and the caller's differ by a little; a second of slack keeps a batch created
			// right after the intent from looking older than it.
			if b.CreatedAt.Before(s.Intent.Add(-time.Second)) {
				return out, nil // newest first
			}
			if slices.Contains(s.Known, b.ID) {
				continue
			}
			info, err := batchformat.FromAnthropic(b)
			if err != nil {
				return nil, err
			}
			if info.Counts.Total == s.Requests {
				out = append(out, info)
			}
		}
		if !page.HasMore || len(page.Data) == 0 {
			slices.SortFunc(out, func(x, y wire.BatchInfo) int { return cmp.Compare(x.ID, y.ID) })
			return out, nil
		}
		after = cmp.Or(page.LastID, page.Data[len(page.Data)-1].ID)
	}
}

func decode(data []byte) (wire.BatchInfo, error) {
	var b batchformat.AnthropicBatch
	if err := json.Unmarshal(data, &b); err != nil {
		return wire.BatchInfo{}, fmt.Errorf("read message batch: %w", err)
	}
	return batchformat.FromAnthropic(b)
}

// Poll returns batch id as it stands now.
func (a *Anthropic) Poll(ctx context.Context, id string) (wire.BatchInfo, error) {
	data, err := a.c.RetrieveMessageBatch(ctx, id)
	if err != nil {
		return wire.BatchInfo{}, fmt.Errorf("retrieve message batch %s: %w", id, err)
	}
	return decode(data)
}

// Cancel asks for batch id to be cancelled and returns it.
func (a *Anthropic) Cancel(ctx context.Context, id string) (wire.BatchInfo, error) {
	data, err := a.c.CancelMessageBatch(ctx, id)
	if err != nil {
		return wire.BatchInfo{}, fmt.Errorf("cancel message batch %s: %w", id, err)
	}
	return decode(data)
}

// Collect streams every result of an ended batch to fn, texts of errors redacted; it can run again after dying
// half way, as OpenAI.Collect can.
func (a *Anthropic) Collect(ctx context.Context, info wire.BatchInfo, fn func(batchformat.Result) error) (err error) {
	rc, err := a.c.MessageBatchResults(ctx, info.ID, info.ResultsURL)
	if err != nil {
		return fmt.Errorf("results of message batch %s: %w", info.ID, err)
	}
	defer func() { err = errors.Join(err, rc.Close()) }()
	return batchformat.Scan(wire.FormatAnthropic, rc, a.c.Redact, fn)
}
