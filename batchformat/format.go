// Package batchformat is the wire format of providers' batch APIs, as typed values: the request lines of OpenAI's
// Batch API (a JSONL file for /v1/chat/completions or /v1/embeddings), the requests of Anthropic's Message
// Batches and the keyed GenerateContentRequests of Gemini's Batch API, split into chunks within the providers'
// limits; the results of all three, parsed into one Result type whose errors carry the same classes as a
// synchronous call's; and the providers' batch statuses mapped onto one wire.BatchStatus (the batch formats and
// statuses are in package wire, which histories carry).
//
// It does no I/O: the activities that upload, create, poll and collect batches use it to build what they send
// and to read what comes back.
package batchformat

import "github.com/silicolab/silico/wire"

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
func DefaultLimits(f wire.BatchFormat, e Endpoint) Limits {
	switch f {
	case wire.FormatAnthropic:
		return Limits{MaxRequests: AnthropicMaxRequests, MaxBytes: AnthropicMaxBytes}
	case wire.FormatGemini:
		return Limits{MaxRequests: GeminiMaxRequests, MaxBytes: GeminiMaxBytes}
	default:
		l := Limits{MaxRequests: OpenAIMaxRequests, MaxBytes: OpenAIMaxBytes}
		if e == EndpointEmbeddings {
			l.MaxInputs = OpenAIMaxEmbeddingInputs
		}
		return l
	}
}
