package wire

import (
	"fmt"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/usage"
)

// The payloads of a batch pass's activities (see workflows/batchpass.go and activities/batchpass.go), and a
// provider batch as silico describes it in them.

// BatchPassInput names a batch pass of a run.
type BatchPassInput struct {
	RunID string          `json:"run_id"`
	Pass  experiment.Pass `json:"pass"`
}

// BatchPlan is what PlanBatchPass decided: the cells of each chunk, in order, with the digest of the lines it
// built for them; how many cells the response cache answered and how many no line could carry (both recorded at
// once); and the batch format of the pass's model, which says how the workflow submits. Chunks are sets of spans,
// so the plan of a million cells is a few bytes of history, not megabytes (Temporal refuses a payload over 2 MiB).
type BatchPlan struct {
	Chunks  []experiment.CellSet `json:"chunks"`
	Digests []string             `json:"digests,omitempty"`
	Cached  int                  `json:"cached"`
	// Costs are the chunks' worst-case costs at the batch price, which the workflow reserves against budget_usd
	// before it submits each: every prompt and the longest completion. Empty when the run has no budget.
	Costs []usage.USD `json:"costs,omitempty"`
	// Failed counts the cells recorded failed without a batch: a picture that could not be fetched, a text too
	// long for any request, a request larger than a batch.
	Failed int `json:"failed,omitempty"`
	// Usage is what the recorded cells count: the cached cells' cost at the batch price, as saved.
	Usage usage.Usage `json:"usage"`
	// Format is the model's batch format; empty in plans recorded before it was part of the plan, which were all
	// of the OpenAI format.
	Format BatchFormat `json:"format,omitempty"`
}

// BatchChunkInput names one chunk's batch of one round: the cells it asks for, as the recorded plan (or the
// previous round's Again) lists them.
type BatchChunkInput struct {
	RunID string             `json:"run_id"`
	Pass  experiment.Pass    `json:"pass"`
	Chunk int                `json:"chunk"`
	Round int                `json:"round"`
	Cells experiment.CellSet `json:"cells"`
	// Digest is the digest of the lines the plan (round 0) or the previous round's collect built for Cells: every
	// attempt must build the same (SubmitBatch refuses a chunk whose lines changed). Empty: not checked.
	Digest string `json:"digest,omitempty"`
	// Since is the run's start: no batch of this run is older, which bounds the listing SubmitBatch makes.
	Since time.Time `json:"since"`
	// Intent is when the workflow decided to submit this chunk's round, recorded in the history as part of this
	// input before any attempt runs: every attempt of the submission gets the same one. Anthropic's batches carry
	// no metadata, so an attempt that follows one that died after its create (before the batch's id was known)
	// adopts the batch created since the intent with as many requests, instead of paying for a second one. The
	// workflow submits one Anthropic chunk at a time, so that no other chunk of the run is created meanwhile.
	// Required for the Anthropic format, unused by the OpenAI format (its batches carry their key).
	Intent time.Time `json:"intent,omitzero"`
	// Known are batches that are never this submission's: for the Anthropic format, those the run has adopted so
	// far; for the OpenAI format, those the chunk submitted before in earlier rounds and tries, which read the same
	// input file when their lines were the same (a gateway that drops metadata leaves only the file to adopt by).
	Known []string `json:"known,omitempty"`
	// Try counts the chunk's submissions, within its rounds, that followed a batch the provider failed as a whole
	// and that do not count against run.max_attempts (see workflows/batchfail.go): part of the batch's key, so
	// that a resubmission never adopts the failed batch. Zero: the round's first submission, as before it existed.
	Try int `json:"try,omitempty"`
}

// BatchRef names a batch of a model of a run.
type BatchRef struct {
	RunID string `json:"run_id"`
	Model int    `json:"model"`
	ID    string `json:"id"`
}

// BatchCollectInput is a chunk and the terminal batch whose results to record.
type BatchCollectInput struct {
	BatchChunkInput
	Batch BatchInfo `json:"batch"`
}

// BatchCandidates are the batches an Anthropic submission found and could not tell apart (batchapi.AmbiguousError):
// the details of SubmitBatch's BatchRefused failure then. Every one was created since the submission's intent
// with as many requests, and any of them may be the one its lost create made.
type BatchCandidates struct {
	IDs []string `json:"ids"`
}

// BatchCandidatesInput is a chunk and the terminal batches that could be its own (BatchCandidates, as polled
// to their end), for CollectCandidates.
type BatchCandidatesInput struct {
	BatchChunkInput
	Batches []BatchInfo `json:"batches"`
}

// BatchCleanupInput names a collected batch whose provider files, or itself, CleanupBatch deletes.
type BatchCleanupInput struct {
	RunID string    `json:"run_id"`
	Model int       `json:"model"`
	Batch BatchInfo `json:"batch"`
	// KeepInput keeps the batch's input file: the same lines are submitted again (nothing of them ran: the batch
	// failed as a whole, expired or was cancelled), and their next batch reads the file already uploaded.
	KeepInput bool `json:"keep_input,omitempty"`
}

// BatchCollected is what CollectBatch recorded, and the cells to submit again.
type BatchCollected struct {
	Recorded int                `json:"recorded"`
	Failed   int                `json:"failed"`
	Again    experiment.CellSet `json:"again,omitempty"`
	// AgainCost is the worst-case cost of the Again cells, as BatchPlan.Costs; zero without a budget.
	AgainCost usage.USD `json:"again_cost,omitempty"`
	// AgainDigest is the digest of the lines of Again, for the next round's BatchChunkInput.Digest.
	AgainDigest string `json:"again_digest,omitempty"`
	// AgainReason is the provider's most frequent reason for the Again cells (batch_expired, cancelled,
	// ServerError, …; "missing" for cells the results do not mention): the error_code of those recorded
	// errclass.BatchNotRun when the chunk's rounds are used up. Empty in results recorded before it existed.
	AgainReason string `json:"again_reason,omitempty"`
	// Usage is what the recorded cells consumed, at the batch price.
	Usage usage.Usage `json:"usage"`
	// Adopted are the candidates CollectCandidates found to be the chunk's (each of their results a request of
	// it) and recorded, ascending; empty from CollectBatch.
	Adopted []string `json:"adopted,omitempty"`
}

// Add adds what o recorded (records, failures, usage) to c; the cells to submit again are o's own business.
func (c *BatchCollected) Add(o BatchCollected) {
	c.Recorded += o.Recorded
	c.Failed += o.Failed
	c.Usage.Add(o.Usage)
}

// BatchProgress is where one provider batch of a run stands.
type BatchProgress struct {
	// Key is "pass/chunk".
	Key       string      `json:"key"`
	Model     string      `json:"model"`
	ID        string      `json:"id"`
	Status    BatchStatus `json:"status"`
	Total     int         `json:"total"`
	Done      int         `json:"done"`
	ExpiresAt time.Time   `json:"expires_at"`
	// Reason is why the chunk's batch failed as a whole and what the chunk does about it ("token_limit_exceeded:
	// Enqueued token limit reached … · waiting for 2 other batches of the run, then resubmitting"), while it waits;
	// empty otherwise.
	Reason string `json:"reason,omitempty"`
	// State is the provider's own name of a state silico does not know (Status is then unknown).
	State string `json:"state,omitempty"`
	// Note is what happened to the chunk's earlier batches that the user should know while its next one runs
	// ("batch … lost: the provider answered 404 to 5 polls over 2m5s; submitted again"); it stays with the chunk.
	Note string `json:"note,omitempty"`
}

// BatchFormat is a provider's batch wire format.
type BatchFormat string

// The batch formats.
const (
	// FormatOpenAI is OpenAI's Batch API (also served by Azure OpenAI, OpenRouter, Together, Groq and LiteLLM's
	// proxy): a JSONL input file, output and error files of JSONL result lines.
	FormatOpenAI BatchFormat = "openai"
	// FormatAnthropic is Anthropic's Message Batches: the requests in one JSON body, results as JSONL.
	FormatAnthropic BatchFormat = "anthropic"
	// FormatGemini is Google's Gemini Batch API: GenerateContentRequests keyed by the request's key, sent inline
	// in the create request when small, else as a JSONL file; results inline or as a JSONL file, keyed alike.
	FormatGemini BatchFormat = "gemini"
)

// Validate reports a format this package does not know.
func (f BatchFormat) Validate() error {
	switch f {
	case FormatOpenAI, FormatAnthropic, FormatGemini:
		return nil
	}
	return fmt.Errorf("batch: unknown format %q (want %q, %q or %q)", f, FormatOpenAI, FormatAnthropic, FormatGemini)
}

// BatchStatus is where a batch stands, the same for both formats.
type BatchStatus string

// The statuses. Completed, Failed, Expired and Cancelled are terminal: the batch will not change again.
const (
	// BatchStatusValidating: the provider is checking the input (OpenAI's validating).
	BatchStatusValidating BatchStatus = "validating"
	// BatchStatusInProgress: requests are being run.
	BatchStatusInProgress BatchStatus = "in_progress"
	// BatchStatusFinalizing: every request has run and the results are being written (OpenAI's finalizing).
	BatchStatusFinalizing BatchStatus = "finalizing"
	// BatchStatusCancelling: a cancel was asked for; requests already running may still finish.
	BatchStatusCancelling BatchStatus = "cancelling"
	// BatchStatusCompleted: every request ran; some may have failed. The results are ready.
	BatchStatusCompleted BatchStatus = "completed"
	// BatchStatusFailed: the provider rejected the batch as a whole (its input did not validate); nothing ran.
	BatchStatusFailed BatchStatus = "failed"
	// BatchStatusExpired: the completion window ended first; what completed is in the results, the rest never ran.
	BatchStatusExpired BatchStatus = "expired"
	// BatchStatusCancelled: cancelled; what completed is in the results, the rest never ran.
	BatchStatusCancelled BatchStatus = "cancelled"
	// BatchStatusUnknown: the provider reported a state silico does not know (BatchInfo.State names it). Not
	// terminal: taking it for an end would collect results that are not there, so AwaitBatch follows it, for a
	// bounded time (see activities/batchawait.go).
	BatchStatusUnknown BatchStatus = "unknown"
)

// Terminal reports whether s is final.
func (s BatchStatus) Terminal() bool {
	switch s {
	case BatchStatusCompleted, BatchStatusFailed, BatchStatusExpired, BatchStatusCancelled:
		return true
	}
	return false
}

// BatchCounts are a batch's requests by what became of them so far.
type BatchCounts struct {
	// Total is every request of the batch.
	Total int `json:"total"`
	// Succeeded and Errored ran; Errored failed.
	Succeeded int `json:"succeeded"`
	Errored   int `json:"errored"`
	// NotRun were cancelled or expired before they ran (known only from Anthropic's counts while in progress).
	NotRun int `json:"not_run"`
}

// Done is how many requests ran, successfully or not.
func (c BatchCounts) Done() int { return c.Succeeded + c.Errored }

// BatchInfo is a batch as its provider describes it, in one shape for both formats.
type BatchInfo struct {
	ID     string      `json:"id"`
	Status BatchStatus `json:"status"`
	Counts BatchCounts `json:"counts"`
	// CreatedAt and ExpiresAt are zero when the provider did not say.
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// InputFileID is an OpenAI batch's input file, or the uploaded input file of a Gemini batch (none when its
	// requests went inline); empty in batches recorded before it was kept.
	InputFileID string `json:"input_file_id,omitempty"`
	// OutputFileID and ErrorFileID are the result files of an OpenAI batch, once it has them.
	OutputFileID string `json:"output_file_id,omitempty"`
	ErrorFileID  string `json:"error_file_id,omitempty"`
	// ResultsURL is where an ended Anthropic batch's results are streamed from.
	ResultsURL string `json:"results_url,omitempty"`
	// ResponsesFile is the file ("files/...") of an ended Gemini batch's results when they are not inline; empty
	// for inline results, which are read from the batch itself.
	ResponsesFile string `json:"responses_file,omitempty"`
	// State is the provider's own name of the batch's state when silico does not know it (Status is then
	// BatchStatusUnknown); empty otherwise.
	State string `json:"state,omitempty"`
	// Metadata is the batch's metadata (OpenAI; Anthropic batches have none). A Gemini batch's display name,
	// which carries its key, is under batchformat.MetaDisplayName.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Errors are the reasons an OpenAI batch failed as a whole ("line 3: invalid_request: ..."), as text.
	Errors []string `json:"errors,omitempty"`
	// Failures are the same reasons as the provider gave them (OpenAI's errors.data), which the workflow acts on
	// by their code and line (see workflows/batchfail.go). Anthropic rejects a batch at its create instead, so its
	// batches have none.
	Failures []BatchError `json:"failures,omitempty"`
}

// BatchError is one reason a provider gave for failing a batch as a whole (OpenAI's errors.data[]).
type BatchError struct {
	// Code is the provider's code: token_limit_exceeded (the organisation's enqueued-token limit for the model is
	// reached), invalid_json_line, duplicate_custom_id, …
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	Param   string `json:"param,omitempty"`
	// Line is the input file's line the reason is about, counted from 1; zero when it names none.
	Line int `json:"line,omitempty"`
}

// String is the reason as one line: "line 3: invalid_json_line: This line is not parseable as valid JSON.".
func (e BatchError) String() string {
	s := e.Code + ": " + e.Message
	if e.Param != "" {
		s += " (" + e.Param + ")"
	}
	if e.Line > 0 {
		s = fmt.Sprintf("line %d: %s", e.Line, s)
	}
	return s
}
