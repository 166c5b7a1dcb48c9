package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
)

const testKey = "sk-test-SECRETSECRETSECRET1234"

const okBody = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Agree"},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":3,"total_tokens":45}}`

func hi() Request {
	return Request{Model: "gpt-4o-mini", Messages: []experiment.Message{{Role: "user", Content: "hi"}}, Seed: 7}
}

// serve starts a server answering every request with h and returns a client of it.
func serve(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return NewClient(srv.URL+"/v1", testKey, srv.Client())
}

func reply(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func apiError(code, typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
	return string(b)
}

// TestChatClassification drives real go-openai errors through Chat: every row of DESIGN.md §2 and the transport
// failures.
func TestChatClassification(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	truncated := okBody[:len(okBody)/2]
	hang := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // only then does the server notice the client hanging up
		<-r.Context().Done()
	}
	hijackClose := func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}
	cutBody := func(w http.ResponseWriter, r *http.Request) {
		// Promise more bytes than are sent, then drop the connection.
		w.Header().Set("Content-Length", fmt.Sprint(len(okBody)))
		w.WriteHeader(200)
		_, _ = io.WriteString(w, truncated)
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}

	cutErrorBody := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "4")
		w.Header().Set("Content-Length", "500")
		w.WriteHeader(429)
		_, _ = io.WriteString(w, `{"error":{"mess`)
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}

	tests := []struct {
		name       string
		h          http.HandlerFunc
		req        func(*Request)
		timeout    time.Duration
		class      errclass.Class
		status     int
		code       string
		retryAfter time.Duration
		exhausted  bool // x-ratelimit-remaining 0: Error.Exhausted
	}{
		{name: "429 rate limit, Retry-After seconds", h: reply(429, apiError("rate_limit_exceeded", "requests", "Rate limit reached"), "Retry-After", "2"),
			class: errclass.RateLimited, status: 429, code: "rate_limit_exceeded", retryAfter: 2 * time.Second},
		{name: "429 rate limit, retry-after-ms", h: reply(429, apiError("rate_limit_exceeded", "tokens", "slow down"), "retry-after-ms", "1500", "Retry-After", "2"),
			class: errclass.RateLimited, status: 429, code: "rate_limit_exceeded", retryAfter: 1500 * time.Millisecond},
		{name: "429 no Retry-After, tokens exhausted", h: reply(429, apiError("rate_limit_exceeded", "tokens", "TPM"),
			"x-ratelimit-remaining-requests", "10", "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-requests", "1s", "x-ratelimit-reset-tokens", "6m0s"),
			class: errclass.RateLimited, status: 429, code: "rate_limit_exceeded", retryAfter: 6 * time.Minute, exhausted: true},
		{name: "429 insufficient_quota", h: reply(429, apiError("insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details.")),
			class: errclass.QuotaExhausted, status: 429, code: "insufficient_quota"},
		{name: "429 billing code", h: reply(429, apiError("billing_hard_limit_reached", "invalid_request_error", "Billing hard limit has been reached")),
			class: errclass.QuotaExhausted, status: 429, code: "billing_hard_limit_reached"},
		{name: "429 quota type, null code", h: reply(429, `{"error":{"message":"quota","type":"insufficient_quota","code":null}}`),
			class: errclass.QuotaExhausted, status: 429, code: "insufficient_quota"},
		{name: "429 plain text body", h: reply(429, "Too Many Requests", "Retry-After", "3"),
			class: errclass.RateLimited, status: 429, retryAfter: 3 * time.Second},
		{name: "500 json", h: reply(500, apiError("server_error", "server_error", "The server had an error")),
			class: errclass.ServerError, status: 500, code: "server_error"},
		{name: "502 html", h: reply(502, "<html><body>Bad Gateway</body></html>"),
			class: errclass.ServerError, status: 502},
		{name: "503 Retry-After HTTP-date", h: reply(503, apiError("", "server_error", "overloaded"), "Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)),
			class: errclass.ServerError, status: 503, code: "server_error", retryAfter: 90 * time.Second},
		{name: "504", h: reply(504, ""), class: errclass.ServerError, status: 504},
		{name: "529 overloaded", h: reply(529, apiError("overloaded", "overloaded_error", "Overloaded")),
			class: errclass.ServerError, status: 529, code: "overloaded"},
		{name: "401", h: reply(401, apiError("invalid_api_key", "invalid_request_error", "Incorrect API key provided: "+testKey+".")),
			class: errclass.Auth, status: 401, code: "invalid_api_key"},
		{name: "403", h: reply(403, apiError("unsupported_country_region_territory", "request_forbidden", "Country not supported")),
			class: errclass.Auth, status: 403, code: "unsupported_country_region_territory"},
		{name: "400 context too long", h: reply(400, apiError("context_length_exceeded", "invalid_request_error", "maximum context length is 8192 tokens")),
			class: errclass.InvalidRequest, status: 400, code: "context_length_exceeded"},
		{name: "400 content filter", h: reply(400, apiError("content_filter", "invalid_request_error", "filtered")),
			class: errclass.InvalidRequest, status: 400, code: "content_filter"},
		{name: "404 unknown model", h: reply(404, apiError("model_not_found", "invalid_request_error", "The model `nope` does not exist")),
			class: errclass.InvalidRequest, status: 404, code: "model_not_found"},
		{name: "422", h: reply(422, `{"detail":"unprocessable"}`), class: errclass.InvalidRequest, status: 422},
		{name: "408", h: reply(408, ""), class: errclass.Transport, status: 408},
		{name: "200 truncated json", h: reply(200, truncated), class: errclass.Transport, status: 200, code: "truncated"},
		{name: "200 malformed json", h: reply(200, "not json at all"), class: errclass.Transport, status: 200, code: "malformed_body"},
		{name: "200 no choices", h: reply(200, `{"choices":[]}`), class: errclass.Transport, status: 200, code: "malformed_body"},
		{name: "body cut mid-stream", h: cutBody, class: errclass.Transport, status: 200, code: "truncated"},
		{name: "429 with its body cut", h: cutErrorBody, class: errclass.RateLimited, status: 429, code: "truncated", retryAfter: 4 * time.Second},
		{name: "connection closed without response", h: hijackClose, class: errclass.Transport, code: "truncated"},
		{name: "per-call timeout", h: hang, timeout: 50 * time.Millisecond, class: errclass.Transport, code: "timeout"},
		{name: "request go-openai refuses", h: reply(200, okBody), req: func(r *Request) {
			r.Model = "o3-mini"
			temp := 0.7
			r.Params.Temperature = &temp
		}, class: errclass.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, tt.h)
			c.now = func() time.Time { return now }
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			req := hi()
			if tt.req != nil {
				tt.req(&req)
			}
			_, err := c.Chat(ctx, req)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Chat error = %T %v, want *Error", err, err)
			}
			if e.Exhausted != tt.exhausted {
				t.Errorf("Exhausted = %v, want %v", e.Exhausted, tt.exhausted)
			}
			if e.Class != tt.class || e.Status != tt.status || e.Code != tt.code || e.RetryAfter != tt.retryAfter {
				t.Errorf("got class=%s status=%d code=%q retryAfter=%s, want class=%s status=%d code=%q retryAfter=%s (%v)",
					e.Class, e.Status, e.Code, e.RetryAfter, tt.class, tt.status, tt.code, tt.retryAfter, e)
			}
			if got := Classify(err); got != e {
				t.Errorf("Classify(*Error) = %p, want the same error %p", got, e)
			}
			if got := Classify(fmt.Errorf("pass: %w", err)); got != e {
				t.Errorf("Classify(wrapped *Error) did not return the *Error")
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v", err), testKey) {
				t.Errorf("error text contains the API key: %v", err)
			}
			for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
				if strings.Contains(u.Error(), testKey) {
					t.Errorf("wrapped error %T contains the API key: %v", u, u)
				}
			}
		})
	}
}

func TestClassifyDirect(t *testing.T) {
	// A listener that is closed again: nothing listens on its port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	refused := NewClient("http://"+addr+"/v1", "", nil)
	_, refusedErr := refused.Chat(context.Background(), hi())

	tests := []struct {
		name  string
		err   error
		class errclass.Class
		code  string
	}{
		{"connection refused", refusedErr, errclass.Transport, "connection_refused"},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), errclass.Transport, "timeout"},
		{"canceled", context.Canceled, errclass.Transport, "canceled"},
		{"net timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, errclass.Transport, "timeout"},
		{"unexpected EOF", io.ErrUnexpectedEOF, errclass.Transport, "truncated"},
		{"EOF", io.EOF, errclass.Transport, "truncated"},
		{"unknown", errors.New("something odd"), errclass.Transport, ""},
		{"go-openai invalid model", openai.ErrChatCompletionInvalidModel, errclass.InvalidRequest, ""},
		{"APIError 429", &openai.APIError{HTTPStatusCode: 429, Code: "rate_limit_exceeded"}, errclass.RateLimited, "rate_limit_exceeded"},
		{"APIError numeric code", &openai.APIError{HTTPStatusCode: 500, Code: 500}, errclass.ServerError, "500"},
		{"RequestError 503", &openai.RequestError{HTTPStatusCode: 503, Body: []byte("busy")}, errclass.ServerError, ""},
		{"RequestError 413", &openai.RequestError{HTTPStatusCode: 413}, errclass.InvalidRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Classify(tt.err)
			if e == nil || e.Class != tt.class || e.Code != tt.code {
				t.Fatalf("Classify(%v) = %+v, want class %s code %q", tt.err, e, tt.class, tt.code)
			}
			if !errors.Is(e, tt.err) {
				t.Errorf("Classify(%v) does not unwrap to its cause", tt.err)
			}
		})
	}
	if Classify(nil) != nil {
		t.Errorf("Classify(nil) != nil")
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassRetryable(t *testing.T) {
	want := map[errclass.Class]bool{errclass.RateLimited: true, errclass.ServerError: true, errclass.Transport: true,
		errclass.QuotaExhausted: false, errclass.Auth: false, errclass.InvalidRequest: false}
	for c, w := range want {
		if c.Retryable() != w {
			t.Errorf("%s.Retryable() = %v, want %v", c, !w, w)
		}
	}
}

func TestChatRequestAndResponse(t *testing.T) {
	var got struct {
		body   map[string]any
		header http.Header
		path   string
	}
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got.path = r.URL.Path
		got.header = r.Header.Clone()
		got.body = nil
		_ = json.NewDecoder(r.Body).Decode(&got.body)
		w.Header().Set("x-ratelimit-remaining-requests", "499")
		w.Header().Set("x-ratelimit-remaining-tokens", "199000")
		w.Header().Set("x-ratelimit-reset-requests", "120ms")
		w.Header().Set("x-ratelimit-reset-tokens", "1m30.5s")
		_, _ = io.WriteString(w, okBody)
	})
	zero, topP := 0.0, 0.9
	req := hi()
	req.CellID = "m/7/q1/p1"
	req.Params = experiment.Params{Temperature: &zero, TopP: &topP, MaxTokens: 5, Stop: []string{"\n"}}
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := Response{Text: "Agree", PromptTokens: 42, CompletionTokens: 3, FinishReason: FinishStop, RateLimit: RateLimitInfo{
		RemainingRequests: 499, RemainingTokens: 199000, ResetRequests: 120 * time.Millisecond, ResetTokens: 90500 * time.Millisecond}}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response = %+v, want %+v", resp, want)
	}
	if got.path != "/v1/chat/completions" {
		t.Errorf("path = %q", got.path)
	}
	if h, ok := got.header[http.CanonicalHeaderKey(CellHeader)]; ok {
		t.Errorf("%s = %q sent to an endpoint that is not the simulator", CellHeader, h)
	}
	if h := got.header.Get("Authorization"); h != "Bearer "+testKey {
		t.Errorf("Authorization = %q", h)
	}
	if s, ok := got.body["seed"].(float64); !ok || s != 7 {
		t.Errorf("seed = %v, want 7", got.body["seed"])
	}
	if tmp, ok := got.body["temperature"].(float64); !ok || tmp != 0 {
		t.Errorf("temperature = %v, want 0 sent explicitly", got.body["temperature"])
	}
	if p, ok := got.body["top_p"].(float64); !ok || p != 0.9 {
		t.Errorf("top_p = %v, want 0.9", got.body["top_p"])
	}
	if m, ok := got.body["max_tokens"].(float64); !ok || m != 5 {
		t.Errorf("max_tokens = %v, want 5", got.body["max_tokens"])
	}
	if got.body["model"] != "gpt-4o-mini" {
		t.Errorf("model = %v", got.body["model"])
	}

	// Seed 0 is still sent; no cell id means no header; reasoning models get max_completion_tokens.
	req = Request{Model: "o3-mini", Messages: req.Messages, Params: experiment.Params{MaxTokens: 9}}
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if s, ok := got.body["seed"].(float64); !ok || s != 0 {
		t.Errorf("seed 0 not sent: %v", got.body["seed"])
	}
	if _, ok := got.header[http.CanonicalHeaderKey(CellHeader)]; ok {
		t.Errorf("%s sent without a cell id", CellHeader)
	}
	if m, ok := got.body["max_completion_tokens"].(float64); !ok || m != 9 || got.body["max_tokens"] != nil {
		t.Errorf("o3-mini: max_completion_tokens = %v, max_tokens = %v; want 9 and absent", got.body["max_completion_tokens"], got.body["max_tokens"])
	}
	if _, ok := got.body["temperature"]; ok {
		t.Errorf("temperature sent although unset")
	}
}

func TestChatNoKeyNoAuthorization(t *testing.T) {
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Values("Authorization")
		_, _ = io.WriteString(w, okBody)
	}))
	defer srv.Close()
	c := NewClient(srv.URL+"/v1/", "", srv.Client())
	if _, err := c.Chat(context.Background(), hi()); err != nil {
		t.Fatal(err)
	}
	if len(auth) != 0 {
		t.Errorf("Authorization sent without a key: %q", auth)
	}
}

func TestUnknownRateLimitHeaders(t *testing.T) {
	c := serve(t, reply(200, okBody))
	resp, err := c.Chat(context.Background(), hi())
	if err != nil {
		t.Fatal(err)
	}
	if want := (RateLimitInfo{RemainingRequests: -1, RemainingTokens: -1}); resp.RateLimit != want {
		t.Errorf("RateLimit = %+v, want %+v", resp.RateLimit, want)
	}
}

func TestClientConcurrent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		if r.Header.Get(CellHeader) == "fail" {
			w.WriteHeader(429)
			return
		}
		_, _ = io.WriteString(w, okBody)
	}))
	t.Cleanup(srv.Close)
	c := NewSimClient(srv.URL+"/v1", testKey, srv.Client()) // the cell header tells the calls apart
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			req := hi()
			req.CellID = "ok"
			if i%2 == 0 {
				req.CellID = "fail"
			}
			_, err := c.Chat(context.Background(), req)
			if (err != nil) != (i%2 == 0) {
				errs <- fmt.Errorf("call %d (cell %s): err = %v", i, req.CellID, err)
				return
			}
			errs <- nil
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	c := NewClient("http://127.0.0.1:1/v1", testKey, nil)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), c.String()} {
		if strings.Contains(s, testKey) || strings.Contains(s, "SECRET") {
			t.Errorf("client printed with its key: %s", s)
		}
	}
	reg := NewRegistry(nil, func(string) string { return testKey }, "")
	if _, err := reg.Client(experiment.Model{ID: "m", Name: "gpt-4o", APIKeyEnv: "OPENAI_API_KEY"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(reg), fmt.Sprintf("%+v", reg), fmt.Sprintf("%#v", reg)} {
		if strings.Contains(s, testKey) {
			t.Errorf("registry printed with a key: %s", s)
		}
	}
	// A server that echoes the Authorization header in its error message.
	echo := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		_, _ = io.WriteString(w, apiError("invalid_api_key", "invalid_request_error", "bad key "+r.Header.Get("Authorization")))
	})
	_, err := echo.Chat(context.Background(), hi())
	if err == nil || strings.Contains(err.Error(), testKey) {
		t.Errorf("error = %v, want an error without the key", err)
	}
	plain := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		_, _ = io.WriteString(w, "upstream said "+r.Header.Get("Authorization"))
	})
	_, err = plain.Chat(context.Background(), hi())
	var re *openai.RequestError
	if err == nil || strings.Contains(err.Error(), testKey) || !errors.As(err, &re) || strings.Contains(string(re.Body), testKey) {
		t.Errorf("error = %v, want an error without the key anywhere in its chain", err)
	}
}
