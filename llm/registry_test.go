package llm

import (
	"errors"
	"strings"
	"sync"
	"testing"

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
		class Class
		want  []string
	}{
		{"missing key", experiment.Model{ID: "gpt", Name: "gpt-4o", APIKeyEnv: "OPENAI_API_KEY"}, ClassAuth, []string{"OPENAI_API_KEY", `"gpt"`}},
		{"sim without simulator", experiment.Model{ID: "s", Provider: "sim"}, ClassInvalidRequest, []string{"sim", "no simulator"}},
		{"unknown provider", experiment.Model{ID: "x", Provider: "anthropic"}, ClassInvalidRequest, []string{`"anthropic"`, "openai"}},
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
