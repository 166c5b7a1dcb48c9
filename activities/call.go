package activities

import (
	"context"
	"time"

	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
)

// reply is how one request ended: the answer or the classified failure, how long it took and when it came.
type reply struct {
	resp    llm.Response
	err     *llm.Error
	latency time.Duration
	at      time.Time
}

// chatClient is what a pass needs of a model's client to send chat calls: *llm.Client (OpenAI-compatible
// endpoints and the simulator) and *llm.AnthropicClient (Anthropic's Messages API) are chat clients. Chat returns
// *llm.Error values, with the key redacted.
type chatClient interface {
	Chat(ctx context.Context, req llm.Request) (llm.Response, error)
	// BaseURL is the API the client calls, as an unreachable model's cells name it.
	BaseURL() string
}

// embedClient is what an embed pass needs of a model's client: *llm.Client is one.
type embedClient interface {
	Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResponse, error)
}

// caller sends a pass's requests, each bounded by run.call_timeout, and tells the observer how each came back.
type caller struct {
	client chatClient
	// embedder sends an embed pass's requests; nil in a chat pass.
	embedder embedClient
	timeout  time.Duration
	clock    ratelimit.Clock
	obs      Observer
	model    string // the model name, as metrics name it
}

// chat sends one chat request.
func (c *caller) chat(ctx context.Context, req llm.Request) reply {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	start := c.clock.Now()
	resp, err := c.client.Chat(cctx, req)
	cancel()
	r := reply{resp: resp, at: c.clock.Now()}
	r.latency = r.at.Sub(start)
	if err != nil {
		r.err = llm.Classify(err)
	}
	c.observe(r)
	return r
}

// embed sends one embeddings request; check validates its vectors before the outcome is classified (a bad
// vector makes the whole answer malformed).
func (c *caller) embed(ctx context.Context, req llm.EmbedRequest, check func([][]float32) error) (llm.EmbedResponse, reply) {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	start := c.clock.Now()
	resp, err := c.embedder.Embed(cctx, req)
	cancel()
	r := reply{at: c.clock.Now()}
	r.latency = r.at.Sub(start)
	if err == nil {
		err = check(resp.Vectors)
	}
	if err != nil {
		r.err = llm.Classify(err)
	}
	c.observe(r)
	return resp, r
}

func (c *caller) observe(r reply) {
	outcome := "ok"
	if r.err != nil {
		outcome = string(r.err.Class)
	}
	c.obs.Call(c.model, outcome, r.latency)
}
