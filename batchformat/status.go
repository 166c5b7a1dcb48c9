package batchformat

import (
	"cmp"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/silicolab/silico/wire"
)

// openAIStatus maps OpenAI's batch statuses.
var openAIStatus = map[string]wire.BatchStatus{
	"validating": wire.BatchStatusValidating, "in_progress": wire.BatchStatusInProgress, "finalizing": wire.BatchStatusFinalizing,
	"cancelling": wire.BatchStatusCancelling, "completed": wire.BatchStatusCompleted, "failed": wire.BatchStatusFailed, "expired": wire.BatchStatusExpired,
	"cancelled": wire.BatchStatusCancelled,
}

// FromOpenAI reads an OpenAI batch object. An unknown status is not guessed at: taking a new status for a
// terminal one would collect results that are not there, taking it for a running one could wait for ever. It is
// wire.BatchStatusUnknown, with the provider's word in State, which AwaitBatch follows for a bounded time.
func FromOpenAI(b openai.Batch) (wire.BatchInfo, error) {
	st, ok := openAIStatus[b.Status]
	state := ""
	if !ok {
		st, state = wire.BatchStatusUnknown, cmp.Or(b.Status, "(none)")
	}
	c := b.RequestCounts
	in := wire.BatchInfo{ID: b.ID, Status: st, State: state,
		// completed and failed are disjoint in OpenAI's counts; a line of the status_code trap may count as
		// completed, which only the result file tells apart.
		Counts:      wire.BatchCounts{Total: c.Total, Succeeded: c.Completed, Errored: c.Failed},
		CreatedAt:   unix(b.CreatedAt),
		InputFileID: b.InputFileID,
	}
	if b.ExpiresAt != nil {
		in.ExpiresAt = unix(*b.ExpiresAt)
	}
	if b.OutputFileID != nil {
		in.OutputFileID = *b.OutputFileID
	}
	if b.ErrorFileID != nil {
		in.ErrorFileID = *b.ErrorFileID
	}
	if len(b.Metadata) > 0 {
		in.Metadata = make(map[string]string, len(b.Metadata))
		for k, v := range b.Metadata {
			if s, ok := v.(string); ok {
				in.Metadata[k] = s
			}
		}
	}
	if b.Errors != nil {
		for _, e := range b.Errors.Data {
			f := wire.BatchError{Code: e.Code, Message: e.Message}
			if e.Line != nil {
				f.Line = *e.Line
			}
			if e.Param != nil {
				f.Param = *e.Param
			}
			s := e.Code + ": " + e.Message
			if e.Line != nil {
				s = fmt.Sprintf("line %d: %s", *e.Line, s)
			}
			in.Errors = append(in.Errors, s)
			in.Failures = append(in.Failures, f)
		}
	}
	return in, nil
}

func unix(s int) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(s), 0).UTC()
}

// AnthropicBatch is an Anthropic Message Batch object, as create, retrieve, list and cancel return it.
type AnthropicBatch struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	ProcessingStatus string `json:"processing_status"`
	RequestCounts    struct {
		Processing int `json:"processing"`
		Succeeded  int `json:"succeeded"`
		Errored    int `json:"errored"`
		Canceled   int `json:"canceled"`
		Expired    int `json:"expired"`
	} `json:"request_counts"`
	CreatedAt         time.Time  `json:"created_at"`
	ExpiresAt         time.Time  `json:"expires_at"`
	EndedAt           *time.Time `json:"ended_at"`
	CancelInitiatedAt *time.Time `json:"cancel_initiated_at"`
	ArchivedAt        *time.Time `json:"archived_at"`
	ResultsURL        *string    `json:"results_url"`
}

// FromAnthropic reads an Anthropic batch object. Anthropic has one terminal status, ended; it is Cancelled when
// a cancel was initiated, Expired when any request expired, else Completed. Another processing_status is
// wire.BatchStatusUnknown, as for FromOpenAI.
func FromAnthropic(b AnthropicBatch) (wire.BatchInfo, error) {
	c := b.RequestCounts
	in := wire.BatchInfo{ID: b.ID, CreatedAt: b.CreatedAt, ExpiresAt: b.ExpiresAt,
		Counts: wire.BatchCounts{Total: c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired,
			Succeeded: c.Succeeded, Errored: c.Errored, NotRun: c.Canceled + c.Expired}}
	if b.ResultsURL != nil {
		in.ResultsURL = *b.ResultsURL
	}
	switch b.ProcessingStatus {
	case "in_progress":
		in.Status = wire.BatchStatusInProgress
	case "canceling":
		in.Status = wire.BatchStatusCancelling
	case "ended":
		switch {
		case b.CancelInitiatedAt != nil:
			in.Status = wire.BatchStatusCancelled
		case c.Expired > 0:
			in.Status = wire.BatchStatusExpired
		default:
			in.Status = wire.BatchStatusCompleted
		}
	default:
		in.Status, in.State = wire.BatchStatusUnknown, cmp.Or(b.ProcessingStatus, "(none)")
	}
	return in, nil
}
