// Package sim is an OpenAI-compatible model simulator served as an http.Handler: /v1/chat/completions (plain and
// streamed), /v1/embeddings and /v1/models, with configurable latency, per-model RPM/TPM limits answered like a
// provider (429 + Retry-After + x-ratelimit-* headers), injected faults (random ones at seeded rates, cells whose
// every request fails, and outages: windows in which every call fails, served by Serve when they refuse
// connections), deterministic answers chosen among the options in the prompt (plain, or JSON for a
// response_format, with made-up logprobs when asked for; see reply.go and logprobs.go), usage counted with
// tiktoken, and a request log that tests use to prove no finished cell was requested twice. It also serves
// Anthropic's /v1/messages, and the batch APIs of both (OpenAI's /v1/files and /v1/batches, Anthropic's
// /v1/messages/batches; see batch.go, batch_openai.go and batch_anthropic.go), answered by the same code.
//
// A Server is safe for concurrent use. Its handlers respect the request's context: a client that goes away ends
// the latency sleep or a hang at once, so no goroutine outlives its request.
package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/silicolab/silico/experiment"
)

// CellHeader is the request header the runner sets to the id of the cell a call belongs to; it is recorded as
// Request.Cell.
const CellHeader = "X-Silico-Cell"

// Latency is the time a call takes before the simulator answers: Fixed ± a uniform Jitter, never below zero.
// The zero value answers at once.
type Latency struct {
	Fixed, Jitter time.Duration
}

// Faults are the probabilities (0..1, summing to at most 1) that a model call fails in each way instead of being
// answered. The zero value injects no faults. Hang and Drop close the connection by hijacking it (HTTP/1.x);
// where that is impossible (HTTP/2, httptest.ResponseRecorder) the handler aborts with http.ErrAbortHandler.
type Faults struct {
	// RateLimit answers 429 rate_limit_exceeded with Retry-After: Config.RateLimitRetryAfter (1 s by default),
	// at once and regardless of the rate: a provider shedding calls, not an account's empty bucket.
	RateLimit float64
	// Quota answers 429 insufficient_quota, without Retry-After.
	Quota float64
	// ServerError500 and ServerError503 answer 500 and 503.
	ServerError500, ServerError503 float64
	// Hang holds the request for Config.HangFor (or until the client goes away), then closes the connection.
	Hang float64
	// Drop closes the connection without a response.
	Drop float64
	// Malformed answers 200 with a truncated JSON body (a truncated event stream when streaming).
	Malformed float64
	// Length answers 200 with the reply cut after its first token and finish_reason "length", as a model that
	// ran out of max_tokens. Chat calls only: an embeddings call that draws it is answered normally.
	Length float64
	// ContentFilter answers 200 with content null and finish_reason "content_filter", as OpenAI does for an
	// answer its filter withheld. Chat calls only, as Length.
	ContentFilter float64
}

// probabilities lists the rates in the order faults are drawn. New faults go at the end, so a FaultSeed gives
// the calls the same faults of the older kinds as before.
func (f Faults) probabilities() [numFaults]float64 {
	return [...]float64{f.RateLimit, f.Quota, f.ServerError500, f.ServerError503, f.Hang, f.Drop, f.Malformed,
		f.Length, f.ContentFilter}
}

// numFaults is the number of kinds of random faults.
const numFaults = 9

// Fault names, as recorded in Request.Fault, in the order Faults lists them. Calls refused by the RPM or TPM limit
// are recorded with FaultLimitRequests or FaultLimitTokens.
const (
	FaultRateLimit      = "rate_limit"
	FaultQuota          = "insufficient_quota"
	FaultServerError500 = "server_error_500"
	FaultServerError503 = "server_error_503"
	FaultHang           = "hang"
	FaultDrop           = "drop"
	FaultMalformed      = "malformed"
	FaultLength         = "length"
	FaultContentFilter  = "content_filter"

	FaultLimitRequests = "limit_requests"
	FaultLimitTokens   = "limit_tokens"

	// FaultFailCell is the fault of a request for one of Config.FailCells.
	FaultFailCell = "fail_cell"
)

func faultName(i int) string {
	return [...]string{FaultRateLimit, FaultQuota, FaultServerError500, FaultServerError503, FaultHang, FaultDrop,
		FaultMalformed, FaultLength, FaultContentFilter}[i]
}

// Defaults applied by New to zero fields of Config.
const (
	DefaultBurst   = 1.0
	DefaultHangFor = 5 * time.Minute
	// DefaultRateLimitRetryAfter is the Retry-After of an injected 429.
	DefaultRateLimitRetryAfter = time.Second
	DefaultDimensions          = 256
	// DefaultMaxTokens is what a call without max_tokens costs against the TPM limit for its completion.
	DefaultMaxTokens = 256
)

// Config configures a Server. The zero value is a simulator without latency, limits or faults.
type Config struct {
	// Latency of every model call. Optional: defaults to none.
	Latency Latency
	// RPM and TPM are the requests and tokens per minute allowed per model name, enforced with token buckets
	// like providers do. A call costs its prompt tokens plus max_tokens (DefaultMaxTokens if unset) up front.
	// Optional: 0 means unlimited.
	RPM, TPM int
	// Burst is each bucket's capacity as a fraction of one minute's limit; buckets start full.
	// Optional: defaults to DefaultBurst (1.0).
	Burst float64
	// Faults are injected at these rates. Optional: defaults to none.
	Faults Faults
	// FailCells are cell ids (matched against the X-Silico-Cell header) whose every request is answered 500 after
	// the latency, as a real server (llama.cpp's, for one) does for a prompt it cannot answer. They take precedence
	// over the random Faults but not over the RPM and TPM limits. Optional.
	FailCells []string
	// RefuseJSONSchema answers every chat request whose response_format is json_schema with 400 and the same
	// message, at once, as llama.cpp's server does under a chat template it cannot apply a schema with: a refusal
	// no cell can pass. Optional.
	RefuseJSONSchema bool
	// ContextWindow is the most prompt tokens a chat request may carry: a longer prompt is answered 400
	// context_length_exceeded at once, with OpenAI's message naming both counts, so each such cell has its own
	// message. Optional: 0 means no limit.
	ContextWindow int
	// FaultSeed makes fault injection deterministic: the fault of the n-th model call (chat or embeddings,
	// counted from 1) is a function of (FaultSeed, n).
	FaultSeed int64
	// HangFor is how long a hang lasts before the connection is closed. Optional: defaults to DefaultHangFor.
	HangFor time.Duration
	// RateLimitRetryAfter is the Retry-After of the injected 429s (Faults.RateLimit), in whole seconds.
	// Optional: defaults to DefaultRateLimitRetryAfter.
	RateLimitRetryAfter time.Duration
	// Models are the names listed by /v1/models. Every endpoint accepts any model name.
	// Optional: defaults to DefaultModels().
	Models []string
	// RequestLog receives one JSON line per request (a Request), written under a mutex. Optional.
	RequestLog io.Writer
	// Forget keeps no request in memory (Requests returns none): a simulator that serves a run of millions of
	// calls would otherwise hold every entry. Tests leave it off to read Requests; RequestLog still gets them all.
	Forget bool
	// Outages are windows, counted from the first model call, in which every model call fails the same way (see
	// Outage). They take precedence over everything else, limits included: a provider that is down neither counts
	// calls against the account nor looks at them. A call in an outage takes no number in the fault sequence, so
	// the calls outside the windows get the faults they would get without the outages: the n-th call answered
	// outside every window has the fault of (FaultSeed, n) whatever number of calls the outages swallowed.
	// Windows may not overlap. Optional.
	Outages []Outage
	// Now is the clock of the rate limits, the outages, the request log and the batch APIs. Optional: defaults to time.Now.
	Now func() time.Time
	// Batch configures the batch APIs (/v1/files, /v1/batches, /v1/messages/batches). Optional.
	Batch BatchConfig
	// Sampling is how a chat answer's option is chosen: SamplingHash (the default, also "") or SamplingSeeded,
	// which samples as llama.cpp's server does (see SamplingSeeded). It applies to batch lines too.
	Sampling string

	// ServedModel is the model every chat answer says answered it (its "model"; Anthropic's model, Gemini's
	// modelVersion), as a provider names the dated snapshot behind a name. Optional: defaults to the name asked
	// for followed by DefaultServedModelSuffix.
	ServedModel string
	// SystemFingerprint is the system_fingerprint of every OpenAI-shaped chat answer (the Anthropic and Gemini
	// shapes have none, nor, so that a Gemini cell's provenance does not depend on whether it was asked
	// synchronously or in a batch, has the answer of Gemini's OpenAI-compatible path).
	// Optional: defaults to DefaultSystemFingerprint.
	SystemFingerprint string
	// SnapshotChange answers the calls of the seeds from its FromSeed on with another served model and
	// fingerprint: a model name whose snapshot changed between the runs of its seeds. A function of the request
	// alone, so a resumed or cached run reports what a fresh one would. Anthropic's requests carry no seed (seed
	// 0), so it applies to them only from FromSeed 0. Optional.
	SnapshotChange *SnapshotChange
	// PositionBias makes answers favour an option by its place in the prompt's list. Optional: none.
	PositionBias PositionBias
	// Preferences make answers favour options by what they say, wherever they are listed. Optional: none.
	Preferences Preferences

	// lineServer marks the simulator that answers batch lines: it serves no batch APIs of its own.
	lineServer bool
}

// SnapshotChange is a second served model and fingerprint, for the calls whose seed is FromSeed or more.
type SnapshotChange struct {
	FromSeed int64
	// ServedModel and SystemFingerprint replace Config's; empty ones default to the name asked for followed by
	// DefaultChangedSuffix, and DefaultChangedFingerprint.
	ServedModel, SystemFingerprint string
}

// The default provenance of the simulator's answers (see Config.ServedModel and Config.SnapshotChange).
const (
	DefaultServedModelSuffix  = "-2026-01-01"
	DefaultSystemFingerprint  = "fp_silico_sim"
	DefaultChangedSuffix      = "-2026-02-01"
	DefaultChangedFingerprint = "fp_silico_sim2"
)

// provenance is the served model and fingerprint of a chat call for model with seed.
func (c *Config) provenance(model string, seed int64) (served, fingerprint string) {
	served, fingerprint = c.ServedModel, c.SystemFingerprint
	if served == "" {
		served = model + DefaultServedModelSuffix
	}
	if fingerprint == "" {
		fingerprint = DefaultSystemFingerprint
	}
	if ch := c.SnapshotChange; ch != nil && seed >= ch.FromSeed {
		served, fingerprint = ch.ServedModel, ch.SystemFingerprint
		if served == "" {
			served = model + DefaultChangedSuffix
		}
		if fingerprint == "" {
			fingerprint = DefaultChangedFingerprint
		}
	}
	return served, fingerprint
}

// PositionBias is a simulated preference for the option at one place of the prompt's list: with probability
// Strength (a function of the request's answer hash, like every choice of the simulator) the answer is the option
// at Position, whatever the hash chose otherwise; and the label position's distribution is the mixture
// (1 − Strength) × its own + Strength × all mass on that option's label. Over many requests the option at
// Position is then answered with probability Strength + (1 − Strength)/K for K options, so a known Strength can be
// recovered from the answers or from the probabilities.
type PositionBias struct {
	// Position is BiasFirst or BiasLast: the first or the last option listed.
	Position string
	// Strength is in [0, 1]; 0: no bias.
	Strength float64
}

// The positions of PositionBias.
const (
	BiasFirst = "first"
	BiasLast  = "last"
)

// biasSalt separates the position-bias draw from every other use of an answer's hash.
const biasSalt = 0x706f736974696f6e

// at returns the biased position among n options for the answer of hash h, or -1 when this answer is not biased.
func (b PositionBias) at(h uint64, n int) int {
	if b.Strength <= 0 || n < 2 {
		return -1
	}
	r := rng{state: mix64(h ^ biasSalt)}
	if r.uniform() >= b.Strength {
		return -1
	}
	return b.index(n)
}

// index is the shown index of Position among n options.
func (b PositionBias) index(n int) int {
	if b.Position == BiasLast {
		return n - 1
	}
	return 0
}

// Preferences are the simulated model's answer by meaning: a weight per option text, the text as the prompt lists
// it after its enumeration ("Neutral" for "3. Neutral"), options not named weighing 1. The option an answer's hash
// would take is instead drawn with these weights (by a uniform of the hash, like every choice of the simulator),
// so an option's share of the answers is its weight over the listed options' total in whatever order they are
// shown: with a PositionBias of strength b on top, the option shown first is answered with probability
// b + (1 − b)·its share. A prompt listing none of the texts, or whose options all weigh 0, is answered as without
// preferences.
type Preferences map[string]float64

// meaningSalt separates the preference draw from every other use of an answer's hash.
const meaningSalt = 0x6d65616e696e6721

// draw returns the index among the options of text at spans drawn by their weights with a uniform of hash h, or
// -1 when p names none of them or their weights sum to 0.
func (p Preferences) draw(h uint64, text string, spans []span) int {
	if len(p) == 0 || len(spans) == 0 {
		return -1
	}
	w := make([]float64, len(spans))
	named, total := false, 0.0
	for i, s := range spans {
		w[i] = 1
		if v, ok := p[optionText(text[s.start:s.end])]; ok {
			w[i], named = v, true
		}
		total += w[i]
	}
	if !named || total <= 0 {
		return -1
	}
	r := rng{state: mix64(h ^ meaningSalt)}
	u := r.uniform() * total
	last := -1
	for i, v := range w {
		if v <= 0 {
			continue
		}
		if u < v {
			return i
		}
		u -= v
		last = i
	}
	return last // rounding left u at the total's end
}

// DefaultModels returns the models /v1/models lists when Config.Models is empty.
func DefaultModels() []string {
	return []string{"sim-chat", "gpt-4o-mini", "text-embedding-3-small"}
}

// Request is one entry of the request log.
type Request struct {
	// Time is when the request arrived, by Config.Now.
	Time time.Time `json:"time"`
	// Endpoint is the request path, e.g. "/v1/chat/completions".
	Endpoint string `json:"endpoint"`
	Model    string `json:"model,omitempty"`
	// Cell is the value of the X-Silico-Cell header.
	Cell string `json:"cell,omitempty"`
	Seed int64  `json:"seed"`
	// Status is the HTTP status sent; 0 when the connection was closed without a response (hang, drop, a refuse
	// outage reaching a bare handler) and 499 when the client went away first.
	Status           int `json:"status"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Images is how many pictures the request carried; ImageTokens what they cost (part of PromptTokens).
	Images      int `json:"images,omitempty"`
	ImageTokens int `json:"image_tokens,omitempty"`
	// Fault names the injected fault or the limit that refused the call (the Fault* constants); empty otherwise.
	Fault string `json:"fault,omitempty"`
	// FinishReason is the finish_reason of a chat answer's first choice: stop, length (max_tokens, or the
	// length fault) or content_filter.
	FinishReason string `json:"finish_reason,omitempty"`
	// Logprobs is set when the chat request asked for logprobs; ResponseFormat is its response_format's type.
	Logprobs       bool   `json:"logprobs,omitempty"`
	ResponseFormat string `json:"response_format,omitempty"`
	// Labels are the labels the first choice's answer chose among, as the request shows them: the enumerators
	// of the options its last user message lists ("1", "b"), or the values of its json_schema enum. LabelProbs
	// is the server's own distribution over them at the label's token: each label's mass, its spellings (" 3",
	// "3.", the other case) included, over the mass of all of them, position bias and seeded sampling's shape
	// included, before top_logprobs cuts the list. Both are set when the request asked for logprobs and the
	// answer has a label token, so a test can hold a reader of the logprobs to what the server meant, request
	// by request.
	Labels     []string  `json:"labels,omitempty"`
	LabelProbs []float64 `json:"label_probs,omitempty"`
	// Ignored are the parameters the simulator accepted without acting on them (sampling parameters such as
	// temperature, presence_penalty, logit_bias or top_k; temperature not under seeded sampling), as
	// "name=value" pairs joined by spaces.
	Ignored string `json:"ignored,omitempty"`
	// Done is when the handler finished, by Config.Now: its response was written and flushed to the connection,
	// the connection was about to be closed without one (hang, drop), or the handler noticed that the client had
	// gone. The client cannot have had the response before Done. Zero in Requests while the response is being
	// sent; Config.RequestLog gets the entry only once Done is set.
	Done time.Time `json:"done"`
	// Lost is set when the response could not be written to the connection: it was closed first (by the client,
	// or by Served at the start of a refuse window while the handler was still answering). The client never had
	// it, so asking again is no second payment. Set together with Done.
	Lost bool `json:"lost,omitempty"`
}

// Counters are totals since the Server was created.
type Counters struct {
	Requests     int64 // every request, including /v1/models and bad requests
	OK           int64 // 200 responses with a well-formed body
	RateLimited  int64 // 429 rate_limit_exceeded: injected or by the RPM/TPM limits
	Quota        int64 // 429 insufficient_quota
	ServerErrors int64 // 500 and 503
	Hangs        int64
	Drops        int64
	Malformed    int64
	// Length and ContentFilter are the OK chat answers whose first choice finished with "length" (cut by
	// max_tokens or the length fault) or "content_filter"; they are counted in OK too.
	Length, ContentFilter int64
	BadRequests           int64 // 4xx other than 429: unreadable body, missing model or input, unknown path
	Cancelled             int64 // the client went away before the answer
	Outage                int64 // model calls that arrived during an Outage (counted here only)
	// PromptTokens and CompletionTokens are the usage of every 200 response (OK and Malformed).
	PromptTokens, CompletionTokens int64
}

// Server is the simulator. Create it with New.
type Server struct {
	cfg      Config
	mux      *http.ServeMux
	limits   *limiter // nil when unlimited
	cl100k   *tokenCounter
	o200k    *tokenCounter
	models   []byte // the /v1/models body
	faultCum [numFaults]float64
	// failCells is the set of Config.FailCells.
	failCells map[string]bool
	// outages are Config.Outages with their defaults, in order of start.
	outages []Outage

	// first is the arrival of the first model call, by Config.Now: set once, then firstCall is closed.
	firstOnce sync.Once
	first     time.Time
	firstCall chan struct{}

	calls atomic.Uint64 // model calls, numbering faults
	c     struct {
		requests, ok, rateLimited, quota, serverErrors, hangs, drops, malformed, length, contentFilter,
		badRequests, cancelled, outage, promptTokens, completionTokens atomic.Int64
	}

	logMu  sync.Mutex
	log    []Request
	logErr error

	batches *batches // nil for the line server
}

// New returns a Server for cfg, after checking it and loading the tokenizer (once per process, offline).
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.HangFor == 0 {
		cfg.HangFor = DefaultHangFor
	}
	if cfg.RateLimitRetryAfter == 0 {
		cfg.RateLimitRetryAfter = DefaultRateLimitRetryAfter
	}
	if len(cfg.Models) == 0 {
		cfg.Models = DefaultModels()
	}
	cfg.Models = slices.Clone(cfg.Models)
	cfg.FailCells = slices.Clone(cfg.FailCells)
	if ch := cfg.SnapshotChange; ch != nil {
		c := *ch // the caller's value may change; the simulator's may not
		cfg.SnapshotChange = &c
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if _, err := loadCL100K(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:    cfg,
		limits: newLimiter(cfg.RPM, cfg.TPM, cfg.Burst),
		cl100k: newTokenCounter(loadCL100K),
		o200k:  newTokenCounter(loadO200K), // loaded on first use: most simulated models use cl100k_base

		outages:   sortedOutages(cfg.Outages),
		firstCall: make(chan struct{}),
	}
	if len(cfg.FailCells) > 0 {
		s.failCells = make(map[string]bool, len(cfg.FailCells))
		for _, c := range cfg.FailCells {
			s.failCells[c] = true
		}
	}
	var sum float64
	for i, p := range cfg.Faults.probabilities() {
		sum += p
		s.faultCum[i] = sum
	}
	body, err := json.Marshal(modelList(cfg.Models))
	if err != nil {
		return nil, fmt.Errorf("sim: render model list: %w", err)
	}
	s.models = body

	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	s.mux.HandleFunc("POST /v1/messages", s.handleMessages)
	// Gemini's OpenAI-compatible endpoint, where provider gemini makes its synchronous calls.
	s.mux.HandleFunc("POST /v1beta/openai/chat/completions", s.handleChat)
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	s.mux.HandleFunc("GET /v1/models/{model}", s.handleModel)
	if !cfg.lineServer {
		if s.batches, err = newBatches(cfg); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		s.registerBatches()
	}
	s.mux.HandleFunc("/", s.handleNotFound)
	return s, nil
}

func (c Config) validate() error {
	var errs []error
	if b := c.PositionBias; b.Strength < 0 || b.Strength > 1 || (b.Strength > 0 && b.Position != BiasFirst && b.Position != BiasLast) {
		errs = append(errs, fmt.Errorf("position_bias {position: %q, strength: %v}: want position first or last and a strength from 0 to 1", b.Position, b.Strength))
	}
	for text, w := range c.Preferences {
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			errs = append(errs, fmt.Errorf("preferences %q: weight %v; want a number >= 0", text, w))
		}
	}
	if c.Latency.Fixed < 0 || c.Latency.Jitter < 0 {
		errs = append(errs, fmt.Errorf("latency %v ± %v: want durations >= 0", c.Latency.Fixed, c.Latency.Jitter))
	}
	if c.RPM < 0 || c.TPM < 0 {
		errs = append(errs, fmt.Errorf("rpm %d, tpm %d: want >= 0 (0 = unlimited)", c.RPM, c.TPM))
	}
	if c.ContextWindow < 0 {
		errs = append(errs, fmt.Errorf("context_window %d: want a number of tokens >= 0 (0 = no limit)", c.ContextWindow))
	}
	if c.Burst < 0 || c.Burst > 1000 {
		errs = append(errs, fmt.Errorf("burst %v: want a fraction of one minute's limit in (0, 1000]", c.Burst))
	}
	if c.Sampling != "" && !slices.Contains(experiment.SimSamplings(), c.Sampling) {
		errs = append(errs, fmt.Errorf("sampling %q: want %s or %s", c.Sampling, SamplingHash, SamplingSeeded))
	}
	if c.HangFor < 0 {
		errs = append(errs, fmt.Errorf("hang_for %v: want >= 0", c.HangFor))
	}
	if c.RateLimitRetryAfter < 0 {
		errs = append(errs, fmt.Errorf("rate_limit_retry_after %v: want >= 0", c.RateLimitRetryAfter))
	}
	var sum float64
	for i, p := range c.Faults.probabilities() {
		if p < 0 || p > 1 || p != p {
			errs = append(errs, fmt.Errorf("fault %s rate %v: want a probability in [0, 1]", faultName(i), p))
		}
		sum += p
	}
	if sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("fault rates sum to %v: want at most 1", sum))
	}
	if slices.Contains(c.FailCells, "") {
		errs = append(errs, errors.New("fail_cells: an empty cell id would fail every request without the cell header"))
	}
	if err := validateOutages(c.Outages); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// ServeHTTP serves the OpenAI-compatible endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.c.requests.Add(1)
	s.mux.ServeHTTP(w, r)
}

// Requests returns a copy of the request log. The log keeps every request for the Server's lifetime (about 150
// bytes each), so a process serving millions of calls should use Config.RequestLog and a fresh Server per run.
func (s *Server) Requests() []Request {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return slices.Clone(s.log)
}

// RequestLogErr returns the first error writing Config.RequestLog; after it the simulator stops writing there.
func (s *Server) RequestLogErr() error {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.logErr
}

// Counters returns the totals so far.
func (s *Server) Counters() Counters {
	return Counters{
		Requests:         s.c.requests.Load(),
		OK:               s.c.ok.Load(),
		RateLimited:      s.c.rateLimited.Load(),
		Quota:            s.c.quota.Load(),
		ServerErrors:     s.c.serverErrors.Load(),
		Hangs:            s.c.hangs.Load(),
		Drops:            s.c.drops.Load(),
		Malformed:        s.c.malformed.Load(),
		Length:           s.c.length.Load(),
		ContentFilter:    s.c.contentFilter.Load(),
		BadRequests:      s.c.badRequests.Load(),
		Cancelled:        s.c.cancelled.Load(),
		Outage:           s.c.outage.Load(),
		PromptTokens:     s.c.promptTokens.Load(),
		CompletionTokens: s.c.completionTokens.Load(),
	}
}

// send counts a request, appends it to the log, runs write (which sends the response and flushes it, or does
// nothing when there is none to send), then completes the entry with its Done time (and Lost, when write failed)
// and writes it to Config.RequestLog. So the entry is in Requests before the client can have the response, and
// its Done is never earlier than the moment the client could have it. write may be nil.
func (s *Server) send(req Request, write func() error) {
	switch {
	case req.Fault == FaultOutage:
		s.c.outage.Add(1)
	case req.Fault == FaultHang:
		s.c.hangs.Add(1)
	case req.Fault == FaultDrop:
		s.c.drops.Add(1)
	case req.Status == http.StatusOK && req.Fault == FaultMalformed:
		s.c.malformed.Add(1)
	case req.Status == http.StatusOK:
		s.c.ok.Add(1)
	case req.Status == http.StatusTooManyRequests && req.Fault == FaultQuota:
		s.c.quota.Add(1)
	case req.Status == http.StatusTooManyRequests:
		s.c.rateLimited.Add(1)
	case req.Status >= 500:
		s.c.serverErrors.Add(1)
	case req.Status == statusClientClosed:
		s.c.cancelled.Add(1)
	case req.Status >= 400:
		s.c.badRequests.Add(1)
	}
	if req.Status == http.StatusOK && req.Fault != FaultMalformed {
		switch req.FinishReason {
		case "length":
			s.c.length.Add(1)
		case "content_filter":
			s.c.contentFilter.Add(1)
		}
	}
	if req.Status == http.StatusOK {
		s.c.promptTokens.Add(int64(req.PromptTokens))
		s.c.completionTokens.Add(int64(req.CompletionTokens))
	}
	s.logMu.Lock()
	i := len(s.log)
	if !s.cfg.Forget {
		s.log = append(s.log, req)
	}
	s.logMu.Unlock()

	if write != nil && write() != nil {
		req.Lost = true
	}

	req.Done = s.cfg.Now().Round(0)
	var line []byte
	if s.cfg.RequestLog != nil {
		b, err := json.Marshal(req)
		if err == nil {
			line = append(b, '\n')
		}
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if !s.cfg.Forget {
		s.log[i].Done, s.log[i].Lost = req.Done, req.Lost
	}
	if line != nil && s.logErr == nil {
		if _, err := s.cfg.RequestLog.Write(line); err != nil {
			s.logErr = fmt.Errorf("sim: write request log: %w", err)
		}
	}
}

// statusClientClosed records a request whose client went away before the answer (nginx's convention).
const statusClientClosed = 499

// pickFault returns the index of the fault of model call n, or -1 for none.
func (s *Server) pickFault(n uint64) int {
	if s.faultCum[len(s.faultCum)-1] == 0 {
		return -1
	}
	u := float64(mix64(uint64(s.cfg.FaultSeed)^mix64(n))>>11) / (1 << 53)
	for i, c := range s.faultCum {
		if u < c {
			return i
		}
	}
	return -1
}

// latency draws one call's latency.
func (s *Server) latency() time.Duration {
	l := s.cfg.Latency
	d := l.Fixed
	if l.Jitter > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * float64(l.Jitter))
	}
	return max(d, 0)
}

// sleep waits d or until done is closed, and reports whether d elapsed.
func sleep(done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// abort closes the connection without a response: hijacked where the server allows it, otherwise by the
// panic net/http reserves for aborting a handler.
func abort(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close() // nothing is left to tell the client
}

// Answered reports whether the request got an answer a client can use: HTTP 200 with a whole body written to the
// connection, from the chat, embeddings or Anthropic messages endpoint.
func (r Request) Answered() bool {
	return r.Status == http.StatusOK && r.Fault != FaultMalformed && !r.Lost &&
		(r.Endpoint == "/v1/chat/completions" || r.Endpoint == "/v1/embeddings" || r.Endpoint == "/v1/messages")
}

// RequestedAfterAnswer returns, for each cell requested again after (or while) one of its requests was being
// answered (see Request.Answered), how many such requests there were: the calls a client paid for twice, unless
// it lost the first answer. Requests are taken in order of arrival; those without a cell are ignored.
func RequestedAfterAnswer(log []Request) map[string]int {
	log = slices.Clone(log)
	slices.SortStableFunc(log, func(a, b Request) int { return a.Time.Compare(b.Time) })
	answered := map[string]time.Time{} // arrival of each cell's first answered request
	again := map[string]int{}
	for _, r := range log {
		if r.Cell == "" {
			continue
		}
		if at, ok := answered[r.Cell]; ok && !r.Time.Before(at) {
			again[r.Cell]++
			continue
		}
		if r.Answered() {
			answered[r.Cell] = r.Time
		}
	}
	return again
}
