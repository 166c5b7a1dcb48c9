package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
)

// CellHeader is the request header that carries Request.CellID, so a server's log (the simulator's request
// log, a proxy's access log) can tell which cell a request was for.
const CellHeader = "X-Silico-Cell"

// DefaultOpenAIBaseURL is the base URL of provider "openai" when a model sets none.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// Request is one chat call.
type Request struct {
	// Model is the provider's model name ("gpt-4o-mini").
	Model    string
	Messages []experiment.Message
	// Seed is always sent (as "seed"), so providers that honour it sample reproducibly.
	Seed   int64
	Params experiment.Params
	// CellID, when set, is sent as the X-Silico-Cell header to the simulator (NewSimClient), never to a provider.
	CellID string
	// ImageSHA256 are the digests of the pictures the messages carry (Message.Images, as sent: data URLs or
	// URLs), in order. They are what the response cache keys pictures by, whatever the transport.
	ImageSHA256 []string
	// ImageDetail is the detail level sent with every picture ("auto", "low", "high"; empty: none sent).
	ImageDetail string
}

// Response is a successful call's answer.
type Response struct {
	// Text is the first choice's message content.
	Text string
	// PromptTokens and CompletionTokens are the usage the provider reported (zero if it reported none).
	PromptTokens, CompletionTokens int
	// RateLimit is what the response's x-ratelimit-* headers said.
	RateLimit RateLimitInfo
	// FinishReason is why generation stopped, in OpenAI's words: FinishStop, FinishLength, FinishContentFilter,
	// or another the server sent; empty when it sent none.
	FinishReason string
	// Logprobs are the first generated tokens with their alternatives, when the request asked for logprobs
	// (at most MaxLogprobTokens of them); nil when the server sent none.
	Logprobs []TokenLogprob
	// ServedModel is the model the provider says answered (the response's model: often a dated snapshot of
	// the name asked for; Gemini's modelVersion), and SystemFingerprint OpenAI's system_fingerprint, the
	// backend configuration that answered. Both are cleaned by Provenance; empty when the provider sent none.
	ServedModel, SystemFingerprint string
}

// MaxProvenance is the most bytes of a served model name or system fingerprint a response keeps: real ones are
// a few dozen, and a longer string is no identifier but something else riding along.
const MaxProvenance = 128

// Provenance cleans a provider-sent identifier (a served model name, a system fingerprint) before it is kept:
// surrounding space trimmed, every rune that is not a printable non-space character (control characters,
// newlines, invalid UTF-8, spaces inside) dropped, and the result cut to at most MaxProvenance bytes on a rune
// boundary. An identifier has no use for anything else, so nothing else can ride along into records and logs.
func Provenance(s string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		if r == utf8.RuneError || !unicode.IsPrint(r) || unicode.IsSpace(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > MaxProvenance {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// servedBy sets out's provenance from what the provider sent, cleaned by Provenance.
func servedBy(out *Response, model, fingerprint string) {
	out.ServedModel, out.SystemFingerprint = Provenance(model), Provenance(fingerprint)
}

// The finish reasons silico tells apart. Anthropic's stop reasons are mapped onto them (see anthropicFinish).
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// MaxLogprobTokens is how many generated tokens' logprobs a response keeps: the option label is sought among
// them (after at most a short fixed prefix), and keeping more would make every cached answer of a long reply
// large.
const MaxLogprobTokens = 16

// TokenLogprob is one generated token, its log probability and the most likely tokens at its position.
type TokenLogprob struct {
	Token   string       `json:"t"`
	Logprob float64      `json:"l"`
	Top     []TopLogprob `json:"top,omitempty"`
}

// TopLogprob is one alternative at a token position.
type TopLogprob struct {
	Token   string  `json:"t"`
	Logprob float64 `json:"l"`
}

// choiceAnswer reads what a Response keeps of a choice besides its text: its finish reason and the logprobs of
// its first tokens.
func choiceAnswer(out *Response, c openai.ChatCompletionChoice) {
	out.FinishReason = string(c.FinishReason)
	if c.LogProbs == nil || len(c.LogProbs.Content) == 0 {
		return
	}
	toks := c.LogProbs.Content[:min(len(c.LogProbs.Content), MaxLogprobTokens)]
	out.Logprobs = make([]TokenLogprob, len(toks))
	for i, t := range toks {
		tl := TokenLogprob{Token: t.Token, Logprob: t.LogProb, Top: make([]TopLogprob, len(t.TopLogProbs))}
		for j, a := range t.TopLogProbs {
			tl.Top[j] = TopLogprob{Token: a.Token, Logprob: a.LogProb}
		}
		out.Logprobs[i] = tl
	}
}

// Redacted is r with redact applied to every text the provider sent: the answer, the logprobs' tokens and the
// provenance (a server may echo anything, the Authorization header included).
func (r Response) Redacted(redact func(string) string) Response {
	r.Text = redact(r.Text)
	r.ServedModel, r.SystemFingerprint = redact(r.ServedModel), redact(r.SystemFingerprint)
	for i := range r.Logprobs {
		r.Logprobs[i].Token = redact(r.Logprobs[i].Token)
		for j := range r.Logprobs[i].Top {
			r.Logprobs[i].Top[j].Token = redact(r.Logprobs[i].Top[j].Token)
		}
	}
	return r
}

// Client calls one OpenAI-compatible endpoint with one API key. It wraps a single go-openai client and is safe
// for concurrent use; create one per endpoint (Registry does) and share it.
//
// Each Chat is exactly one HTTP request: neither Client nor go-openai retries anything.
type Client struct {
	oc      *openai.Client
	baseURL string
	hasKey  bool
	redact  func(string) string
	now     func() time.Time
	// cellHeader says requests carry their cell id in CellHeader: only a client of the simulator (NewSimClient).
	cellHeader bool
}

// NewSimClient is NewClient for the simulator (provider "sim"): it also sends each call's cell id in the
// X-Silico-Cell header, by which the simulator logs requests and fails cells. A client of any other endpoint never
// sends it: a provider (or a gateway's log) would learn the experiment's cell ids, and needs none of them.
func NewSimClient(baseURL, apiKey string, hc *http.Client) *Client {
	c := NewClient(baseURL, apiKey, hc)
	c.cellHeader = true
	return c
}

// cellID is the cell id a call of c sends: id for the simulator, none for any other endpoint.
func (c *Client) cellID(id string) string {
	if !c.cellHeader {
		return ""
	}
	return id
}

// NewClient returns a client of the endpoint at baseURL ("https://api.openai.com/v1",
// "http://localhost:11434/v1"). An empty apiKey sends no Authorization header, which local servers (Ollama,
// vLLM, the simulator) accept.
//
// hc is used for every request and should be the process's one shared *http.Client (connection reuse); its
// Timeout, if any, bounds each call in addition to the caller's context. nil means a private client with no
// timeout. hc itself is never modified.
func NewClient(baseURL, apiKey string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	cfg := openai.DefaultConfig(apiKey)
	cfg.BaseURL = strings.TrimRight(baseURL, "/")
	cfg.HTTPClient = capturingDoer{hc: hc}
	return &Client{
		oc:      openai.NewClientWithConfig(cfg),
		baseURL: cfg.BaseURL,
		hasKey:  apiKey != "",
		redact:  redactor(apiKey),
		now:     time.Now,
	}
}

// String describes the client without its key.
func (c *Client) String() string {
	key := "none"
	if c.hasKey {
		key = "set"
	}
	return fmt.Sprintf("llm.Client{base_url: %s, api_key: %s}", c.baseURL, key)
}

// BaseURL is the endpoint the client calls.
func (c *Client) BaseURL() string { return c.baseURL }

// GoString is String, so %#v cannot print the key either.
func (c *Client) GoString() string { return c.String() }

// Chat sends one chat completion request. Its error is always an *Error (see Classify), with RetryAfter taken
// from the response's Retry-After, retry-after-ms or x-ratelimit-reset-* headers.
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	capt := &capture{cellID: c.cellID(req.CellID), patch: bodyPatch(req.Params)}
	ctx = context.WithValue(ctx, captureKey{}, capt)

	resp, err := c.oc.CreateChatCompletion(ctx, chatRequest(req))
	if err != nil {
		return Response{}, c.fail(err, capt)
	}
	if len(resp.Choices) == 0 {
		return Response{}, c.fail(&Error{
			Class: errclass.Transport, Status: capt.status, Code: "malformed_body",
			Message: "response has no choices",
		}, capt)
	}
	out := Response{
		Text:             resp.Choices[0].Message.Content,
		PromptTokens:     resp.Usage.PromptTokens,
		CompletionTokens: resp.Usage.CompletionTokens,
		RateLimit:        ParseRateLimit(capt.header),
	}
	choiceAnswer(&out, resp.Choices[0])
	servedBy(&out, resp.Model, resp.SystemFingerprint)
	// A server may echo the request (Authorization header included) in its answer.
	return out.Redacted(c.redact), nil
}

// fail classifies err, adds what the response headers said, and removes the key from every string the
// provider returned: the error's code, type, param and message, a non-JSON body and the status line.
func (c *Client) fail(err error, capt *capture) *Error {
	scrub(err, c.redact)
	e := Classify(err)
	if e.Status == 0 && capt.status != 0 {
		e.Status = capt.status
		if capt.status >= 400 && e.Class == errclass.Transport {
			// An error status whose body could not be read: the status still says what happened.
			e.Class = classOfStatus(capt.status, "", "", "")
		}
	}
	e.Code = c.redact(e.Code)
	e.Message = c.redact(e.Message)
	if e.RetryAfter == 0 {
		e.RetryAfter = retryDelay(capt.header, e.Status, c.now())
	}
	rl := ParseRateLimit(capt.header)
	e.Exhausted = rl.RemainingRequests == 0 || rl.RemainingTokens == 0
	return e
}

// scrub applies redact to every provider-supplied string of the go-openai errors in err's chain. go-openai
// built these errors for this call alone, so scrubbing them in place is safe; it keeps the key out of the whole
// Unwrap chain (which Temporal records level by level as the failure's causes), not only out of our own text.
func scrub(err error, redact func(string) string) {
	for x := err; x != nil; x = errors.Unwrap(x) {
		switch v := x.(type) {
		case *openai.APIError:
			v.Message = redact(v.Message)
			v.Type = redact(v.Type)
			v.HTTPStatus = redact(v.HTTPStatus)
			if v.Param != nil {
				p := redact(*v.Param)
				v.Param = &p
			}
			if v.Code != nil {
				v.Code = redact(codeString(v.Code))
			}
			if v.InnerError != nil {
				v.InnerError.Code = redact(v.InnerError.Code)
			}
		case *openai.RequestError:
			v.Body = []byte(redact(string(v.Body)))
			v.HTTPStatus = redact(v.HTTPStatus)
		}
	}
}

// chatRequest maps a Request onto go-openai's request.
func chatRequest(req Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
		if len(m.Images) == 0 {
			continue
		}
		// A message with pictures is a list of parts: its text, then each picture.
		parts := make([]openai.ChatMessagePart, 0, 1+len(m.Images))
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: m.Content})
		for _, u := range m.Images {
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: u, Detail: openai.ImageURLDetail(req.ImageDetail)}})
		}
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, MultiContent: parts}
	}
	seed := int(req.Seed)
	p := req.Params
	out := openai.ChatCompletionRequest{
		Model:    req.Model,
		Messages: msgs,
		Seed:     &seed,
		Stop:     p.Stop,
		// What go-openai's checks of reasoning models see; the values sent are bodyPatch's.
		Temperature:         float32From(p.Temperature),
		TopP:                float32From(p.TopP),
		PresencePenalty:     float32From(p.PresencePenalty),
		FrequencyPenalty:    float32From(p.FrequencyPenalty),
		LogitBias:           p.LogitBias,
		ReasoningEffort:     p.ReasoningEffort,
		MaxCompletionTokens: p.MaxCompletionTokens,
		LogProbs:            p.Logprobs,
		N:                   p.N,
	}
	if p.TopLogprobs != nil {
		out.TopLogProbs = *p.TopLogprobs
	}
	if n := p.MaxTokens; n > 0 {
		if experiment.IsReasoningModel(req.Model) {
			out.MaxCompletionTokens = n
		} else {
			//lint:ignore SA1019 OpenAI-compatible servers (Ollama, vLLM, llama.cpp) know only max_tokens.
			out.MaxTokens = n
		}
	}
	return out
}

func float32From(p *float64) float32 {
	if p == nil {
		return 0
	}
	return float32(*p)
}

// bodyPatch returns the fields the request body must carry exactly as the spec set them: every parameter
// go-openai would change or drop, and the extra keys. go-openai's float fields are float32 and "omitempty": an
// explicit 0 (temperature 0, the usual choice for reproducible runs) would be dropped and the provider's default
// (1.0) used, and float32 would round other values; top_logprobs 0 and response_format have no faithful field
// either. The HTTP layer writes these fields into the body go-openai encoded (see capturingDoer).
func bodyPatch(p experiment.Params) map[string]json.RawMessage {
	var patch map[string]json.RawMessage
	set := func(k string, v json.RawMessage) {
		if patch == nil {
			patch = make(map[string]json.RawMessage, 4)
		}
		patch[k] = v
	}
	num := func(k string, v *float64) {
		if v != nil {
			b, _ := json.Marshal(*v) // a float of a valid spec (never NaN or infinite) always encodes
			set(k, b)
		}
	}
	num("temperature", p.Temperature)
	num("top_p", p.TopP)
	num("presence_penalty", p.PresencePenalty)
	num("frequency_penalty", p.FrequencyPenalty)
	if p.TopLogprobs != nil {
		set("top_logprobs", strconv.AppendInt(nil, int64(*p.TopLogprobs), 10))
	}
	if len(p.ResponseFormat) > 0 {
		set("response_format", p.ResponseFormat)
	}
	for k, v := range p.Extra {
		set(k, v)
	}
	return patch
}

// patchBody sets the fields of patch in the JSON object body.
func patchBody(body []byte, patch map[string]json.RawMessage) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, fmt.Errorf("patch request body: %w", err)
	}
	maps.Copy(obj, patch)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("patch request body: %w", err)
	}
	return out, nil
}

// capture carries one call's cell id to the HTTP layer and the response's status and headers back from it.
// go-openai's errors carry no headers, so this is how Retry-After and x-ratelimit-* reach us. It lives in the
// request's context: one per call, nothing shared.
type capture struct {
	cellID string
	patch  map[string]json.RawMessage
	status int
	header http.Header
}

type captureKey struct{}

// capturingDoer is the go-openai HTTPDoer: it sets the cell header, writes the capture's patch into the body,
// and records status and headers into the request's capture. It wraps the shared *http.Client without touching
// it.
type capturingDoer struct{ hc *http.Client }

// Do sends r with the shared client.
func (d capturingDoer) Do(r *http.Request) (*http.Response, error) {
	capt, _ := r.Context().Value(captureKey{}).(*capture)
	if capt != nil && capt.cellID != "" {
		r.Header.Set(CellHeader, capt.cellID)
	}
	if capt != nil && len(capt.patch) > 0 && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		if body, err = patchBody(body, capt.patch); err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := d.hc.Do(r)
	if capt != nil && resp != nil {
		capt.status = resp.StatusCode
		capt.header = resp.Header
	}
	return resp, err
}

// keyPattern matches OpenAI-style secret keys, including the partly masked echo in a 401 message
// ("Incorrect API key provided: sk-proj-****abcd").
var keyPattern = regexp.MustCompile(`sk-[A-Za-z0-9_*.\-]{4,}`)

// redactor returns a function removing apiKey, and anything shaped like an OpenAI key, from text.
func redactor(apiKey string) func(string) string {
	return func(s string) string {
		if apiKey != "" {
			s = strings.ReplaceAll(s, apiKey, "[REDACTED]")
		}
		return keyPattern.ReplaceAllString(s, "[REDACTED]")
	}
}
