package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
)

// TestChatBodyIsTheWireBody holds ChatBody to the bytes Client.Chat puts on the wire, for every kind of request:
// a batch line must ask exactly what the synchronous call asks.
func TestChatBodyIsTheWireBody(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	reqs := map[string]Request{
		"plain": hi(),
		"temperature 0 and top_p": {Model: "gpt-4o-mini", Seed: 3, Messages: []experiment.Message{{Role: "system", Content: "s <b>&"},
			{Role: "user", Content: "q"}}, Params: experiment.Params{Temperature: f(0), TopP: f(0.9), MaxTokens: 16, Stop: []string{"\n"}}},
		"reasoning model": {Model: "o3-mini", Messages: []experiment.Message{{Role: "user", Content: "q"}},
			Params: experiment.Params{MaxTokens: 5}},
		"pictures": {Model: "gpt-4o", ImageDetail: "low", Messages: []experiment.Message{{Role: "user", Content: "look",
			Images: []string{"https://example.org/a.png", "data:image/png;base64,iVBORw0KGgo="}}}},
	}
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			wire := wireBody(t, req)
			got, err := ChatBody(req)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(wire) {
				t.Errorf("ChatBody:\n got %s\nwant %s", got, wire)
			}
		})
	}
}

// TestEmbedBodyIsTheWireBody holds EmbedBody to the bytes Client.Embed sends.
func TestEmbedBodyIsTheWireBody(t *testing.T) {
	var wire []byte
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		wire, _ = io.ReadAll(r.Body)
		_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AACAPw=="}],"usage":{"prompt_tokens":1,"total_tokens":1}}`)
	})
	req := EmbedRequest{Model: "text-embedding-3-small", Input: []string{"a <b>"}, Dimensions: 1}
	if _, err := c.Embed(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got, err := EmbedBody(req)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(wire) {
		t.Errorf("EmbedBody:\n got %s\nwant %s", got, wire)
	}
}

func TestChatAnswer(t *testing.T) {
	r, err := ChatAnswer([]byte(okBody))
	if err != nil || r.Text != "Agree" || r.PromptTokens != 42 || r.CompletionTokens != 3 {
		t.Errorf("ChatAnswer(ok) = %+v, %v; want Agree, 42, 3", r, err)
	}
	for _, body := range []string{`{"choices":[]}`, `{"choices":`, `[]`} {
		_, err := ChatAnswer([]byte(body))
		var e *Error
		if !errors.As(err, &e) || e.Class != errclass.Transport || e.Code != "malformed_body" {
			t.Errorf("ChatAnswer(%s) error = %v; want Transport malformed_body", body, err)
		}
	}
}

func TestEmbedAnswer(t *testing.T) {
	// 1.0 as a little-endian float32 is 00 00 80 3f.
	body := `{"object":"list","data":[{"object":"embedding","index":1,"embedding":"AACAPw=="},{"object":"embedding","index":0,"embedding":"AAAAAA=="}],"usage":{"prompt_tokens":4,"total_tokens":4}}`
	r, err := EmbedAnswer([]byte(body), 2)
	if err != nil || len(r.Vectors) != 2 || r.Vectors[1][0] != 1 || r.Vectors[0][0] != 0 || r.PromptTokens != 4 {
		t.Fatalf("EmbedAnswer = %+v, %v; want vectors [[0] [1]] and 4 tokens", r, err)
	}
	if _, err := EmbedAnswer([]byte(body), 3); err == nil {
		t.Error("EmbedAnswer with 2 vectors for 3 inputs: no error")
	}
	dup := strings.Replace(body, `"index":1`, `"index":0`, 1)
	if _, err := EmbedAnswer([]byte(dup), 2); err == nil {
		t.Error("EmbedAnswer with a repeated index: no error")
	}
}

func TestAnthropicBody(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	req := Request{Model: "claude-x", Seed: 9, Params: experiment.Params{Temperature: f(0), MaxTokens: 8, Stop: []string{"\n"}},
		Messages: []experiment.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "q1"},
			{Role: "assistant", Content: "a1"}, {Role: "user", Content: "q2",
				Images: []string{"data:image/png;base64,QUJD", "https://example.org/p.png"}}}}
	got, err := AnthropicBody(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-x","max_tokens":8,"system":"be brief","messages":[{"role":"user","content":"q1"},` +
		`{"role":"assistant","content":"a1"},{"role":"user","content":[{"type":"text","text":"q2"},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"QUJD"}},` +
		`{"type":"image","source":{"type":"url","url":"https://example.org/p.png"}}]}],"temperature":0,"stop_sequences":["\n"]}`
	if string(got) != want {
		t.Errorf("AnthropicBody:\n got %s\nwant %s", got, want)
	}
	if strings.Contains(string(got), "seed") {
		t.Error("AnthropicBody sends a seed; the Messages API has none")
	}

	bad := map[string]Request{
		"no max_tokens":      {Model: "m", Messages: []experiment.Message{{Role: "user", Content: "q"}}},
		"late system":        {Model: "m", Params: experiment.Params{MaxTokens: 1}, Messages: []experiment.Message{{Role: "user", Content: "q"}, {Role: "system", Content: "s"}}},
		"unknown role":       {Model: "m", Params: experiment.Params{MaxTokens: 1}, Messages: []experiment.Message{{Role: "tool", Content: "q"}}},
		"data URL no base64": {Model: "m", Params: experiment.Params{MaxTokens: 1}, Messages: []experiment.Message{{Role: "user", Content: "q", Images: []string{"data:image/png,abc"}}}},
	}
	for name, req := range bad {
		if _, err := AnthropicBody(req); err == nil {
			t.Errorf("%s: AnthropicBody gave no error", name)
		}
	}
	if _, err := AnthropicBody(bad["no max_tokens"]); !errors.Is(err, ErrAnthropicMaxTokens) {
		t.Errorf("no max_tokens: error %v, want ErrAnthropicMaxTokens", err)
	}
}

func TestAnthropicAnswer(t *testing.T) {
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"3"},{"type":"text","text":"."}],` +
		`"stop_reason":"end_turn","usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":2}}`
	r, err := AnthropicAnswer([]byte(body))
	if err != nil || r.Text != "3." || r.PromptTokens != 25 || r.CompletionTokens != 2 {
		t.Errorf("AnthropicAnswer = %+v, %v; want 3., 25, 2", r, err)
	}
	for _, body := range []string{`{"type":"error"}`, `{`, `{"type":"message","content":[]}`} {
		var e *Error
		if _, err := AnthropicAnswer([]byte(body)); !errors.As(err, &e) || e.Class != errclass.Transport {
			t.Errorf("AnthropicAnswer(%s) error = %v; want Transport", body, err)
		}
	}
}

func TestAnthropicError(t *testing.T) {
	tests := []struct {
		status int
		typ    string
		want   errclass.Class
	}{
		{0, "invalid_request_error", errclass.InvalidRequest},
		{0, "authentication_error", errclass.Auth},
		{0, "permission_error", errclass.Auth},
		{0, "not_found_error", errclass.InvalidRequest},
		{0, "request_too_large", errclass.InvalidRequest},
		{0, "rate_limit_error", errclass.RateLimited},
		{0, "billing_error", errclass.QuotaExhausted},
		{0, "api_error", errclass.ServerError},
		{0, "overloaded_error", errclass.ServerError},
		{0, "timeout_error", errclass.ServerError},
		{0, "something_new", errclass.Transport},
		{400, "something_new", errclass.InvalidRequest},
	}
	for _, tt := range tests {
		e := AnthropicError(tt.status, tt.typ, "m")
		if e.Class != tt.want || e.Code != tt.typ {
			t.Errorf("AnthropicError(%d, %s) = %s %s, want %s", tt.status, tt.typ, e.Class, e.Code, tt.want)
		}
	}
	if b, _ := json.Marshal(AnthropicError(0, "api_error", "m").Status); string(b) != "500" {
		t.Errorf("api_error status %s, want 500", b)
	}
}
