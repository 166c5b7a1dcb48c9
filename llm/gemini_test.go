package llm

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
)

func TestGeminiBody(t *testing.T) {
	temp := 0.5
	req := Request{Model: "gemini-2.5-flash", Seed: 7,
		Params: experiment.Params{Temperature: &temp, MaxTokens: 16, Stop: []string{"\n"},
			ResponseFormat: json.RawMessage(`{"type":"json_schema","json_schema":{"name":"a","strict":true,"schema":{"type":"object"}}}`)},
		Messages: []experiment.Message{{Role: "system", Content: "one"}, {Role: "system", Content: "two"},
			{Role: "user", Content: "q", Images: []string{"data:image/png;base64,AAAA", "https://example.com/p.png"}},
			{Role: "assistant", Content: "a"}, {Role: "user", Content: "again"}}}
	body, err := GeminiBody(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"contents":[{"role":"user","parts":[{"text":"q"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}},` +
		`{"fileData":{"fileUri":"https://example.com/p.png"}}]},{"role":"model","parts":[{"text":"a"}]},` +
		`{"role":"user","parts":[{"text":"again"}]}],"systemInstruction":{"parts":[{"text":"one"},{"text":"two"}]},` +
		`"generationConfig":{"temperature":0.5,"maxOutputTokens":16,"stopSequences":["\n"],"seed":7,` +
		`"responseMimeType":"application/json","responseJsonSchema":{"type":"object"}}}`
	if string(body) != want {
		t.Errorf("body\n got %s\nwant %s", body, want)
	}
	one := 1
	for name, r := range map[string]Request{
		"logit_bias":     {Params: experiment.Params{LogitBias: map[string]int{"1": 2}}},
		"logprobs":       {Params: experiment.Params{Logprobs: true, TopLogprobs: &one}},
		"extra":          {Params: experiment.Params{Extra: map[string]json.RawMessage{"top_k": json.RawMessage("4")}}},
		"seed":           {Seed: 1 << 40},
		"late system":    {Messages: []experiment.Message{{Role: "user", Content: "q"}, {Role: "system", Content: "s"}}},
		"role":           {Messages: []experiment.Message{{Role: "tool", Content: "q"}}},
		"bad data url":   {Messages: []experiment.Message{{Role: "user", Content: "q", Images: []string{"data:image/png,AAAA"}}}},
		"reasoning":      {Params: experiment.Params{ReasoningEffort: "low"}},
		"unknown format": {Params: experiment.Params{ResponseFormat: json.RawMessage(`{"type":"grammar"}`)}},
	} {
		if _, err := GeminiBody(r); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestGeminiAnswer(t *testing.T) {
	r, err := GeminiAnswer([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"think","thought":true},` +
		`{"text":"3. "},{"text":"Often"}]},"finishReason":"MAX_TOKENS"}],` +
		`"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":3,"thoughtsTokenCount":5}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "3. Often" || r.PromptTokens != 40 || r.CompletionTokens != 8 || r.FinishReason != FinishLength {
		t.Errorf("answer %+v", r)
	}
	blocked, err := GeminiAnswer([]byte(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":9}}`))
	if err != nil || blocked.FinishReason != FinishContentFilter || blocked.Text != "" || blocked.PromptTokens != 9 {
		t.Errorf("blocked prompt: %+v, %v", blocked, err)
	}
	for _, bad := range []string{`{"candidates":[]}`, `{"usageMetadata":{}}`, `{`} {
		var e *Error
		if _, err := GeminiAnswer([]byte(bad)); err == nil || !asError(err, &e) || e.Class != errclass.Transport {
			t.Errorf("%s: %v, want a malformed body", bad, err)
		}
	}
}

func asError(err error, e **Error) bool {
	x, ok := err.(*Error)
	*e = x
	return ok
}

func TestGeminiError(t *testing.T) {
	for _, c := range []struct {
		code   int
		grpc   bool
		status string
		msg    string
		class  errclass.Class
	}{
		{400, false, "INVALID_ARGUMENT", "bad", errclass.InvalidRequest},
		{403, false, "PERMISSION_DENIED", "no", errclass.Auth},
		{429, false, "RESOURCE_EXHAUSTED", "slow down", errclass.RateLimited},
		{503, false, "UNAVAILABLE", "busy", errclass.ServerError},
		{16, true, "UNAUTHENTICATED", "key", errclass.Auth},
		{14, true, "UNAVAILABLE", "busy", errclass.ServerError},
		{99, true, "", "?", errclass.Transport},
	} {
		if e := GeminiError(c.code, c.grpc, c.status, c.msg); e.Class != c.class || e.Code != c.status {
			t.Errorf("%d (grpc %v) %s: %+v, want class %s", c.code, c.grpc, c.status, e, c.class)
		}
	}
}

func TestRegistryGemini(t *testing.T) {
	env := map[string]string{"GEMINI_API_KEY": "gk-1"}
	r := NewRegistry(http.DefaultClient, func(k string) string { return env[k] }, "")
	m := experiment.Model{ID: "g", Name: "gemini-2.5-flash", Provider: ProviderGemini}
	c, err := r.Client(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := DefaultGeminiBaseURL + GeminiOpenAIPath; c.BaseURL() != want {
		t.Errorf("synchronous client at %s, want %s", c.BaseURL(), want)
	}
	g, err := r.GeminiClient(m)
	if err != nil || !strings.Contains(g.String(), DefaultGeminiBaseURL) || strings.Contains(g.String(), "gk-1") {
		t.Errorf("batch client %v, %v", g, err)
	}
	if _, err := r.GeminiClient(experiment.Model{ID: "o", Name: "gpt", Provider: ProviderOpenAI}); err == nil {
		t.Error("a Gemini client for provider openai: no error")
	}
	delete(env, "GEMINI_API_KEY")
	r2 := NewRegistry(http.DefaultClient, func(k string) string { return env[k] }, "")
	var e *Error
	if _, err := r2.GeminiClient(m); err == nil || !asError(err, &e) || e.Class != errclass.Auth || !strings.Contains(e.Message, "GEMINI_API_KEY") {
		t.Errorf("no key: %v, want an auth error naming GEMINI_API_KEY", err)
	}
}

// TestGeminiPollWithoutPartialResponse: a server that refuses the poll's partial response gets polls for the
// whole batch, and the key only ever in the x-goog-api-key header.
func TestGeminiPollWithoutPartialResponse(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RawQuery)
		if r.Header.Get("x-goog-api-key") != "gk-9" || strings.Contains(r.URL.String(), "gk-9") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Has("fields") {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":400,"message":"Invalid field selection","status":"INVALID_ARGUMENT"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"name":"batches/b1"}`))
	}))
	defer srv.Close()
	c := NewGeminiClient(srv.URL+"/v1beta", "gk-9", srv.Client())
	for range 2 {
		if data, err := c.GetBatch(t.Context(), "batches/b1"); err != nil || string(data) != `{"name":"batches/b1"}` {
			t.Fatalf("poll: %s, %v", data, err)
		}
	}
	if len(asked) != 3 || asked[0] == "" || asked[1] != "" || asked[2] != "" {
		t.Errorf("queries %q: want one partial response refused, then whole batches", asked)
	}
}
