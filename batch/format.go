// Package batch is the wire format of providers' batch APIs, as typed values: the request lines of OpenAI's
// Batch API (a JSONL file for /v1/chat/completions or /v1/embeddings) and the requests of Anthropic's Message
// Batches, split into chunks within the providers' limits; the result lines of both, parsed into one Result
// type whose errors carry the same classes as a synchronous call's; and both providers' batch statuses mapped
// onto one Status.
//
// It does no I/O: the activities that upload, create, poll and collect batches use it to build what they send
// and to read what comes back.
package batch

import "fmt"

// Format is a provider's batch wire format.
type Format string

// The batch formats.
const (
	// FormatOpenAI is OpenAI's Batch API (also served by Azure OpenAI, OpenRouter, Together, Groq and LiteLLM's
	// proxy): a JSONL input file, output and error files of JSONL result lines.
	FormatOpenAI Format = "openai"
	// FormatAnthropic is Anthropic's Message Batches: the requests in one JSON body, results as JSONL.
	FormatAnthropic Format = "anthropic"
)

// Endpoint is the path a batched request is for, as OpenAI's lines and batches name it.
type Endpoint string

// The endpoints silico batches.
const (
	EndpointChat       Endpoint = "/v1/chat/completions"
	EndpointEmbeddings Endpoint = "/v1/embeddings"
)

// Limits bound one batch (one input file of the OpenAI format, one create request of Anthropic's).
type Limits struct {
	// MaxRequests is the most requests in one batch.
	MaxRequests int
	// MaxBytes is the most bytes of one batch's input: the JSONL file, or the JSON body of Anthropic's create.
	MaxBytes int64
	// MaxInputs is the most embedding inputs over all the requests of one batch; 0 means no such limit.
	MaxInputs int
}

// The providers' limits, the defaults of a spec's batch.max_requests and batch.max_bytes.
const (
	OpenAIMaxRequests        = 50_000
	OpenAIMaxBytes           = 200 << 20
	OpenAIMaxEmbeddingInputs = 50_000
	AnthropicMaxRequests     = 100_000
	AnthropicMaxBytes        = 256 << 20
)

// DefaultLimits returns the provider's own limits for batches of format f and endpoint e.
func DefaultLimits(f Format, e Endpoint) Limits {
	switch f {
	case FormatAnthropic:
		return Limits{MaxRequests: AnthropicMaxRequests, MaxBytes: AnthropicMaxBytes}
	default:
		l := Limits{MaxRequests: OpenAIMaxRequests, MaxBytes: OpenAIMaxBytes}
		if e == EndpointEmbeddings {
			l.MaxInputs = OpenAIMaxEmbeddingInputs
		}
		return l
	}
}

// Validate reports a format this package does not know.
func (f Format) Validate() error {
	switch f {
	case FormatOpenAI, FormatAnthropic:
		return nil
	}
	return fmt.Errorf("batch: unknown format %q (want %q or %q)", f, FormatOpenAI, FormatAnthropic)
}
