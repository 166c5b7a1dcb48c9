package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The response shapes below are OpenAI's, written by hand rather than with go-openai's types so that the bodies
// carry exactly the fields the API sends (go-openai's add empty content-filter objects) and cost one Marshal.

// chatRequest is the part of a chat completion request the simulator reads. It is smaller than go-openai's
// ChatCompletionRequest, whose message decoding parses every message twice; the field names are the same.
//
// Unknown fields are accepted, as OpenAI-compatible servers accept the sampling parameters of other servers; the
// ones listed in ignoredParams are recorded in the request log (Request.Ignored).
type chatRequest struct {
	Model               string           `json:"model"`
	Messages            []requestMessage `json:"messages"`
	Seed                *int64           `json:"seed"`
	MaxTokens           int              `json:"max_tokens"`
	MaxCompletionTokens int              `json:"max_completion_tokens"`
	Stream              bool             `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// Logprobs and TopLogprobs ask for the log probabilities of the generated tokens and of the TopLogprobs
	// likeliest tokens at each position (0..20; only with Logprobs).
	Logprobs    bool `json:"logprobs"`
	TopLogprobs *int `json:"top_logprobs"`
	// ResponseFormat is read by parseResponseFormat, which names it in its errors.
	ResponseFormat json.RawMessage `json:"response_format"`
	// N is the number of choices (default 1).
	N *int `json:"n"`

	// Parameters accepted and not acted on: the simulator's answers do not depend on sampling, except on the
	// temperature under seeded sampling (Config.Sampling).
	Temperature      json.RawMessage `json:"temperature"`
	TopP             json.RawMessage `json:"top_p"`
	PresencePenalty  json.RawMessage `json:"presence_penalty"`
	FrequencyPenalty json.RawMessage `json:"frequency_penalty"`
	LogitBias        json.RawMessage `json:"logit_bias"`
	ReasoningEffort  json.RawMessage `json:"reasoning_effort"`
	Stop             json.RawMessage `json:"stop"`
	TopK             json.RawMessage `json:"top_k"`
	MinP             json.RawMessage `json:"min_p"`
	RepeatPenalty    json.RawMessage `json:"repeat_penalty"`
}

// ignoredParams returns the parameters of r that the simulator accepts without acting on them, as
// "name=value" pairs (values as sent, compacted) joined by spaces in the order of the API reference, or "".
// Under seeded sampling (seeded) temperature is acted on, so it is not listed.
func (r *chatRequest) ignoredParams(seeded bool) string {
	var sb strings.Builder
	for _, p := range [...]struct {
		name string
		v    json.RawMessage
	}{{"temperature", r.Temperature}, {"top_p", r.TopP}, {"presence_penalty", r.PresencePenalty},
		{"frequency_penalty", r.FrequencyPenalty}, {"logit_bias", r.LogitBias}, {"reasoning_effort", r.ReasoningEffort},
		{"stop", r.Stop}, {"top_k", r.TopK}, {"min_p", r.MinP}, {"repeat_penalty", r.RepeatPenalty}} {
		if len(p.v) == 0 || string(p.v) == "null" || (seeded && p.name == "temperature") {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		var c bytes.Buffer
		if json.Compact(&c, p.v) != nil {
			c.Reset()
			c.Write(p.v)
		}
		sb.WriteString(p.name)
		sb.WriteByte('=')
		sb.Write(c.Bytes())
	}
	return sb.String()
}

type requestMessage struct {
	Role    string         `json:"role"`
	Name    string         `json:"name"`
	Content messageContent `json:"content"`
}

// messageContent is a message's content: a string, or an array of parts whose text parts are joined and whose
// image_url parts are kept.
type messageContent struct {
	Text   string
	Images []imagePart
}

// imagePart is an image_url part: a URL or a data URL, and its detail.
type imagePart struct {
	URL    string `json:"url"`
	Detail string `json:"detail"`
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *messageContent) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = messageContent{Text: s}
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type     string     `json:"type"`
			Text     string     `json:"text"`
			ImageURL *imagePart `json:"image_url"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var sb strings.Builder
		for _, p := range parts {
			switch p.Type {
			case "text":
				sb.WriteString(p.Text)
			case "image_url":
				if p.ImageURL == nil || p.ImageURL.URL == "" {
					return fmt.Errorf("an image_url part needs image_url.url")
				}
				c.Images = append(c.Images, *p.ImageURL)
			}
		}
		c.Text = sb.String()
	case string(b) == "null":
		*c = messageContent{}
	default:
		return fmt.Errorf("message content must be a string or an array of parts, not %.20s", b)
	}
	return nil
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type errorBody struct {
	Error apiError `json:"error"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             usage        `json:"usage"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	Logprobs     *choiceLogprobs `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
	// labels and labelProbs are the labels the answer chose among and the server's own distribution over them
	// at the label's token (Request.Labels, Request.LabelProbs); not sent.
	labels     []string
	labelProbs []float64
}

type responseMessage struct {
	Role string `json:"role"`
	// Content is null when the answer was withheld (finish_reason content_filter).
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
}

// choiceLogprobs are a choice's log probabilities, one entry per generated token. Refusal is always null: the
// simulator never refuses in words.
type choiceLogprobs struct {
	Content []tokenLogprob  `json:"content"`
	Refusal *[]tokenLogprob `json:"refusal"`
}

// tokenLogprob is one generated token: its text, natural log probability and UTF-8 bytes (a token may hold part
// of a character, which its text cannot show), and the likeliest tokens at its position.
type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *usage        `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type embeddingRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

type embeddingResponse[V any] struct {
	Object string         `json:"object"`
	Data   []embedding[V] `json:"data"`
	Model  string         `json:"model"`
	Usage  embeddingUsage `json:"usage"`
}

type embedding[V any] struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding V      `json:"embedding"`
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelListBody struct {
	Object string        `json:"object"`
	Data   []modelObject `json:"data"`
}

func modelList(names []string) modelListBody {
	l := modelListBody{Object: "list", Data: make([]modelObject, len(names))}
	for i, n := range names {
		l.Data[i] = modelObject{ID: n, Object: "model", OwnedBy: "silico"}
	}
	return l
}

// writeJSON sends body with status; the body is already encoded. It returns an error when the response could not
// be written to the connection.
func writeJSON(w http.ResponseWriter, status int, body []byte) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if _, err := w.Write(body); err != nil {
		return err // the connection is gone; there is no one left to tell
	}
	// Flushed here rather than when the handler returns, so that the request log's Done (recorded next) is not
	// earlier than the moment the client could read the response, and so that a connection closed meanwhile is
	// known (the error) rather than logged as an answer.
	return http.NewResponseController(w).Flush()
}

// writeError sends an OpenAI-shaped error, and returns an error as writeJSON does.
func writeError(w http.ResponseWriter, status int, typ, code, param, msg string) error {
	e := errorBody{Error: apiError{Message: msg, Type: typ}}
	if code != "" {
		e.Error.Code = &code
	}
	if param != "" {
		e.Error.Param = &param
	}
	body, err := json.Marshal(e)
	if err != nil {
		body = []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`)
	}
	return writeJSON(w, status, body)
}
