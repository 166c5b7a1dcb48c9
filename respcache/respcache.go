// Package respcache is the response cache's format: the key that identifies a request, and the entry that keeps its
// answer in the results store, validated whenever it is read.
//
// The key is the SHA-256 digest of everything that decides an answer: the endpoint (the normalised base URL, after
// "anthropic " for Anthropic's API, or "sim" for the built-in simulator), the model name, the full message list,
// the seed and every sampling parameter sent (the seed even where it is not sent: Anthropic has none, and each
// seed's cell is still a call of its own). Never the API key. So the same request gets the same answer back, which is what a reproducible
// rerun wants; a user who wants fresh samples changes the seeds or turns the cache off.
//
// An entry carries its own key and a checksum of its bytes. Read checks both and decodes the answer: an entry
// that was corrupted, or written under another key, is a miss (ErrInvalid), never a silently wrong answer.
package respcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
// and host lower-cased, default port and trailing slashes dropped), or SimEndpoint. A model of provider anthropic
// has AnthropicEndpointPrefix before its URL: its API is another one (no seed is sent, the system prompt goes
// apart), so its answers are never those of an OpenAI-compatible model of the same name at the same URL (a proxy
// that serves both). A model of provider gemini is the URL of Gemini's OpenAI-compatible endpoint, where its
// synchronous calls go: the answers of an openai model with that base URL are its answers.
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
	case llm.ProviderAnthropic:
		if base == "" {
			base = llm.DefaultAnthropicBaseURL
		}
		return AnthropicEndpointPrefix + normalise(base)
	case llm.ProviderGemini:
		// The endpoint its calls go to, Gemini's OpenAI-compatible one; a batch line is the same request.
		if base == "" {
			base = llm.DefaultGeminiBaseURL
		}
		return normalise(strings.TrimRight(base, "/") + llm.GeminiOpenAIPath)
	}
	return normalise(base)
}

// AnthropicEndpointPrefix marks the endpoints of Anthropic's Messages API in cache keys (see Endpoint).
const AnthropicEndpointPrefix = "anthropic "

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
	// Images are the pictures by the digests of their bytes, each as "<message index>:<sha256>", and their
	// detail: never their URLs or data URLs, so a changed picture is another key under either transport and
	// the same bytes are the same key under both. Absent without pictures, so such keys are as before.
	Images      []string `json:"images,omitempty"`
	ImageDetail string   `json:"image_detail,omitempty"`
}

// imageKeys places req's picture digests on their messages.
func imageKeys(req llm.Request) []string {
	if len(req.ImageSHA256) == 0 {
		return nil
	}
	out := make([]string, 0, len(req.ImageSHA256))
	for i, m := range req.Messages {
		for range m.Images {
			if len(out) < len(req.ImageSHA256) {
				out = append(out, strconv.Itoa(i)+":"+req.ImageSHA256[len(out)])
			}
		}
	}
	return out
}

// Key is the cache key of req sent to endpoint (see Endpoint). req.CellID is not part of it: two cells that
// send the same request share one answer.
func Key(endpoint string, req llm.Request) store.CacheKey {
	km := keyMaterial{Version: version, Endpoint: endpoint, Model: req.Model, Messages: req.Messages,
		Seed: req.Seed, Params: req.Params, Images: imageKeys(req)}
	if len(km.Images) > 0 {
		km.ImageDetail = req.ImageDetail
	}
	b, err := json.Marshal(km)
	if err != nil {
		// Strings, numbers and slices of them always marshal.
		panic(fmt.Sprintf("cache: key: %v", err))
	}
	return sha256.Sum256(b)
}

// Answer is what an entry keeps of a response: the model's text as it came (the record's raw answer), the usage
// the provider reported, why generation stopped, the first tokens' logprobs (when asked for) and the
// provenance of the call that produced it (the served model and system fingerprint, see llm.Response), so that
// a cell answered from the cache names the model that actually answered, not the one that would answer now.
type Answer struct {
	Text              string
	PromptTokens      int
	CompletionTokens  int
	FinishReason      string
	Logprobs          []llm.TokenLogprob
	ServedModel       string
	SystemFingerprint string
}

// AnswerOf is what the cache keeps of resp.
func AnswerOf(resp llm.Response) Answer {
	return Answer{Text: resp.Text, PromptTokens: resp.PromptTokens, CompletionTokens: resp.CompletionTokens,
		FinishReason: resp.FinishReason, Logprobs: resp.Logprobs, ServedModel: resp.ServedModel,
		SystemFingerprint: resp.SystemFingerprint}
}

// An entry's value is binary, so that validating and decoding a hit costs well under a microsecond:
//
//	version (1 byte) | key (32 bytes) | prompt tokens (uvarint) | completion tokens (uvarint) | text (the rest)
//
// An answer with a finish reason or logprobs is written in the second layout, which keeps both before the text:
//
//	2 (1 byte) | key | prompt tokens | completion tokens | finish reason length (uvarint) | finish reason |
//	logprobs length (uvarint) | logprobs (JSON, or nothing) | text (the rest)
//
// An answer with a served model or a system fingerprint is written in the third layout, the second's fields
// followed by both:
//
//	3 (1 byte) | key | prompt tokens | completion tokens | finish reason length | finish reason |
//	logprobs length | logprobs | served model length (uvarint) | served model |
//	system fingerprint length (uvarint) | system fingerprint | text (the rest)
//
// The first layout stays for answers without any of these, so entries written before finish reasons existed
// still read, as answers whose finish reason is unknown, and the second for answers without provenance, so
// entries written before provenance was kept read as answers whose served model is unknown. A reader that
// knows only the older layouts finds a first byte it does not know in a third-layout entry: ErrInvalid, a miss,
// never an answer read without its provenance or with the provenance taken for text. The checksum is the
// SHA-256 of the value.
const headerSize = 1 + len(store.CacheKey{})

// entryWithFinish is the first byte of the second layout.
const entryWithFinish = 2

// entryWithProvenance is the first byte of the third layout.
const entryWithProvenance = 3

// Entry is the cache entry of answer a to the request with key, from model, written by run at now.
func Entry(key store.CacheKey, model, run string, a Answer, now time.Time) store.CacheEntry {
	var lp []byte
	if len(a.Logprobs) > 0 {
		var err error
		if lp, err = json.Marshal(a.Logprobs); err != nil {
			// Strings and finite floats always marshal; a server's NaN cannot reach here (JSON has none).
			panic(fmt.Sprintf("cache: entry logprobs: %v", err))
		}
	}
	layout := byte(version)
	switch {
	case a.ServedModel != "" || a.SystemFingerprint != "":
		layout = entryWithProvenance
	case a.FinishReason != "" || lp != nil:
		layout = entryWithFinish
	}
	v := make([]byte, 0, headerSize+6*binary.MaxVarintLen64+len(a.FinishReason)+len(lp)+len(a.ServedModel)+
		len(a.SystemFingerprint)+len(a.Text))
	v = append(v, layout)
	v = append(v, key[:]...)
	v = binary.AppendUvarint(v, uint64(max(0, a.PromptTokens)))
	v = binary.AppendUvarint(v, uint64(max(0, a.CompletionTokens)))
	if layout >= entryWithFinish {
		v = appendCounted(v, []byte(a.FinishReason))
		v = appendCounted(v, lp)
	}
	if layout == entryWithProvenance {
		v = appendCounted(v, []byte(a.ServedModel))
		v = appendCounted(v, []byte(a.SystemFingerprint))
	}
	v = append(v, a.Text...)
	return store.CacheEntry{Key: key, Model: model, Value: v, Sum: sha256.Sum256(v), Run: run, Created: now.UTC()}
}

// ErrInvalid says a stored entry failed validation.
var ErrInvalid = errors.New("cache: invalid entry")

// Read validates e as the entry of key and returns its answer. An entry whose bytes do not match its checksum,
// that does not decode, or that names another key or format version, is ErrInvalid.
func Read(e store.CacheEntry, key store.CacheKey) (Answer, error) {
	if err := checkEntry(e, key); err != nil {
		return Answer{}, err
	}
	layout := byte(version)
	if len(e.Value) > 0 && (e.Value[0] == entryWithFinish || e.Value[0] == entryWithProvenance) {
		layout = e.Value[0]
	}
	v, err := body(e.Value, key, []byte{layout}, fmt.Sprintf("a version %d entry", version))
	if err != nil {
		return Answer{}, err
	}
	prompt, v, err := count(v, key, "prompt token count")
	if err != nil {
		return Answer{}, err
	}
	completion, v, err := count(v, key, "completion token count")
	if err != nil {
		return Answer{}, err
	}
	a := Answer{PromptTokens: int(prompt), CompletionTokens: int(completion)}
	if layout >= entryWithFinish {
		var finish, lp []byte
		if finish, v, err = counted(v, key, "finish reason"); err != nil {
			return Answer{}, err
		}
		if lp, v, err = counted(v, key, "logprobs"); err != nil {
			return Answer{}, err
		}
		a.FinishReason = string(finish)
		if len(lp) > 0 {
			if err := json.Unmarshal(lp, &a.Logprobs); err != nil {
				return Answer{}, fmt.Errorf("%w %s: logprobs: %v", ErrInvalid, key, err)
			}
		}
	}
	if layout == entryWithProvenance {
		var served, fp []byte
		if served, v, err = counted(v, key, "served model"); err != nil {
			return Answer{}, err
		}
		if fp, v, err = counted(v, key, "system fingerprint"); err != nil {
			return Answer{}, err
		}
		a.ServedModel, a.SystemFingerprint = string(served), string(fp)
	}
	if !utf8.Valid(v) {
		return Answer{}, fmt.Errorf("%w %s: text is not UTF-8", ErrInvalid, key)
	}
	a.Text = string(v)
	return a, nil
}

// appendCounted appends b's length as a uvarint and then b: a field counted reads back.
func appendCounted(v, b []byte) []byte {
	v = binary.AppendUvarint(v, uint64(len(b)))
	return append(v, b...)
}

// counted reads a uvarint length and that many bytes from the front of b and returns them and the rest.
func counted(b []byte, key store.CacheKey, what string) ([]byte, []byte, error) {
	n, rest, err := count(b, key, what+" length")
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(rest)) {
		return nil, nil, fmt.Errorf("%w %s: %s is cut short", ErrInvalid, key, what)
	}
	return rest[:n], rest[n:], nil
}

// body checks that an entry's value v starts with prefix and then key, and returns what follows; what names the
// format for the error.
func body(v []byte, key store.CacheKey, prefix []byte, what string) ([]byte, error) {
	head := len(prefix) + len(key)
	if len(v) < head || !bytes.Equal(v[:len(prefix)], prefix) {
		return nil, fmt.Errorf("%w %s: not %s", ErrInvalid, key, what)
	}
	if store.CacheKey(v[len(prefix):head]) != key {
		return nil, fmt.Errorf("%w %s: written under key %x", ErrInvalid, key, v[len(prefix):head])
	}
	return v[head:], nil
}

// count reads a varint count of at most math.MaxInt32 from the front of b and returns it and the rest.
func count(b []byte, key store.CacheKey, what string) (uint64, []byte, error) {
	n, size := binary.Uvarint(b)
	if size <= 0 || n > math.MaxInt32 {
		return 0, nil, fmt.Errorf("%w %s: bad %s", ErrInvalid, key, what)
	}
	return n, b[size:], nil
}

// checkEntry checks that e is stored under key and that its bytes match its checksum.
func checkEntry(e store.CacheEntry, key store.CacheKey) error {
	if e.Key != key {
		return fmt.Errorf("%w: stored under %s, looked up as %s", ErrInvalid, e.Key, key)
	}
	if sha256.Sum256(e.Value) != e.Sum {
		return fmt.Errorf("%w %s: checksum mismatch", ErrInvalid, key)
	}
	return nil
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

// parallelFrom is the number of keys from which Lookup splits its work over the CPUs: below it, a goroutine costs
// more than it saves.
const parallelFrom = 128

// Lookup reads the entries of keys from g and validates each. A large batch is split over the CPUs (at most 4
// parts, each at least parallelFrom/2 keys): the store's reads and the checksums run side by side, each part on
// its own connection.
func Lookup(ctx context.Context, g Getter, keys []store.CacheKey) (Found, error) {
	parts := 1
	if len(keys) >= parallelFrom {
		parts = min(runtime.GOMAXPROCS(0), 4, len(keys)/(parallelFrom/2))
	}
	if parts <= 1 {
		return lookup(ctx, g, keys)
	}
	found := make([]Found, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	size := (len(keys) + parts - 1) / parts
	for i := range parts {
		part := keys[min(len(keys), i*size):min(len(keys), (i+1)*size)]
		wg.Go(func() { found[i], errs[i] = lookup(ctx, g, part) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Found{}, err
	}
	out := Found{Answers: make(map[store.CacheKey]Answer, len(keys))}
	for _, f := range found {
		maps.Copy(out.Answers, f.Answers)
		for k, err := range f.Invalid {
			if out.Invalid == nil {
				out.Invalid = map[store.CacheKey]error{}
			}
			out.Invalid[k] = err
		}
	}
	return out, nil
}

func lookup(ctx context.Context, g Getter, keys []store.CacheKey) (Found, error) {
	entries, err := g.CacheGet(ctx, keys)
	if err != nil {
		return Found{}, err
	}
	f := Found{Answers: make(map[store.CacheKey]Answer, len(entries))}
	for _, e := range entries {
		// A store returns the rows whose key column matched; validation proves that the row belongs there.
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
