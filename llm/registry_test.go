package llm

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
)

func TestRegistryReusesOneClientPerEndpoint(t *testing.T) {
	env := map[string]string{"A_API_KEY": "sk-aaaaaaaaaaaa", "B_API_KEY": "sk-bbbbbbbbbbbb"}
	var lookups int
	var mu sync.Mutex
	reg := NewRegistry(nil, func(k string) string {
		mu.Lock()
		defer mu.Unlock()
		lookups++
		return env[k]
	}, "http://127.0.0.1:9/v1")

	get := func(m experiment.Model) *Client {
		t.Helper()
		c, err := reg.Client(m)
		if err != nil {
			t.Fatalf("Client(%+v): %v", m, err)
		}
		return c
	}
	a1 := get(experiment.Model{ID: "a", Name: "gpt-4o", APIKeyEnv: "A_API_KEY"})
	a2 := get(experiment.Model{ID: "a-mini", Name: "gpt-4o-mini", Provider: "openai", APIKeyEnv: "A_API_KEY"})
	if a1 != a2 {
		t.Errorf("two models of one endpoint got two clients")
	}
	if a1.baseURL != DefaultOpenAIBaseURL {
		t.Errorf("default base URL = %q, want %q", a1.baseURL, DefaultOpenAIBaseURL)
	}
	if b := get(experiment.Model{ID: "b", Name: "gpt-4o", APIKeyEnv: "B_API_KEY"}); b == a1 {
		t.Errorf("another key variable shared a client")
	}
	local := get(experiment.Model{ID: "l", Name: "qwen2.5", BaseURL: "http://localhost:11434/v1"})
	if again := get(experiment.Model{ID: "l2", Name: "llama3", BaseURL: "http://localhost:11434/v1/"}); again != local {
		t.Errorf("a trailing slash made a second client of one endpoint")
	}
	if local == a1 || local.hasKey {
		t.Errorf("local endpoint: same client as openai or has a key (%v)", local)
	}
	sim := get(experiment.Model{ID: "s", Name: "sim-1", Provider: "sim"})
	if sim.baseURL != "http://127.0.0.1:9/v1" || sim == local {
		t.Errorf("sim client = %v, want the simulator's base URL", sim)
	}
	if lookups != 2 {
		t.Errorf("getenv called %d times, want 2 (once per keyed endpoint)", lookups)
	}

	// Concurrent first use still yields one client.
	var wg sync.WaitGroup
	got := make([]*Client, 16)
	for i := range got {
		wg.Go(func() { got[i], _ = reg.Client(experiment.Model{ID: "c", Name: "x", BaseURL: "http://h/v1"}) })
	}
	wg.Wait()
	for _, c := range got {
		if c == nil || c != got[0] {
			t.Fatalf("concurrent Client calls returned different clients")
		}
	}
}

func TestRegistryErrors(t *testing.T) {
	const secret = "sk-other-variable-value-123456"
	reg := NewRegistry(nil, func(k string) string {
		if k == "OTHER" {
			return secret
		}
		return ""
	}, "")
	tests := []struct {
		name  string
		m     experiment.Model
		class errclass.Class
		want  []string
	}{
		{"missing key", experiment.Model{ID: "gpt", Name: "gpt-4o", APIKeyEnv: "OPENAI_API_KEY"}, errclass.Auth, []string{"OPENAI_API_KEY", `"gpt"`}},
		{"sim without simulator", experiment.Model{ID: "s", Provider: "sim"}, errclass.InvalidRequest, []string{"sim", "no simulator"}},
		{"unknown provider", experiment.Model{ID: "x", Provider: "claude"}, errclass.InvalidRequest, []string{`"claude"`, `"openai"`, `"anthropic"`}},
		{"anthropic has no OpenAI client", experiment.Model{ID: "c", Provider: "anthropic"}, errclass.InvalidRequest, []string{`"anthropic"`, "OpenAI-compatible"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := reg.Client(tt.m)
			var e *Error
			if c != nil || !errors.As(err, &e) || e.Class != tt.class {
				t.Fatalf("Client(%+v) = %v, %v; want nil and a %s *Error", tt.m, c, err, tt.class)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q contains a secret", err)
			}
		})
	}
}

func TestRegistryAnthropicClients(t *testing.T) {
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-default-0123456789", "WORK_API_KEY": "sk-ant-work-0123456789"}
	reg := NewRegistry(nil, func(k string) string { return env[k] }, "http://127.0.0.1:9/v1")
	get := func(m experiment.Model) *AnthropicClient {
		t.Helper()
		c, err := reg.AnthropicClient(m)
		if err != nil {
			t.Fatalf("AnthropicClient(%+v): %v", m, err)
		}
		return c
	}
	def := get(experiment.Model{ID: "a", Name: "claude-haiku-4-5", Provider: "anthropic"})
	if def.baseURL != DefaultAnthropicBaseURL || def.key != env["ANTHROPIC_API_KEY"] {
		t.Errorf("default client %v: want %s with the key of ANTHROPIC_API_KEY", def, DefaultAnthropicBaseURL)
	}
	if again := get(experiment.Model{ID: "b", Name: "claude-sonnet-4-5", Provider: "anthropic", APIKeyEnv: "ANTHROPIC_API_KEY",
		BaseURL: DefaultAnthropicBaseURL + "/"}); again != def {
		t.Errorf("the spelled-out defaults made a second client of one endpoint")
	}
	work := get(experiment.Model{ID: "w", Name: "claude-haiku-4-5", Provider: "anthropic", APIKeyEnv: "WORK_API_KEY"})
	if work == def || work.key != env["WORK_API_KEY"] {
		t.Errorf("another key variable: %v, want its own client with its key", work)
	}
	local := get(experiment.Model{ID: "s", Name: "sim-chat", Provider: "anthropic", BaseURL: "http://127.0.0.1:8089/v1"})
	if local.baseURL != "http://127.0.0.1:8089/v1" || local == def {
		t.Errorf("base URL given: %v", local)
	}
	if s := reg.String(); !strings.Contains(s, "clients: 3") {
		t.Errorf("String = %s, want 3 clients", s)
	}

	for _, tt := range []struct {
		name string
		m    experiment.Model
		reg  *Registry
		code string
	}{
		{"key not set", experiment.Model{ID: "n", Provider: "anthropic", APIKeyEnv: "UNSET_API_KEY"}, reg, "missing_api_key"},
		{"default key not set", experiment.Model{ID: "n", Provider: "anthropic"}, NewRegistry(nil, func(string) string { return "" }, ""), "missing_api_key"},
		{"variable not allowed", experiment.Model{ID: "n", Provider: "anthropic", APIKeyEnv: "ANTHROPIC_TOKEN"}, reg, "api_key_env_not_allowed"},
		{"key in base URL", experiment.Model{ID: "n", Provider: "anthropic", BaseURL: "https://api.anthropic.com/v1?api_key=SECRET"}, reg, "key_in_base_url"},
		{"not anthropic", experiment.Model{ID: "n", Provider: "openai"}, reg, "not_anthropic"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.reg.AnthropicClient(tt.m)
			var e *Error
			if c != nil || !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("AnthropicClient(%+v) = %v, %v; want %s", tt.m, c, err, tt.code)
			}
			for _, v := range env {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error %q carries a key", err)
				}
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error %q carries the base URL's secret", err)
			}
		})
	}
}

// TestCellHeaderOnlyToTheSimulator: the X-Silico-Cell header goes to provider sim, and never to a real provider:
// a loopback server posing as provider openai (chat and embeddings) or as provider anthropic sees none.
func TestCellHeaderOnlyToTheSimulator(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // provider → the cell header its server got
	serve := func(provider, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[provider+" "+r.URL.Path] = r.Header.Get(CellHeader)
			mu.Unlock()
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/v1"
	}
	const embedBody = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AACAPw=="}],"usage":{"prompt_tokens":1,"total_tokens":1}}`
	ctx := context.Background()
	keys := func(string) string { return "sk-ant-test-0123456789" }
	r := NewRegistry(nil, keys, "")
	req := Request{Model: "m", Messages: []experiment.Message{{Role: "user", Content: "hi"}}, CellID: "m/1/i/p",
		Params: experiment.Params{MaxTokens: 8}}
	for _, provider := range []string{ProviderOpenAI, ProviderSim} {
		c, err := r.Client(experiment.Model{ID: provider, Name: "m", Provider: provider, BaseURL: serve(provider, okBody)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Chat(ctx, req); err != nil {
			t.Fatal(err)
		}
		e, err := r.Client(experiment.Model{ID: provider + "-e", Name: "e", Provider: provider, BaseURL: serve(provider, embedBody)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Embed(ctx, EmbedRequest{Model: "e", Input: []string{"x"}, CellID: "e/1"}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := r.AnthropicClient(experiment.Model{ID: "a", Name: "m", Provider: ProviderAnthropic,
		BaseURL: serve(ProviderAnthropic, `{"type":"message","content":[{"type":"text","text":"2"}],"usage":{"input_tokens":9,"output_tokens":1}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Chat(ctx, req); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"openai /v1/chat/completions": "", "openai /v1/embeddings": "", "anthropic /v1/messages": "",
		"sim /v1/chat/completions": "m/1/i/p", "sim /v1/embeddings": "e/1",
	}
	if !maps.Equal(seen, want) {
		t.Errorf("cell headers seen %v, want %v", seen, want)
	}
}
