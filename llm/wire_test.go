package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// wireBody sends req and returns the request body exactly as the server received it.
func wireBody(t *testing.T, req Request) []byte {
	t.Helper()
	var body []byte
	var length int64
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		length = r.ContentLength
		_, _ = io.WriteString(w, okBody)
	})
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if length != int64(len(body)) {
		t.Errorf("Content-Length %d, body has %d bytes", length, len(body))
	}
	if !json.Valid(body) {
		t.Fatalf("body is not JSON: %s", body)
	}
	return body
}

// TestWireParameters checks the bytes on the wire for every sampling parameter: an explicit 0 is sent as a
// literal 0, values are sent as written, and what the spec left out is not sent.
func TestWireParameters(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name      string
		seed      int64
		params    experiment.Params
		has, lack []string // has: regular expressions; lack: literal text
	}{
		{name: "temperature 0", params: experiment.Params{Temperature: f(0)}, has: []string{`"temperature":0[,}]`, `"seed":0[,}]`}},
		{name: "temperature 0.7", params: experiment.Params{Temperature: f(0.7)}, has: []string{`"temperature":0\.7[,}]`}},
		{name: "temperature with many digits", params: experiment.Params{Temperature: f(0.123456789)}, has: []string{`"temperature":0\.123456789[,}]`}},
		{name: "nothing set", seed: 42, has: []string{`"seed":42[,}]`},
			lack: []string{`"temperature"`, `"top_p"`, `"max_tokens"`, `"max_completion_tokens"`, `"stop"`}},
		{name: "top_p 0", params: experiment.Params{TopP: f(0)}, has: []string{`"top_p":0[,}]`}, lack: []string{`"temperature"`}},
		{name: "top_p 0.9", params: experiment.Params{TopP: f(0.9)}, has: []string{`"top_p":0\.9[,}]`}},
		{name: "max_tokens", params: experiment.Params{MaxTokens: 16}, has: []string{`"max_tokens":16[,}]`}},
		{name: "stop", params: experiment.Params{Stop: []string{"\n", "END"}}, has: []string{`"stop":\["\\n","END"\]`}},
		{name: "empty stop list", params: experiment.Params{Stop: []string{}}, lack: []string{`"stop"`}},
		{name: "all at once", seed: 3, params: experiment.Params{Temperature: f(0), TopP: f(1), MaxTokens: 1, Stop: []string{"."}},
			has: []string{`"temperature":0[,}]`, `"top_p":1[,}]`, `"max_tokens":1[,}]`, `"stop":\["\."\]`, `"seed":3[,}]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := hi()
			req.Seed, req.Params = tt.seed, tt.params
			body := wireBody(t, req)
			for _, h := range tt.has {
				if !regexp.MustCompile(h).Match(body) {
					t.Errorf("body lacks %s: %s", h, body)
				}
			}
			for _, l := range tt.lack {
				if bytes.Contains(body, []byte(l)) {
					t.Errorf("body has %s: %s", l, body)
				}
			}
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil || m["model"] != "gpt-4o-mini" || m["messages"] == nil {
				t.Errorf("body lost model or messages: %s", body)
			}
		})
	}
}
