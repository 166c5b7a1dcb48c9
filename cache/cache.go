// Package cache is the response cache's format: the key that identifies a request, and the entry that keeps its
// answer in the results store, validated whenever it is read.
//
// The key is the SHA-256 digest of everything that decides an answer: the endpoint (the normalised base URL, or
// "sim" for the built-in simulator), the model name, the full message list, the seed and every sampling
// parameter sent. Never the API key. So the same request gets the same answer back, which is what a reproducible
// rerun wants; a user who wants fresh samples changes the seeds or turns the cache off.
//
// An entry carries its own key and a checksum of its bytes. Read checks both and decodes the answer: an entry
// that was corrupted, or written under another key, is a miss (ErrInvalid), never a silently wrong answer.
package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
)

// version is part of every key and entry: a change of either format is a new version, whose keys no older
// entry can match.
const version = 1

// SimEndpoint is the endpoint of models that use the built-in simulator without a base URL: its answers depend
// on the request alone, not on the port it happens to listen on.
const SimEndpoint = "sim"

// Endpoint is the identity of model m's endpoint in cache keys: the base URL its calls go to, normalised (scheme
// and host lower-cased, default port and trailing slashes dropped), or SimEndpoint.
func Endpoint(m experiment.Model) string {
	base := strings.TrimSpace(m.BaseURL)
	switch strings.ToLower(strings.TrimSpace(m.Provider)) {
	case llm.ProviderSim:
		if base == "" {
			return SimEndpoint
		}
	case "", llm.ProviderOpenAI:
		if base == "" {
			base = llm.DefaultOpenAIBaseURL
		}
	}
	return normalise(base)
}

func normalise(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return strings.TrimRight(raw, "/")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, ""
	}
	host = strings.ToLower(host)
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	u.Host = host
	if port != "" {
		u.Host = net.JoinHostPort(host, port)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	u.Fragment = ""
	return u.String()
}

// keyMaterial is what a key digests. Params is the whole parameter set, so a parameter added to it is part of
// every key without a change here.
type keyMaterial struct {
	Version  int                  `json:"v"`
	Endpoint string               `json:"endpoint"`
	Model    string               `json:"model"`
	Messages []experiment.Message `json:"messages"`
	Seed     int64                `json:"seed"`
	Params   experiment.Params    `json:"params"`
}

// Key is the cache key of req sent to endpoint (see Endpoint). req.CellID is not part of it: two cells that
// send the same request share one answer.
func Key(endpoint string, req llm.Request) store.CacheKey {
	b, err := json.Marshal(keyMaterial{Version: version, Endpoint: endpoint, Model: req.Model, Messages: req.Messages,
		Seed: req.Seed, Params: req.Params})
	if err != nil {
		// Strings, numbers and slices of them always marshal.
		panic(fmt.Sprintf("cache: key: %v", err))
	}
	return sha256.Sum256(b)
}

// Answer is what an entry keeps of a response.
type Answer struct {
	Text             string `json:"text"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
}

// envelope is an entry's value.
type envelope struct {
	Version int    `json:"v"`
	Key     string `json:"key"`
	Model   string `json:"model"`
	Answer
}

// Entry is the cache entry of answer a to the request with key, from model, written by run at now.
func Entry(key store.CacheKey, model, run string, a Answer, now time.Time) store.CacheEntry {
	v, err := json.Marshal(envelope{Version: version, Key: key.String(), Model: model, Answer: a})
	if err != nil {
		panic(fmt.Sprintf("cache: entry: %v", err))
	}
	return store.CacheEntry{Key: key, Model: model, Value: v, Sum: sha256.Sum256(v), Run: run, Created: now.UTC()}
}

// ErrInvalid says a stored entry failed validation.
var ErrInvalid = errors.New("cache: invalid entry")

// Read validates e as the entry of key and returns its answer. An entry whose bytes do not match its checksum,
// that does not decode, or that names another key or format version, is ErrInvalid.
func Read(e store.CacheEntry, key store.CacheKey) (Answer, error) {
	if e.Key != key {
		return Answer{}, fmt.Errorf("%w: stored under %s, looked up as %s", ErrInvalid, e.Key, key)
	}
	if sum := sha256.Sum256(e.Value); !bytes.Equal(sum[:], e.Sum[:]) {
		return Answer{}, fmt.Errorf("%w %s: checksum mismatch", ErrInvalid, key)
	}
	var env envelope
	if err := json.Unmarshal(e.Value, &env); err != nil {
		return Answer{}, fmt.Errorf("%w %s: %v", ErrInvalid, key, err)
	}
	if env.Version != version || env.Key != key.String() {
		return Answer{}, fmt.Errorf("%w %s: written as version %d under key %s", ErrInvalid, key, env.Version, env.Key)
	}
	return env.Answer, nil
}

// Getter reads entries by key; every store.Store is one.
type Getter interface {
	CacheGet(ctx context.Context, keys []store.CacheKey) ([]store.CacheEntry, error)
}

// Found is the outcome of a Lookup: the valid answers by key, and the keys whose entries failed validation.
type Found struct {
	Answers map[store.CacheKey]Answer
	Invalid map[store.CacheKey]error
}

// Lookup reads the entries of keys in one call of g and validates each.
func Lookup(ctx context.Context, g Getter, keys []store.CacheKey) (Found, error) {
	entries, err := g.CacheGet(ctx, keys)
	if err != nil {
		return Found{}, err
	}
	f := Found{Answers: make(map[store.CacheKey]Answer, len(entries))}
	want := make(map[store.CacheKey]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	for _, e := range entries {
		// A store returns the rows whose key column matched; validation then proves the row belongs there.
		if !want[e.Key] {
			continue
		}
		a, err := Read(e, e.Key)
		if err != nil {
			if f.Invalid == nil {
				f.Invalid = map[store.CacheKey]error{}
			}
			f.Invalid[e.Key] = err
			continue
		}
		f.Answers[e.Key] = a
	}
	return f, nil
}
