package llm

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
)

// Providers a model can name.
const (
	// ProviderOpenAI is any OpenAI-compatible server; the default.
	ProviderOpenAI = "openai"
	// ProviderSim is the built-in simulator.
	ProviderSim = "sim"
	// ProviderAnthropic is Anthropic's Messages API, called through AnthropicClient.
	ProviderAnthropic = "anthropic"
	// ProviderGemini is Google's Gemini API: synchronous calls through Client on its OpenAI-compatible endpoint,
	// batches through GeminiClient on its native API.
	ProviderGemini = "gemini"
)

// Registry hands out one client per endpoint — (provider, base URL, API key variable) — creating it on first use
// and reusing it afterwards, so all calls to an endpoint share one client and its connections: a Client for the
// OpenAI-compatible providers, an AnthropicClient for provider anthropic. It is safe for concurrent use.
type Registry struct {
	hc       *http.Client
	getenv   func(string) string
	simBase  string
	keyAllow []string

	mu        sync.Mutex
	clients   map[endpoint]*Client
	anthropic map[endpoint]*AnthropicClient
	gemini    map[endpoint]*GeminiClient
}

type endpoint struct{ provider, baseURL, keyEnv string }

// DefaultKeyEnvAllow is the allow-list of a registry given none, as ParseKeyEnvAllow reads it: only variables
// whose names end in _API_KEY may be used as keys. Names ending in _TOKEN are left out on purpose, because cloud
// and CI credentials (AWS_SESSION_TOKEN, VAULT_TOKEN, GITHUB_TOKEN) are named that way; a worker that needs such
// a variable (HF_TOKEN) names it in its allow-list.
const DefaultKeyEnvAllow = "*_API_KEY"

// KeyEnvAllowVar is the environment variable that holds a worker's allow-list (as ParseKeyEnvAllow reads it) when
// no --api-key-env-allow flag gives one.
const KeyEnvAllowVar = "SILICO_API_KEY_ENV_ALLOW"

// KeyEnvAllowSetting is the allow-list the environment sets: the value of KeyEnvAllowVar in getenv, else
// DefaultKeyEnvAllow. An empty variable counts as unset; only the flag can give the empty list.
func KeyEnvAllowSetting(getenv func(string) string) string {
	if v := getenv(KeyEnvAllowVar); v != "" {
		return v
	}
	return DefaultKeyEnvAllow
}

// Option configures a Registry.
type Option func(*Registry)

// WithKeyEnvAllow sets the glob patterns (path.Match syntax, case-sensitive) of the environment variables a
// model's api_key_env may name. Anyone who can start a workflow chooses api_key_env and base_url, so without
// this list a spec could make the worker send any of its variables to any server. An empty list allows none.
func WithKeyEnvAllow(patterns []string) Option {
	return func(r *Registry) { r.keyAllow = slices.Clone(patterns) }
}

// ParseKeyEnvAllow reads an allow-list written as comma-separated patterns ("*_API_KEY,HF_TOKEN"); blanks are
// dropped, and "" is the empty list, which allows no variable.
func ParseKeyEnvAllow(s string) ([]string, error) {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out, CheckKeyEnvAllow(out)
}

// CheckKeyEnvAllow reports a malformed pattern of an allow-list.
func CheckKeyEnvAllow(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("api key variable pattern %q: %w", p, err)
		}
	}
	return nil
}

// NewRegistry returns a registry whose clients share hc. getenv looks up API keys (os.Getenv in a worker, a map
// in tests); simBaseURL is the simulator's base URL ("http://127.0.0.1:8089/v1"), empty when no simulator runs.
// Without WithKeyEnvAllow, DefaultKeyEnvAllow applies.
func NewRegistry(hc *http.Client, getenv func(string) string, simBaseURL string, opts ...Option) *Registry {
	r := &Registry{hc: hc, getenv: getenv, simBase: simBaseURL, keyAllow: []string{DefaultKeyEnvAllow},
		clients: make(map[endpoint]*Client), anthropic: make(map[endpoint]*AnthropicClient),
		gemini: make(map[endpoint]*GeminiClient)}
	for _, o := range opts {
		o(r)
	}
	return r
}

// keyEnvAllowed reports whether name matches the allow-list.
func (r *Registry) keyEnvAllowed(name string) bool { return KeyEnvAllowed(r.keyAllow, name) }

// KeyEnvAllowed reports whether the environment variable name matches one of the allow-list's patterns.
func KeyEnvAllowed(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// String describes the registry without any key.
func (r *Registry) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("llm.Registry{clients: %d}", len(r.clients)+len(r.anthropic)+len(r.gemini))
}

// Client returns the client for m's endpoint.
//
// Provider "sim" uses m.BaseURL, else the simulator's base URL (an error if there is none); provider "openai"
// (or empty) uses m.BaseURL, else DefaultOpenAIBaseURL. When m.APIKeyEnv is set the key is read from that
// variable, and an empty variable is an *Error of errclass.Auth naming the variable (never a value); without
// APIKeyEnv no key is sent, as local servers (Ollama, vLLM) need none. A model of provider "anthropic" has no
// Client (its API is not OpenAI-compatible): see AnthropicClient. A model of provider "gemini" gets the client of
// Gemini's OpenAI-compatible endpoint (GeminiOpenAIPath under m.BaseURL, else under DefaultGeminiBaseURL), with
// the key of m.APIKeyEnv, else of GEMINI_API_KEY; its batches go through GeminiClient. Errors are *Error values.
func (r *Registry) Client(m experiment.Model) (*Client, error) {
	if strings.EqualFold(strings.TrimSpace(m.Provider), ProviderGemini) && m.APIKeyEnv == "" {
		m.APIKeyEnv = experiment.DefaultGeminiKeyEnv
	}
	ep, err := r.endpoint(m)
	if err != nil {
		return nil, err
	}
	if ep.provider == ProviderAnthropic {
		return nil, &Error{Class: errclass.InvalidRequest, Code: "not_openai_compatible",
			Message: fmt.Sprintf("model %q: provider %q has no OpenAI-compatible API (no embeddings, no OpenAI batches)", m.ID, ProviderAnthropic)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[ep]; ok {
		return c, nil
	}
	key, err := r.key(m, ep)
	if err != nil {
		return nil, err
	}
	base := ep.baseURL
	if ep.provider == ProviderGemini {
		base += GeminiOpenAIPath
	}
	c := NewClient(base, key, r.hc)
	if ep.provider == ProviderSim {
		c = NewSimClient(base, key, r.hc)
	}
	r.clients[ep] = c
	return c, nil
}

// GeminiClient returns the client of the native API of m, a model of provider "gemini": m.BaseURL, else
// DefaultGeminiBaseURL, with the key of m.APIKeyEnv, else of GEMINI_API_KEY (the API always needs one). The
// allow-list and the base URL are checked as Client checks them. A model of another provider is an error.
func (r *Registry) GeminiClient(m experiment.Model) (*GeminiClient, error) {
	if m.APIKeyEnv == "" {
		m.APIKeyEnv = experiment.DefaultGeminiKeyEnv
	}
	ep, err := r.endpoint(m)
	if err != nil {
		return nil, err
	}
	if ep.provider != ProviderGemini {
		return nil, &Error{Class: errclass.InvalidRequest, Code: "not_gemini",
			Message: fmt.Sprintf("model %q: provider %q does not speak Gemini's API", m.ID, ep.provider)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.gemini[ep]; ok {
		return c, nil
	}
	key, err := r.key(m, ep)
	if err != nil {
		return nil, err
	}
	c := NewGeminiClient(ep.baseURL, key, r.hc)
	r.gemini[ep] = c
	return c, nil
}

// AnthropicClient returns the client for the endpoint of m, a model of provider "anthropic": m.BaseURL, else
// DefaultAnthropicBaseURL, with the key of m.APIKeyEnv, else of ANTHROPIC_API_KEY (Anthropic's API always needs
// one: an empty variable is an *Error of errclass.Auth naming it). The allow-list and the base URL are checked as
// Client checks them. A model of another provider is an error. Errors are *Error values.
func (r *Registry) AnthropicClient(m experiment.Model) (*AnthropicClient, error) {
	if m.APIKeyEnv == "" {
		m.APIKeyEnv = experiment.DefaultAnthropicKeyEnv
	}
	ep, err := r.endpoint(m)
	if err != nil {
		return nil, err
	}
	if ep.provider != ProviderAnthropic {
		return nil, &Error{Class: errclass.InvalidRequest, Code: "not_anthropic",
			Message: fmt.Sprintf("model %q: provider %q does not speak Anthropic's Messages API", m.ID, ep.provider)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.anthropic[ep]; ok {
		return c, nil
	}
	key, err := r.key(m, ep)
	if err != nil {
		return nil, err
	}
	c := NewAnthropicClient(ep.baseURL, key, r.hc)
	r.anthropic[ep] = c
	return c, nil
}

// endpoint resolves m's endpoint (its provider, its base URL or the provider's default, its key variable) and
// refuses a base URL that carries a credential and a key variable the allow-list does not admit.
func (r *Registry) endpoint(m experiment.Model) (endpoint, error) {
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
	case ProviderAnthropic:
		if ep.baseURL == "" {
			ep.baseURL = DefaultAnthropicBaseURL
		}
	case ProviderGemini:
		if ep.baseURL == "" {
			ep.baseURL = DefaultGeminiBaseURL
		}
	case ProviderSim:
		if ep.baseURL == "" {
			ep.baseURL = strings.TrimRight(r.simBase, "/")
		}
		if ep.baseURL == "" {
			return endpoint{}, &Error{Class: errclass.InvalidRequest, Code: "no_simulator",
				Message: fmt.Sprintf("model %q uses provider \"sim\" but no simulator is running in this worker", m.ID)}
		}
	default:
		return endpoint{}, &Error{Class: errclass.InvalidRequest, Code: "unknown_provider",
			Message: fmt.Sprintf("model %q: unknown provider %q (want %q, %q, %q or %q)", m.ID, m.Provider, ProviderOpenAI, ProviderAnthropic, ProviderGemini, ProviderSim)}
	}

	if where := experiment.BaseURLSecret(ep.baseURL); where != "" {
		return endpoint{}, &Error{Class: errclass.InvalidRequest, Code: "key_in_base_url",
			Message: fmt.Sprintf("model %q: the base URL carries a credential in its %s; name an environment variable of the worker with api_key_env instead", m.ID, where)}
	}
	if ep.keyEnv != "" && !r.keyEnvAllowed(ep.keyEnv) {
		return endpoint{}, &Error{Class: errclass.Auth, Code: "api_key_env_not_allowed",
			Message: fmt.Sprintf("model %q: this worker does not allow api_key_env %s (allowed: %s); "+
				"the worker's --api-key-env-allow flag or SILICO_API_KEY_ENV_ALLOW variable lists the variables that may be used as keys",
				m.ID, ep.keyEnv, allowString(r.keyAllow))}
	}
	return ep, nil
}

// key reads the key of endpoint ep ("" without a key variable); an unset variable is an Auth error naming it.
func (r *Registry) key(m experiment.Model, ep endpoint) (string, error) {
	if ep.keyEnv == "" {
		return "", nil
	}
	key := r.getenv(ep.keyEnv)
	if key == "" {
		return "", &Error{Class: errclass.Auth, Code: "missing_api_key",
			Message: fmt.Sprintf("model %q: environment variable %s of the worker is not set or empty", m.ID, ep.keyEnv)}
	}
	return key, nil
}

func allowString(patterns []string) string {
	if len(patterns) == 0 {
		return "none"
	}
	return strings.Join(patterns, ", ")
}
