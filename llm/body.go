package llm

import (
	"encoding/json"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
	"github.com/silicolab/silico/errclass"
)

// ChatBody is the JSON body Client.Chat sends for req, byte for byte: go-openai's encoding of the request with
// the sampling parameters patched in exactly as the spec set them. A provider batch line carries this body, so a
// batch call asks exactly what the synchronous call would (and shares its response cache key).
func ChatBody(req Request) (json.RawMessage, error) {
	body, err := json.Marshal(chatRequest(req))
	if err != nil {
		return nil, fmt.Errorf("encode chat request: %w", err)
	}
	if patch := bodyPatch(req.Params); len(patch) > 0 {
		if body, err = patchBody(body, patch); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// EmbedBody is the JSON body Client.Embed sends for req, byte for byte. go-openai encodes an embeddings request
// through a map, so its keys are sorted.
func EmbedBody(req EmbedRequest) (json.RawMessage, error) {
	base := openai.EmbeddingRequestStrings{
		Input: req.Input, Model: openai.EmbeddingModel(req.Model), Dimensions: req.Dimensions,
		EncodingFormat: openai.EmbeddingEncodingFormatBase64,
	}.Convert()
	base.ExtraBody = nil
	b, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("encode embeddings request: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encode embeddings request: %w", err)
	}
	if b, err = json.Marshal(m); err != nil {
		return nil, fmt.Errorf("encode embeddings request: %w", err)
	}
	return b, nil
}

// Redactor returns the function every client applies to what a provider sends back: it replaces apiKey, and
// anything shaped like an OpenAI key, with "[REDACTED]". Code that reads provider output outside a Client (the
// result files of a provider batch) applies it before recording anything.
func Redactor(apiKey string) func(string) string { return redactor(apiKey) }

// ChatAnswer reads a chat completion answer body, as Client.Chat reads one: the first choice's text and the
// usage, the finish reason, the logprobs and the provenance (model, system_fingerprint). A body that does not decode, or has no choices, is a malformed body (errclass.Transport). The text is not
// redacted: the caller applies its Redactor with Response.Redacted.
func ChatAnswer(body []byte) (Response, error) {
	var r openai.ChatCompletionResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Response{}, &Error{Class: errclass.Transport, Code: "malformed_body", Message: truncate(err.Error()), cause: err}
	}
	if len(r.Choices) == 0 {
		return Response{}, &Error{Class: errclass.Transport, Code: "malformed_body", Message: "response has no choices"}
	}
	out := Response{Text: r.Choices[0].Message.Content, PromptTokens: r.Usage.PromptTokens,
		CompletionTokens: r.Usage.CompletionTokens}
	choiceAnswer(&out, r.Choices[0])
	servedBy(&out, r.Model, r.SystemFingerprint)
	return out, nil
}

// EmbedAnswer reads an embeddings answer body of a request with encoding_format base64 and the given number of
// inputs, with Client.Embed's checks: one vector per input, every index in range and given once; otherwise a
// malformed body (errclass.Transport).
func EmbedAnswer(body []byte, inputs int) (EmbedResponse, error) {
	malformed := func(msg string, cause error) error {
		return &Error{Class: errclass.Transport, Code: "malformed_body", Message: truncate(msg), cause: cause}
	}
	var b64 openai.EmbeddingResponseBase64
	if err := json.Unmarshal(body, &b64); err != nil {
		return EmbedResponse{}, malformed(err.Error(), err)
	}
	resp, err := b64.ToEmbeddingResponse()
	if err != nil {
		return EmbedResponse{}, malformed(err.Error(), err)
	}
	if len(resp.Data) != inputs {
		return EmbedResponse{}, malformed(fmt.Sprintf("%d embeddings for %d inputs", len(resp.Data), inputs), nil)
	}
	out := EmbedResponse{Vectors: make([][]float32, inputs), PromptTokens: resp.Usage.PromptTokens}
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= inputs || out.Vectors[d.Index] != nil {
			return EmbedResponse{}, malformed(fmt.Sprintf("embedding index %d is out of range or repeated", d.Index), nil)
		}
		out.Vectors[d.Index] = d.Embedding
	}
	return out, nil
}
