package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/workerhost"
)

// BareRequests are the requests the runner sends for the cells of spec's first model: same model name, messages,
// seed and max_tokens. spec should be validated (Render is then cheap).
func BareRequests(spec *experiment.Spec) ([]openai.ChatCompletionRequest, error) {
	m := spec.Models[0]
	var out []openai.ChatCompletionRequest
	for i := range spec.NumCells() {
		c := spec.Cell(i)
		if c.Model != 0 {
			break
		}
		msgs, err := spec.Render(c, nil)
		if err != nil {
			return nil, err
		}
		var om []openai.ChatCompletionMessage
		for _, x := range msgs {
			om = append(om, openai.ChatCompletionMessage{Role: x.Role, Content: x.Content})
		}
		seed := int(spec.CallSeed(c))
		req := openai.ChatCompletionRequest{Model: m.Name, Messages: om, Seed: &seed}
		//lint:ignore SA1019 the same field llm sends to OpenAI-compatible servers.
		req.MaxTokens = m.Params.MaxTokens
		out = append(out, req)
	}
	return out, nil
}

// BareClient is a go-openai client for baseURL with the worker's HTTP client settings.
func BareClient(baseURL string) *openai.Client {
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = baseURL
	cfg.HTTPClient = workerhost.NewHTTPClient()
	return openai.NewClientWithConfig(cfg)
}

// Bare sends every request from conc goroutines and returns the wall time: the floor any runner can reach
// against the same server in the same process.
func Bare(ctx context.Context, oc *openai.Client, reqs []openai.ChatCompletionRequest, conc int) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				resp, err := oc.CreateChatCompletion(ctx, reqs[i])
				if err == nil && len(resp.Choices) == 0 {
					err = fmt.Errorf("no choices")
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), firstErr
}
