package batch

import (
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Status is where a batch stands, the same for both formats.
type Status string

// The statuses. Completed, Failed, Expired and Cancelled are terminal: the batch will not change again.
const (
	// StatusValidating: the provider is checking the input (OpenAI's validating).
	StatusValidating Status = "validating"
	// StatusInProgress: requests are being run.
	StatusInProgress Status = "in_progress"
	// StatusFinalizing: every request has run and the results are being written (OpenAI's finalizing).
	StatusFinalizing Status = "finalizing"
	// StatusCancelling: a cancel was asked for; requests already running may still finish.
	StatusCancelling Status = "cancelling"
	// StatusCompleted: every request ran; some may have failed. The results are ready.
	StatusCompleted Status = "completed"
	// StatusFailed: the provider rejected the batch as a whole (its input did not validate); nothing ran.
	StatusFailed Status = "failed"
	// StatusExpired: the completion window ended first; what completed is in the results, the rest never ran.
	StatusExpired Status = "expired"
	// StatusCancelled: cancelled; what completed is in the results, the rest never ran.
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether s is final.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusExpired, StatusCancelled:
		return true
	}
	return false
}

// Counts are a batch's requests by what became of them so far.
type Counts struct {
	// Total is every request of the batch.
	Total int `json:"total"`
	// Succeeded and Errored ran; Errored failed.
	Succeeded int `json:"succeeded"`
	Errored   int `json:"errored"`
	// NotRun were cancelled or expired before they ran (known only from Anthropic's counts while in progress).
	NotRun int `json:"not_run"`
}

// Done is how many requests ran, successfully or not.
func (c Counts) Done() int { return c.Succeeded + c.Errored }

// Info is a batch as its provider describes it, in one shape for both formats.
type Info struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	Counts Counts `json:"counts"`
	// CreatedAt and ExpiresAt are zero when the provider did not say.
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// OutputFileID and ErrorFileID are the result files of an OpenAI batch, once it has them.
	OutputFileID string `json:"output_file_id,omitempty"`
	ErrorFileID  string `json:"error_file_id,omitempty"`
	// ResultsURL is where an ended Anthropic batch's results are streamed from.
	ResultsURL string `json:"results_url,omitempty"`
	// Metadata is the batch's metadata (OpenAI; Anthropic batches have none).
	Metadata map[string]string `json:"metadata,omitempty"`
	// Errors are the reasons an OpenAI batch failed as a whole ("line 3: invalid_request: ...").
	Errors []string `json:"errors,omitempty"`
}

// openAIStatus maps OpenAI's batch statuses.
var openAIStatus = map[string]Status{
	"validating": StatusValidating, "in_progress": StatusInProgress, "finalizing": StatusFinalizing,
	"cancelling": StatusCancelling, "completed": StatusCompleted, "failed": StatusFailed, "expired": StatusExpired,
	"cancelled": StatusCancelled,
}

// FromOpenAI reads an OpenAI batch object. An unknown status is an error rather than a guess: taking a new
// status for a terminal one would collect results that are not there, taking it for a running one would wait
// for ever.
func FromOpenAI(b openai.Batch) (Info, error) {
	st, ok := openAIStatus[b.Status]
	if !ok {
		return Info{}, fmt.Errorf("batch %s: unknown status %q", b.ID, b.Status)
	}
	c := b.RequestCounts
	in := Info{ID: b.ID, Status: st,
		// completed and failed are disjoint in OpenAI's counts; a line of the status_code trap may count as
		// completed, which only the result file tells apart.
		Counts:    Counts{Total: c.Total, Succeeded: c.Completed, Errored: c.Failed},
		CreatedAt: unix(b.CreatedAt),
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
			s := e.Code + ": " + e.Message
			if e.Line != nil {
				s = fmt.Sprintf("line %d: %s", *e.Line, s)
			}
			in.Errors = append(in.Errors, s)
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
// a cancel was initiated, Expired when any request expired, else Completed.
func FromAnthropic(b AnthropicBatch) (Info, error) {
	c := b.RequestCounts
	in := Info{ID: b.ID, CreatedAt: b.CreatedAt, ExpiresAt: b.ExpiresAt,
		Counts: Counts{Total: c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired,
			Succeeded: c.Succeeded, Errored: c.Errored, NotRun: c.Canceled + c.Expired}}
	if b.ResultsURL != nil {
		in.ResultsURL = *b.ResultsURL
	}
	switch b.ProcessingStatus {
	case "in_progress":
		in.Status = StatusInProgress
	case "canceling":
		in.Status = StatusCancelling
	case "ended":
		switch {
		case b.CancelInitiatedAt != nil:
			in.Status = StatusCancelled
		case c.Expired > 0:
			in.Status = StatusExpired
		default:
			in.Status = StatusCompleted
		}
	default:
		return Info{}, fmt.Errorf("batch %s: unknown processing_status %q", b.ID, b.ProcessingStatus)
	}
	return in, nil
}
