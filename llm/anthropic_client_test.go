package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
)

const antKey = "sk-ant-api03-SECRETSECRETSECRET"

func serveAnthropic(t *testing.T, h http.HandlerFunc) *AnthropicClient {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return NewAnthropicClient(srv.URL+"/v1", antKey, srv.Client())
}

func antReq() Request {
	return Request{Model: "claude-x", Params: experiment.Params{MaxTokens: 4}, CellID: "m/1/i/p",
		Messages: []experiment.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "q"}}}
}

func TestAnthropicChat(t *testing.T) {
	var hdr http.Header
	var body string
	c := serveAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		hdr = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		if r.URL.Path != "/v1/messages" {
			t.Errorf("path %s", r.URL.Path)
		}
		_, _ = io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"2 `+antKey+`"}],"usage":{"input_tokens":9,"output_tokens":1}}`)
	})
	resp, err := c.Chat(context.Background(), antReq())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "2 [REDACTED]" || resp.PromptTokens != 9 || resp.CompletionTokens != 1 {
		t.Errorf("response %+v", resp)
	}
	if hdr.Get("x-api-key") != antKey || hdr.Get("anthropic-version") != AnthropicVersion || hdr.Get(CellHeader) != "" ||
		hdr.Get("Authorization") != "" {
		t.Errorf("headers %v", hdr)
	}
	want, _ := AnthropicBody(antReq())
	if body != string(want) {
		t.Errorf("body %s, want AnthropicBody's %s", body, want)
	}
	if s := c.String() + c.GoString(); strings.Contains(s, antKey) {
		t.Errorf("String shows the key: %s", s)
	}
}

func TestAnthropicChatErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		header []string
		class  errclass.Class
		code   string
		retry  time.Duration
	}{
		{"overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, nil, errclass.ServerError, "overloaded_error", 0},
		{"rate limited", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, []string{"retry-after", "7"}, errclass.RateLimited, "rate_limit_error", 7 * time.Second},
		{"bad request", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, nil, errclass.InvalidRequest, "invalid_request_error", 0},
		{"bad key echoed", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + antKey + `"}}`, nil, errclass.Auth, "authentication_error", 0},
		{"billing", 400, `{"type":"error","error":{"type":"billing_error","message":"credit balance too low"}}`, nil, errclass.QuotaExhausted, "billing_error", 0},
		{"proxy page", 502, `<html>bad gateway</html>`, nil, errclass.ServerError, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serveAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
				for i := 0; i+1 < len(tt.header); i += 2 {
					w.Header().Set(tt.header[i], tt.header[i+1])
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			_, err := c.Chat(context.Background(), antReq())
			var e *Error
			if !errors.As(err, &e) || e.Class != tt.class || e.Code != tt.code || e.Status != tt.status || e.RetryAfter != tt.retry {
				t.Fatalf("error %#v, want class %s code %q status %d retry %v", err, tt.class, tt.code, tt.status, tt.retry)
			}
			for x := error(e); x != nil; x = errors.Unwrap(x) {
				if strings.Contains(x.Error(), antKey) {
					t.Errorf("error chain holds the key: %v", x)
				}
			}
		})
	}
	// Refused before sending: Anthropic needs max_tokens.
	sent := false
	c := serveAnthropic(t, func(w http.ResponseWriter, r *http.Request) { sent = true })
	req := antReq()
	req.Params.MaxTokens = 0
	var e *Error
	if _, err := c.Chat(context.Background(), req); !errors.As(err, &e) || e.Class != errclass.InvalidRequest || sent {
		t.Errorf("no max_tokens: %v (sent %v), want InvalidRequest and nothing sent", err, sent)
	}
	// Nothing listening: a transport failure.
	dead := NewAnthropicClient("http://127.0.0.1:1/v1", antKey, nil)
	if _, err := dead.Chat(context.Background(), antReq()); !errors.As(err, &e) || e.Class != errclass.Transport {
		t.Errorf("closed port: %v, want Transport", err)
	}
}

func TestAnthropicResultsURLOrigin(t *testing.T) {
	c := serveAnthropic(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "{}\n") })
	if _, err := c.MessageBatchResults(context.Background(), "b", "https://elsewhere.example/v1/messages/batches/b/results"); err == nil {
		t.Error("a results_url on another host: no error (the key would go there)")
	}
	rc, err := c.MessageBatchResults(context.Background(), "b", c.baseURL+"/messages/batches/b/results")
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Close()
}

// TestAnthropicFollowsNoRedirect: a redirect (to another host here) is not followed, so x-api-key, which net/http
// would forward, never leaves for the place it points to; the call fails with the 3xx.
func TestAnthropicFollowsNoRedirect(t *testing.T) {
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("x-api-key"))
		_, _ = io.WriteString(w, `{"id":"msg","type":"message","content":[{"type":"text","text":"1"}]}`)
	}))
	defer other.Close()
	c := serveAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/messages", http.StatusTemporaryRedirect)
	})
	_, err := c.Chat(context.Background(), antReq())
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusTemporaryRedirect {
		t.Errorf("a redirect: %v, want an error with status 307", err)
	}
	if len(got) != 0 {
		t.Errorf("the redirect was followed with x-api-key %q", got)
	}
}
