package llm

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
	"github.com/silicolab/silico/errclass"
)

// EmbedRequest is one embeddings call of several texts.
type EmbedRequest struct {
	Model string
	Input []string
	// Dimensions asks for shorter vectors (text-embedding-3 and later); 0 sends none.
	Dimensions int
	// CellID, when set, is sent as the X-Silico-Cell header to the simulator (NewSimClient), never to a provider.
	CellID string
}

// EmbedResponse is a successful embeddings call: one vector per input, in input order.
type EmbedResponse struct {
	Vectors      [][]float32
	PromptTokens int
	RateLimit    RateLimitInfo
}

// Embed sends one /v1/embeddings request with encoding_format base64 (a quarter of the bytes of JSON floats,
// and exact). Its error is always an *Error, as Chat's; a response without one vector per input is a malformed
// body (errclass.Transport), which the caller retries.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	capt := &capture{cellID: c.cellID(req.CellID)}
	ctx = context.WithValue(ctx, captureKey{}, capt)
	resp, err := c.oc.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{
		Input: req.Input, Model: openai.EmbeddingModel(req.Model), Dimensions: req.Dimensions,
		EncodingFormat: openai.EmbeddingEncodingFormatBase64,
	})
	if err != nil {
		return EmbedResponse{}, c.fail(err, capt)
	}
	malformed := func(msg string) error {
		return c.fail(&Error{Class: errclass.Transport, Status: capt.status, Code: "malformed_body", Message: msg}, capt)
	}
	if len(resp.Data) != len(req.Input) {
		return EmbedResponse{}, malformed(fmt.Sprintf("%d embeddings for %d inputs", len(resp.Data), len(req.Input)))
	}
	out := EmbedResponse{Vectors: make([][]float32, len(req.Input)), PromptTokens: resp.Usage.PromptTokens,
		RateLimit: ParseRateLimit(capt.header)}
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out.Vectors) || out.Vectors[d.Index] != nil {
			return EmbedResponse{}, malformed(fmt.Sprintf("embedding index %d is out of range or repeated", d.Index))
		}
		out.Vectors[d.Index] = d.Embedding
	}
	return out, nil
}
