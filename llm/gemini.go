package llm

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/silicolab/silico/errclass"
)

// Google's Gemini API, as far as silico speaks it natively: the GenerateContentRequest of a batch line, its
// GenerateContentResponse, and its errors mapped onto the same classes as OpenAI-compatible calls. Synchronous
// calls of provider gemini go to Gemini's OpenAI-compatible endpoint (GeminiOpenAIPath) through Client, whose
// retries, redaction and rate-limit reading they share; only batches use the native API.

// DefaultGeminiBaseURL is the base URL of Gemini's native API. Its OpenAI-compatible endpoint is under it, at
// GeminiOpenAIPath; uploads and downloads of files are under the same path with /upload or /download in front.
const DefaultGeminiBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// GeminiOpenAIPath is where Gemini's OpenAI-compatible endpoint is under the native API's base URL.
const GeminiOpenAIPath = "/openai"

// geminiRequest is a GenerateContentRequest.
type geminiRequest struct {
	Contents          []geminiContent  `json:"contents"`
	SystemInstruction *geminiContent   `json:"systemInstruction,omitempty"`
	GenerationConfig  *geminiGenConfig `json:"generationConfig,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text       string          `json:"text,omitempty"`
	InlineData *geminiBlob     `json:"inlineData,omitempty"`
	FileData   *geminiFileData `json:"fileData,omitempty"`
	// Thought marks a part of the model's reasoning in an answer: not part of the answer's text.
	Thought bool `json:"thought,omitempty"`
}

type geminiBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiFileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type geminiGenConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	Seed               *int64          `json:"seed,omitempty"`
	PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
}

// GeminiBody is the GenerateContentRequest of req, the same request Client sends to Gemini's OpenAI-compatible
// endpoint, in the native API's words: system messages (before the first turn) become the parts of the system
// instruction, one part each; user and assistant turns are user and model contents; a picture given as a data
// URL is inline data, any other a file URI. temperature, top_p, the completion cap, stop sequences, penalties and
// the seed go in the generation config (Gemini's seed is 32-bit); response_format json_object or json_schema is
// responseMimeType application/json, with the schema as responseJsonSchema. What the native API has no field for
// (logit_bias, logprobs, reasoning_effort, extra keys, n > 1) is an error rather than silently dropped: the answer
// would not be the one the spec asked for.
func GeminiBody(req Request) (json.RawMessage, error) {
	p := req.Params
	switch {
	case len(p.LogitBias) > 0:
		return nil, fmt.Errorf("llm: gemini: logit_bias has no Gemini equivalent")
	case p.Logprobs || p.TopLogprobs != nil:
		return nil, fmt.Errorf("llm: gemini: logprobs are not requested from Gemini (see the README's providers)")
	case p.ReasoningEffort != "":
		return nil, fmt.Errorf("llm: gemini: reasoning_effort has no Gemini batch equivalent")
	case len(p.Extra) > 0:
		return nil, fmt.Errorf("llm: gemini: extra keys are OpenAI-format keys, which a Gemini batch line cannot carry")
	case p.N > 1:
		return nil, fmt.Errorf("llm: gemini: n %d: silico records one answer per cell", p.N)
	}
	if req.Seed < math.MinInt32 || req.Seed > math.MaxInt32 {
		return nil, fmt.Errorf("llm: gemini: seed %d does not fit Gemini's 32-bit seed", req.Seed)
	}
	seed := req.Seed
	g := &geminiGenConfig{Temperature: p.Temperature, TopP: p.TopP, MaxOutputTokens: max(p.MaxTokens, p.MaxCompletionTokens),
		StopSequences: p.Stop, Seed: &seed, PresencePenalty: p.PresencePenalty, FrequencyPenalty: p.FrequencyPenalty}
	if len(p.ResponseFormat) > 0 {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(p.ResponseFormat, &rf); err != nil {
			return nil, fmt.Errorf("llm: gemini: response_format: %w", err)
		}
		switch rf.Type {
		case "", "text":
		case "json_object":
			g.ResponseMimeType = "application/json"
		case "json_schema":
			g.ResponseMimeType = "application/json"
			if rf.JSONSchema != nil {
				g.ResponseJSONSchema = rf.JSONSchema.Schema
			}
		default:
			return nil, fmt.Errorf("llm: gemini: response_format type %q", rf.Type)
		}
	}
	out := geminiRequest{GenerationConfig: g}
	for i, m := range req.Messages {
		switch m.Role {
		case "system":
			if len(out.Contents) > 0 {
				return nil, fmt.Errorf("llm: gemini: message %d: a system message after the first turn", i)
			}
			if out.SystemInstruction == nil {
				out.SystemInstruction = &geminiContent{}
			}
			out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, geminiPart{Text: m.Content})
			continue
		case "user", "assistant":
		default:
			return nil, fmt.Errorf("llm: gemini: message %d: role %q (want system, user or assistant)", i, m.Role)
		}
		c := geminiContent{Role: "user", Parts: []geminiPart{{Text: m.Content}}}
		if m.Role == "assistant" {
			c.Role = "model"
		}
		for _, u := range m.Images {
			part, err := geminiImage(u)
			if err != nil {
				return nil, fmt.Errorf("llm: gemini: message %d: %w", i, err)
			}
			c.Parts = append(c.Parts, part)
		}
		out.Contents = append(out.Contents, c)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("llm: gemini: encode request: %w", err)
	}
	return b, nil
}

// geminiImage maps a picture (data URL or URL) to a part.
func geminiImage(u string) (geminiPart, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return geminiPart{FileData: &geminiFileData{FileURI: u}}, nil
	}
	meta, data, ok := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 || mediaType == "" {
		return geminiPart{}, fmt.Errorf("picture: a data URL must be data:<media type>;base64,<data>")
	}
	return geminiPart{InlineData: &geminiBlob{MimeType: mediaType, Data: data}}, nil
}

// geminiResponse is the part of a GenerateContentResponse silico reads.
type geminiResponse struct {
	Candidates []struct {
		Content      geminiContent `json:"content"`
		FinishReason string        `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	// ModelVersion is the model that answered, Gemini's counterpart of an OpenAI answer's model.
	ModelVersion  string `json:"modelVersion"`
	UsageMetadata *struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
}

// GeminiAnswer reads a GenerateContentResponse: the first candidate's text parts joined (thought parts left
// out), its usage (the thinking tokens, which are billed as output, counted as completion tokens) and its finish
// reason as an OpenAI finish reason, and its modelVersion as the served model. A prompt the API blocked, which gets no candidate, is an empty answer
// finished by the content filter, as an OpenAI-compatible server reports one. A body without usage is a
// malformed body (errclass.Transport).
func GeminiAnswer(body []byte) (Response, error) {
	var r geminiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Response{}, &Error{Class: errclass.Transport, Code: "malformed_body", Message: truncate(err.Error()), cause: err}
	}
	if r.UsageMetadata == nil {
		return Response{}, &Error{Class: errclass.Transport, Code: "malformed_body", Message: "answer is not a GenerateContentResponse with usage"}
	}
	u := r.UsageMetadata
	out := Response{PromptTokens: u.PromptTokenCount, CompletionTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount}
	servedBy(&out, r.ModelVersion, "")
	if len(r.Candidates) == 0 {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			out.FinishReason = FinishContentFilter
			return out, nil
		}
		return Response{}, &Error{Class: errclass.Transport, Code: "malformed_body", Message: "answer has no candidates"}
	}
	c := r.Candidates[0]
	var sb strings.Builder
	for _, p := range c.Content.Parts {
		if !p.Thought {
			sb.WriteString(p.Text)
		}
	}
	out.Text, out.FinishReason = sb.String(), geminiFinish(c.FinishReason)
	return out, nil
}

// geminiFinish maps a Gemini finish reason onto the OpenAI finish reasons: STOP is FinishStop, MAX_TOKENS
// FinishLength, the safety and policy stops FinishContentFilter; another reason is kept as Gemini wrote it.
func geminiFinish(r string) string {
	switch r {
	case "STOP":
		return FinishStop
	case "MAX_TOKENS":
		return FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return FinishContentFilter
	}
	return r
}

// grpcStatus is the HTTP status of each canonical error code (google.rpc.Code), by number as a batch result's
// status object carries it.
var grpcStatus = map[int]int{
	1:  499, // CANCELLED
	2:  http.StatusInternalServerError,
	3:  http.StatusBadRequest,
	4:  http.StatusGatewayTimeout,
	5:  http.StatusNotFound,
	6:  http.StatusConflict,
	7:  http.StatusForbidden,
	8:  http.StatusTooManyRequests,
	9:  http.StatusBadRequest,
	10: http.StatusConflict,
	11: http.StatusBadRequest,
	12: http.StatusNotImplemented,
	13: http.StatusInternalServerError,
	14: http.StatusServiceUnavailable,
	15: http.StatusInternalServerError,
	16: http.StatusUnauthorized,
}

// GeminiError classifies a Gemini error: an HTTP response's status, or a batch result's status object, whose
// code is a canonical (gRPC) code rather than an HTTP status (grpc true). status is the error's status name
// (INVALID_ARGUMENT, RESOURCE_EXHAUSTED), kept as the code. The classes are Classify's for the HTTP status; an
// unknown code is assumed transient, as Classify assumes of unknown failures. Redacting the message is the
// caller's business.
func GeminiError(code int, grpc bool, status, message string) *Error {
	httpStatus := code
	if grpc {
		httpStatus = grpcStatus[code]
	}
	e := &Error{Status: httpStatus, Code: status, Message: truncate(message)}
	switch {
	case httpStatus == 0, httpStatus == 499:
		e.Class = errclass.Transport
	default:
		e.Class = classOfStatus(httpStatus, status, status, message)
	}
	return e
}
