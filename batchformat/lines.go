package batchformat

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/silicolab/silico/wire"
)

// openAILine is one request line of an OpenAI batch input file.
type openAILine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      Endpoint        `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// anthropicRequest is one request of an Anthropic Message Batch.
type anthropicRequest struct {
	CustomID string          `json:"custom_id"`
	Params   json.RawMessage `json:"params"`
}

// Line encodes one request of a batch of format f: for FormatOpenAI a JSONL line (newline included) with
// method POST, url e and body as the endpoint's own body (llm.ChatBody, llm.EmbedBody); for FormatAnthropic an
// element of the create request's "requests" list, with body as its params (llm.AnthropicBody; e is ignored:
// Message Batches serve only the Messages API); for FormatGemini a JSONL line {"key", "request"} with body as the
// GenerateContentRequest (llm.GeminiBody; e is ignored), which batchapi.Gemini sends inline when it can. customID must already be valid for f (see CustomIDs). The body's
// bytes are kept as they are, so the provider receives exactly what a synchronous call would send.
func Line(f wire.BatchFormat, e Endpoint, customID string, body json.RawMessage) ([]byte, error) {
	if customID == "" {
		return nil, fmt.Errorf("batch: a request needs a custom_id")
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("batch: request %s: body is not JSON", customID)
	}
	var v any
	switch f {
	case wire.FormatOpenAI:
		v = openAILine{CustomID: customID, Method: "POST", URL: e, Body: body}
	case wire.FormatAnthropic:
		if !validAnthropicID(customID) {
			return nil, fmt.Errorf("batch: custom_id %q: want 1-64 characters of [A-Za-z0-9_-]", customID)
		}
		v = anthropicRequest{CustomID: customID, Params: body}
	case wire.FormatGemini:
		v = geminiLine{Key: customID, Request: body}
	default:
		return nil, f.Validate()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// A body's own escaping is kept; this only keeps the envelope from escaping what the body did not.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("batch: encode request %s: %w", customID, err)
	}
	b := buf.Bytes() // Encode ends with a newline: the JSONL line's, and dropped for Anthropic's list.
	if f == wire.FormatAnthropic {
		b = b[:len(b)-1]
	}
	return b, nil
}

// Envelope is what a batch of format f adds to its requests' lines: before the first, between two, and after the
// last. An OpenAI or Gemini file is its lines; an Anthropic create body is {"requests":[line,line,...]}.
func Envelope(f wire.BatchFormat) (open, sep, end string) {
	if f == wire.FormatAnthropic {
		return `{"requests":[`, ",", `]}`
	}
	return "", "", ""
}

// Encode joins lines (from Line) into the input of one batch of format f: the JSONL file for FormatOpenAI, the
// create request's body for FormatAnthropic, the JSONL input for FormatGemini (see GeminiInline).
func Encode(f wire.BatchFormat, lines [][]byte) []byte {
	open, sep, end := Envelope(f)
	n := len(open) + len(end) + max(len(lines)-1, 0)*len(sep)
	for _, l := range lines {
		n += len(l)
	}
	out := make([]byte, 0, n)
	out = append(out, open...)
	for i, l := range lines {
		if i > 0 {
			out = append(out, sep...)
		}
		out = append(out, l...)
	}
	return append(out, end...)
}
