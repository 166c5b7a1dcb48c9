package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
)

// echoKey is a key that matches no built-in key pattern, so only the client's own key redacts it.
const echoKey = "k3y-PLAINSECRET-0123456789"

// TestKeyRedactedFromEveryField: a provider echoing the key in any field of its answer (error code, type,
// param, message, status line, a non-JSON body, the answer text) never gets it into the error, its chain or
// the response.
func TestKeyRedactedFromEveryField(t *testing.T) {
	jsonErr := func(field string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			auth := r.Header.Get("Authorization")
			e := map[string]any{"message": "bad request", "type": "invalid_request_error", "code": "bad", "param": "messages"}
			e[field] = "echo: " + auth
			b, _ := json.Marshal(map[string]any{"error": e})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = w.Write(b)
		}
	}
	tests := []struct {
		name string
		h    http.HandlerFunc
	}{
		{"error code", jsonErr("code")},
		{"error type", jsonErr("type")},
		{"error param", jsonErr("param")},
		{"error message", jsonErr("message")},
		{"numeric-looking code", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(429)
			_, _ = fmt.Fprintf(w, `{"error":{"message":"slow down","type":%q,"code":%q}}`, r.Header.Get("Authorization"), r.Header.Get("Authorization"))
		}},
		{"html body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			_, _ = fmt.Fprintf(w, "<html><body><h1>Bad gateway</h1><pre>%s</pre></body></html>", r.Header.Get("Authorization"))
		}},
		{"plain body", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(403)
			_, _ = io.WriteString(w, "forbidden for "+r.Header.Get("Authorization"))
		}},
		{"azure inner error", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			_, _ = fmt.Fprintf(w, `{"error":{"message":"filtered","type":"x","code":"content_filter","innererror":{"code":%q}}}`, r.Header.Get("Authorization"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serveKey(t, tt.h)
			_, err := srv.Chat(context.Background(), hi())
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			for x := error(e); x != nil; x = errors.Unwrap(x) {
				if s := x.Error(); strings.Contains(s, echoKey) {
					t.Errorf("%T in the chain carries the key: %s", x, s)
				}
				if s := fmt.Sprintf("%+v", x); strings.Contains(s, echoKey) {
					t.Errorf("%T in the chain prints the key: %s", x, s)
				}
			}
			if strings.Contains(e.Code, echoKey) || strings.Contains(e.Message, echoKey) {
				t.Errorf("Code %q, Message %q carry the key", e.Code, e.Message)
			}
			var ae *openai.APIError
			if errors.As(err, &ae) {
				b, _ := json.Marshal(ae)
				if strings.Contains(string(b), echoKey) || (ae.Param != nil && strings.Contains(*ae.Param, echoKey)) {
					t.Errorf("APIError carries the key: %s", b)
				}
			}
			var re *openai.RequestError
			if errors.As(err, &re) && strings.Contains(string(re.Body), echoKey) {
				t.Errorf("RequestError body carries the key: %s", re.Body)
			}
		})
	}
	// A key-shaped code is kept, redacted: what the provider said stays readable.
	srv := serveKey(t, jsonErr("code"))
	_, err := srv.Chat(context.Background(), hi())
	if e := Classify(err); e.Code != "echo: Bearer [REDACTED]" {
		t.Errorf("Code = %q, want the code with the key replaced", e.Code)
	}
}

func TestKeyRedactedFromAnswer(t *testing.T) {
	c := serveKey(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{
			"role": "assistant", "content": "You sent: " + r.Header.Get("Authorization")}}}})
		_, _ = w.Write(b)
	})
	resp, err := c.Chat(context.Background(), hi())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resp.Text, echoKey) || resp.Text != "You sent: Bearer [REDACTED]" {
		t.Errorf("Text = %q, want the key redacted", resp.Text)
	}
}

// serveKey is serve with echoKey as the client's key.
func serveKey(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return NewClient(srv.URL+"/v1", echoKey, srv.Client())
}

func TestRegistryKeyEnvAllowList(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-a-1234567890", "HF_TOKEN": "hf_123", "PATH": "/usr/bin"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name  string
		allow []string // nil: the default
		env   string
		ok    bool
	}{
		{"default allows _API_KEY", nil, "OPENAI_API_KEY", true},
		{"default refuses PATH", nil, "PATH", false},
		{"default refuses _TOKEN", nil, "HF_TOKEN", false},
		{"explicit name", []string{"HF_TOKEN"}, "HF_TOKEN", true},
		{"glob", []string{"*_API_KEY", "*_TOKEN"}, "HF_TOKEN", true},
		{"list without it", []string{"OPENAI_*"}, "PATH", false},
		{"empty list allows none", []string{}, "OPENAI_API_KEY", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []Option
			if tt.allow != nil {
				opts = append(opts, WithKeyEnvAllow(tt.allow))
			}
			reg := NewRegistry(nil, getenv, "", opts...)
			c, err := reg.Client(experiment.Model{ID: "m", Name: "x", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: tt.env})
			if tt.ok {
				if err != nil || c == nil {
					t.Fatalf("Client = %v, %v; want a client", c, err)
				}
				return
			}
			var e *Error
			if c != nil || !errors.As(err, &e) || e.Class != errclass.Auth || e.Code != "api_key_env_not_allowed" {
				t.Fatalf("Client = %v, %v; want an Auth error api_key_env_not_allowed", c, err)
			}
			if !strings.Contains(e.Message, tt.env) || !strings.Contains(e.Message, "--api-key-env-allow") {
				t.Errorf("message %q does not name the variable and the flag", e.Message)
			}
			if v := env[tt.env]; strings.Contains(err.Error(), v) {
				t.Errorf("message %q carries the variable's value", err)
			}
		})
	}
	if _, err := ParseKeyEnvAllow("[, *_API_KEY"); err == nil {
		t.Error("ParseKeyEnvAllow accepted a malformed pattern")
	}
	if got, err := ParseKeyEnvAllow(" *_API_KEY, HF_TOKEN ,,"); err != nil || len(got) != 2 || got[0] != "*_API_KEY" || got[1] != "HF_TOKEN" {
		t.Errorf("ParseKeyEnvAllow = %q, %v", got, err)
	}
	if got, err := ParseKeyEnvAllow(""); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ParseKeyEnvAllow(\"\") = %#v, %v; want an empty list (allows none)", got, err)
	}
}

func TestRegistryRefusesKeyInBaseURL(t *testing.T) {
	reg := NewRegistry(nil, func(string) string { return "" }, "")
	for _, u := range []string{
		"https://user:sk-secret@api.example/v1",
		"https://api.example/v1?key=AIzaSECRET",
		"https://api.example/v1?api_key=SECRET",
		"https://api.example/v1?api-version=2024-02-01&access_token=SECRET",
		"https://api.example/v1?token=SECRET",
	} {
		c, err := reg.Client(experiment.Model{ID: "m", Name: "x", BaseURL: u})
		var e *Error
		if c != nil || !errors.As(err, &e) || e.Code != "key_in_base_url" {
			t.Errorf("Client(%s) = %v, %v; want key_in_base_url", u, c, err)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("error %q carries the secret", err)
		}
	}
	if _, err := reg.Client(experiment.Model{ID: "m", Name: "x", BaseURL: "https://res.openai.azure.com/v1?api-version=2024-02-01"}); err != nil {
		t.Errorf("api-version refused: %v", err)
	}
}

// TestAnthropicKeyRedactedFromEveryField: an Anthropic endpoint echoing the x-api-key in any field of its
// answer (error type, message, a non-JSON body, the answer text, the errors of the batch calls) never gets it
// into the error, its chain or the response. echoKey matches no key pattern, so only the client's own key
// redacts it.
func TestAnthropicKeyRedactedFromEveryField(t *testing.T) {
	anthropicErr := func(status int, typ, msg string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			k := r.Header.Get("x-api-key")
			b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{
				"type": strings.ReplaceAll(typ, "KEY", k), "message": strings.ReplaceAll(msg, "KEY", k)}})
			w.WriteHeader(status)
			_, _ = w.Write(b)
		}
	}
	tests := []struct {
		name string
		h    http.HandlerFunc
		call func(c *AnthropicClient) error
	}{
		{"error type", anthropicErr(400, "invalid_KEY", "bad request"), nil},
		{"error message", anthropicErr(401, "authentication_error", "invalid x-api-key KEY"), nil},
		{"overloaded", anthropicErr(529, "overloaded_error", "overloaded for KEY"), nil},
		{"html body", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			_, _ = fmt.Fprintf(w, "<html><body><pre>%s</pre></body></html>", r.Header.Get("x-api-key"))
		}, nil},
		{"plain body", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(403)
			_, _ = io.WriteString(w, "forbidden for "+r.Header.Get("x-api-key"))
		}, nil},
		{"batch create", anthropicErr(400, "invalid_request_error", "requests: KEY"), func(c *AnthropicClient) error {
			_, err := c.CreateMessageBatch(context.Background(), []byte(`{"requests":[]}`))
			return err
		}},
		{"batch list", anthropicErr(500, "api_error", "list failed for KEY"), func(c *AnthropicClient) error {
			_, err := c.ListMessageBatches(context.Background(), "", 10)
			return err
		}},
		{"batch results", anthropicErr(404, "not_found_error", "no results for KEY"), func(c *AnthropicClient) error {
			_, err := c.MessageBatchResults(context.Background(), "b", "")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.h)
			t.Cleanup(srv.Close)
			c := NewAnthropicClient(srv.URL+"/v1", echoKey, srv.Client())
			call := tt.call
			if call == nil {
				call = func(c *AnthropicClient) error {
					_, err := c.Chat(context.Background(), Request{Model: "claude", Params: experiment.Params{MaxTokens: 4},
						Messages: []experiment.Message{{Role: "user", Content: "hi"}}})
					return err
				}
			}
			err := call(c)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if !strings.Contains(e.Code+e.Message, "[REDACTED]") {
				t.Errorf("Code %q, Message %q: the echo is not there, redacted, so this case tests nothing", e.Code, e.Message)
			}
			for x := error(e); x != nil; x = errors.Unwrap(x) {
				if s := x.Error() + fmt.Sprintf("%+v %#v", x, x); strings.Contains(s, echoKey) {
					t.Errorf("%T in the chain carries the key: %s", x, s)
				}
			}
		})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"type":"message","content":[{"type":"text","text":"You sent %s"}],"usage":{"input_tokens":3,"output_tokens":2}}`,
			r.Header.Get("x-api-key"))
	}))
	t.Cleanup(srv.Close)
	c := NewAnthropicClient(srv.URL+"/v1", echoKey, srv.Client())
	resp, err := c.Chat(context.Background(), Request{Model: "claude", Params: experiment.Params{MaxTokens: 4},
		Messages: []experiment.Message{{Role: "user", Content: "hi"}}})
	if err != nil || resp.Text != "You sent [REDACTED]" {
		t.Errorf("answer %q, %v; want the key redacted", resp.Text, err)
	}
}
