package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/silicolab/silico/errclass"
)

// Anthropic's Messages API, as far as silico speaks it: the request body of a chat call, its answer, and its
// errors mapped onto the same classes as OpenAI-compatible calls.

// AnthropicVersion is the anthropic-version header every Anthropic request carries.
const AnthropicVersion = "2023-06-01"

// DefaultAnthropicBaseURL is the base URL of Anthropic's API.
const DefaultAnthropicBaseURL = "https://api.anthropic.com/v1"

// ErrAnthropicMaxTokens is returned by AnthropicBody for a request without max_tokens, which the Messages API
// requires.
var ErrAnthropicMaxTokens = errors.New("llm: anthropic needs max_tokens (params.max_tokens)")

// anthropicParams is a Messages API request body. Anthropic has no seed parameter: none is sent.
type anthropicParams struct {
	Model         string             `json:"model"`
	MaxTokens     int                `json:"max_tokens"`
	System        string             `json:"system,omitempty"`
	Messages      []anthropicMessage `json:"messages"`
	Temperature   *float64           `json:"temperature,omitempty"`
	TopP          *float64           `json:"top_p,omitempty"`
	StopSequences []string           `json:"stop_sequences,omitempty"`
}

type anthropicMessage struct {
	Role string `json:"role"`
	// Content is a string, or a list of blocks when the message carries pictures.
	Content any `json:"content"`
}

type anthropicBlock struct {
	Type   string                `json:"type"`
	Text   string                `json:"text,omitempty"`
	Source *anthropicImageSource `json:"source,omitempty"`
}

type anthropicImageSource struct {
	Type      string `json:"type"` // base64 or url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// AnthropicBody is the Messages API body of req: leading system messages become the system prompt (joined by a
// blank line), the others user and assistant turns; a picture given as a data URL is sent as a base64 image
// block, any other as a URL image block. Temperature and top_p go out exactly as set; req.Seed is not sent,
// because the API has no such parameter. A system message after the first turn, or a request without max_tokens,
// is an error.
func AnthropicBody(req Request) (json.RawMessage, error) {
	if req.Params.MaxTokens <= 0 {
		return nil, ErrAnthropicMaxTokens
	}
	p := anthropicParams{Model: req.Model, MaxTokens: req.Params.MaxTokens, Temperature: req.Params.Temperature,
		TopP: req.Params.TopP, StopSequences: req.Params.Stop}
	var system []string
	for i, m := range req.Messages {
		if m.Role == "system" {
			if len(p.Messages) > 0 {
				return nil, fmt.Errorf("llm: anthropic: message %d: a system message after the first turn", i)
			}
			system = append(system, m.Content)
			continue
		}
		if m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Errorf("llm: anthropic: message %d: role %q (want system, user or assistant)", i, m.Role)
		}
		msg := anthropicMessage{Role: m.Role, Content: m.Content}
		if len(m.Images) > 0 {
			blocks := []anthropicBlock{{Type: "text", Text: m.Content}}
			for _, u := range m.Images {
				src, err := anthropicImage(u)
				if err != nil {
					return nil, fmt.Errorf("llm: anthropic: message %d: %w", i, err)
				}
				blocks = append(blocks, anthropicBlock{Type: "image", Source: src})
			}
			msg.Content = blocks
		}
		p.Messages = append(p.Messages, msg)
	}
	p.System = strings.Join(system, "\n\n")
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("llm: anthropic: encode request: %w", err)
	}
	if len(req.Params.Extra) > 0 {
		// Keys of Anthropic's API that have no OpenAI name (top_k) go out verbatim, as to any server.
		if b, err = patchBody(b, req.Params.Extra); err != nil {
			return nil, fmt.Errorf("llm: anthropic: %w", err)
		}
	}
	return b, nil
}

// anthropicImage maps a picture (data URL or URL) to an image source.
func anthropicImage(u string) (*anthropicImageSource, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return &anthropicImageSource{Type: "url", URL: u}, nil
	}
	meta, data, ok := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 || mediaType == "" {
		return nil, fmt.Errorf("picture: a data URL must be data:<media type>;base64,<data>")
	}
	return &anthropicImageSource{Type: "base64", MediaType: mediaType, Data: data}, nil
}

// anthropicResponse is the part of a Messages API answer silico reads.
type anthropicResponse struct {
	Type       string `json:"type"`
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
	Content    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Usage *struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// AnthropicAnswer reads a Messages API answer (a message object): its text blocks joined, its usage (the
// prompt cache's input tokens counted as prompt tokens), its stop reason as a finish reason and its model as the served model. A body that is not a message is a malformed body
// (errclass.Transport), as for an OpenAI-compatible answer.
func AnthropicAnswer(body []byte) (Response, error) {
	var r anthropicResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Response{}, &Error{Class: errclass.Transport, Code: "malformed_body", Message: truncate(err.Error()), cause: err}
	}
	if r.Type != "message" || r.Usage == nil {
		return Response{}, &Error{Class: errclass.Transport, Code: "malformed_body",
			Message: "answer is not a message with usage"}
	}
	var sb strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			sb.WriteString(c.Text)
		}
	}
	u := r.Usage
	out := Response{Text: sb.String(), PromptTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		CompletionTokens: u.OutputTokens, FinishReason: anthropicFinish(r.StopReason)}
	// Anthropic sends no fingerprint; its model is the snapshot that answered.
	servedBy(&out, r.Model, "")
	return out, nil
}

// anthropicFinish maps a Messages API stop reason onto the OpenAI finish reasons, so that a cut or refused answer
// counts the same whichever API gave it: end_turn and stop_sequence are FinishStop, max_tokens FinishLength,
// refusal (the safety classifiers') FinishContentFilter; another reason is kept as Anthropic wrote it.
func anthropicFinish(r string) string {
	switch r {
	case "end_turn", "stop_sequence":
		return FinishStop
	case "max_tokens":
		return FinishLength
	case "refusal":
		return FinishContentFilter
	}
	return r
}

// anthropicStatus is the HTTP status each Anthropic error type is sent with.
var anthropicStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// AnthropicError classifies an Anthropic error: its HTTP status when one is known (0 when it came in a batch
// result, which has none: the status its type is sent with is assumed), its type and message. A billing error is
// QuotaExhausted; otherwise the classes are Classify's for the status. message is truncated as Classify's are;
// redacting it is the caller's business, as it is for every provider text.
func AnthropicError(status int, typ, message string) *Error {
	if status == 0 {
		status = anthropicStatus[typ]
	}
	e := &Error{Status: status, Code: typ, Message: truncate(message)}
	switch {
	case typ == "billing_error":
		e.Class = errclass.QuotaExhausted
	case status == 0:
		// An error type this code does not know: assumed transient, as Classify assumes of unknown failures.
		e.Class = errclass.Transport
	default:
		e.Class = classOfStatus(status, typ, typ, message)
	}
	return e
}
