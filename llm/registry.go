package llm

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/silicolab/silico/experiment"
)

// Providers a model can name.
const (
	// ProviderOpenAI is any OpenAI-compatible server; the default.
	ProviderOpenAI = "openai"
	// ProviderSim is the built-in simulator.
	ProviderSim = "sim"
)

// Registry hands out one Client per endpoint — (provider, base URL, API key variable) — creating it on first use
// and reusing it afterwards, so all calls to an endpoint share one client and its connections. It is safe for
// concurrent use.
type Registry struct {
	hc      *http.Client
	getenv  func(string) string
	simBase string

	mu      sync.Mutex
	clients map[endpoint]*Client
}

type endpoint struct{ provider, baseURL, keyEnv string }

// NewRegistry returns a registry whose clients share hc. getenv looks up API keys (os.Getenv in a worker, a map
// in tests); simBaseURL is the simulator's base URL ("http://127.0.0.1:8089/v1"), empty when no simulator runs.
func NewRegistry(hc *http.Client, getenv func(string) string, simBaseURL string) *Registry {
	return &Registry{hc: hc, getenv: getenv, simBase: simBaseURL, clients: make(map[endpoint]*Client)}
}

// String describes the registry without any key.
func (r *Registry) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("llm.Registry{clients: %d}", len(r.clients))
}

// Client returns the client for m's endpoint.
//
// Provider "sim" uses m.BaseURL, else the simulator's base URL (an error if there is none); provider "openai"
// (or empty) uses m.BaseURL, else DefaultOpenAIBaseURL. When m.APIKeyEnv is set the key is read from that
// variable, and an empty variable is an *Error of ClassAuth naming the variable (never a value); without
// APIKeyEnv no key is sent, as local servers (Ollama, vLLM) need none. Errors are *Error values.
func (r *Registry) Client(m experiment.Model) (*Client, error) {
	ep := endpoint{
		provider: strings.ToLower(strings.TrimSpace(m.Provider)),
		baseURL:  strings.TrimRight(strings.TrimSpace(m.BaseURL), "/"),
		keyEnv:   m.APIKeyEnv,
	}
	switch ep.provider {
	case "", ProviderOpenAI:
		ep.provider = ProviderOpenAI
		if ep.baseURL == "" {
			ep.baseURL = DefaultOpenAIBaseURL
		}
	case ProviderSim:
		if ep.baseURL == "" {
			ep.baseURL = strings.TrimRight(r.simBase, "/")
		}
		if ep.baseURL == "" {
			return nil, &Error{Class: ClassInvalidRequest, Code: "no_simulator",
				Message: fmt.Sprintf("model %q uses provider \"sim\" but no simulator is running in this worker", m.ID)}
		}
	default:
		return nil, &Error{Class: ClassInvalidRequest, Code: "unknown_provider",
			Message: fmt.Sprintf("model %q: unknown provider %q (want %q or %q)", m.ID, m.Provider, ProviderOpenAI, ProviderSim)}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[ep]; ok {
		return c, nil
	}
	var key string
	if ep.keyEnv != "" {
		key = r.getenv(ep.keyEnv)
		if key == "" {
			return nil, &Error{Class: ClassAuth, Code: "missing_api_key",
				Message: fmt.Sprintf("model %q: environment variable %s of the worker is not set or empty", m.ID, ep.keyEnv)}
		}
	}
	c := NewClient(ep.baseURL, key, r.hc)
	r.clients[ep] = c
	return c, nil
}
