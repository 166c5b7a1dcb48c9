package sim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// maxBody bounds a request body; OpenAI's own limit is of this order.
const maxBody = 32 << 20

func (s *Server) counterFor(model string) *tokenCounter {
	if EncodingFor(model) == "o200k_base" {
		return s.o200k
	}
	return s.cl100k
}

// decode reads a JSON request body into v.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("could not parse the JSON body of your request: %w", err)
	}
	return nil
}

// badRequest answers 400 and records it.
func (s *Server) badRequest(w http.ResponseWriter, rec *Request, param, msg string) {
	s.refuse(w, rec, param, "", msg)
}

// refuse answers 400 with an error code and records it.
func (s *Server) refuse(w http.ResponseWriter, rec *Request, param, code, msg string) {
	rec.Status = http.StatusBadRequest
	s.send(*rec, func() error { return writeError(w, rec.Status, "invalid_request_error", code, param, msg) })
}

// internalError answers 500 for a failure of the simulator itself and records it.
func (s *Server) internalError(w http.ResponseWriter, rec *Request, err error) {
	rec.Status = http.StatusInternalServerError
	s.send(*rec, func() error { return writeError(w, rec.Status, "server_error", "", "", err.Error()) })
}

// gate applies the rate limits, the injected fault of model call n and the latency, in that order, like a
// provider that refuses over-limit calls at once and fails others after some work. It answers and records the
// call itself unless it returns proceed; malformed then asks for a truncated body.
func (s *Server) gate(w http.ResponseWriter, r *http.Request, rec *Request, n uint64, cost int) (proceed, malformed bool) {
	if s.limits != nil {
		d := s.limits.admit(rec.Model, cost, s.cfg.Now())
		setLimitHeaders(w.Header(), d.state)
		if !d.ok {
			rec.Status = http.StatusTooManyRequests
			rec.Fault = FaultLimitRequests
			msg := fmt.Sprintf("Rate limit reached for %s on requests per min (RPM): Limit %d. Please try again in %s.",
				rec.Model, s.cfg.RPM, formatReset(d.retry))
			if d.by == "tokens" {
				rec.Fault = FaultLimitTokens
				msg = fmt.Sprintf("Rate limit reached for %s on tokens per min (TPM): Limit %d, Requested %d. Please try again in %s.",
					rec.Model, s.cfg.TPM, cost, formatReset(d.retry))
				if d.tooLarge {
					msg = fmt.Sprintf("Request too large for %s on tokens per min (TPM): Limit %d, Requested %d.",
						rec.Model, s.cfg.TPM, cost)
				}
			}
			w.Header().Set("Retry-After", retryAfterSeconds(d.retry))
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(max(d.retry.Milliseconds(), 1), 10))
			s.send(*rec, func() error { return writeError(w, rec.Status, d.by, "rate_limit_exceeded", "", msg) })
			return false, false
		}
	}

	fault := s.pickFault(n)
	if fault >= 0 {
		rec.Fault = faultName(fault)
	}
	if s.failCells[rec.Cell] {
		rec.Fault = FaultFailCell
	}
	switch rec.Fault {
	case FaultRateLimit:
		rec.Status = http.StatusTooManyRequests
		ra := s.cfg.RateLimitRetryAfter
		w.Header().Set("Retry-After", retryAfterSeconds(ra))
		s.send(*rec, func() error {
			return writeError(w, rec.Status, "requests", "rate_limit_exceeded", "",
				"Rate limit reached for "+rec.Model+" (simulated). Please try again in "+retryAfterSeconds(ra)+"s.")
		})
		return false, false
	case FaultQuota:
		rec.Status = http.StatusTooManyRequests
		s.send(*rec, func() error {
			return writeError(w, rec.Status, "insufficient_quota", "insufficient_quota", "",
				"You exceeded your current quota, please check your plan and billing details (simulated).")
		})
		return false, false
	}

	if !sleep(r.Context().Done(), s.latency()) {
		rec.Status, rec.Fault = statusClientClosed, ""
		s.send(*rec, nil)
		return false, false
	}

	var msg string
	switch rec.Fault {
	case FaultServerError500:
		rec.Status = http.StatusInternalServerError
		msg = "The server had an error while processing your request. Sorry about that! (simulated)"
	case FaultServerError503:
		rec.Status = http.StatusServiceUnavailable
		msg = "The engine is currently overloaded, please try again later. (simulated)"
	case FaultFailCell:
		rec.Status = http.StatusInternalServerError
		msg = "Internal server error: the model's output for this request could not be processed " +
			"(simulated: this cell always fails)."
	case FaultHang:
		sleep(r.Context().Done(), s.cfg.HangFor)
		s.send(*rec, nil)
		abort(w)
		return false, false
	case FaultDrop:
		s.send(*rec, nil)
		abort(w)
		return false, false
	default:
		return true, rec.Fault == FaultMalformed
	}
	s.send(*rec, func() error { return writeError(w, rec.Status, "server_error", "", "", msg) })
	return false, false
}

func setLimitHeaders(h http.Header, st limitState) {
	if st.requests.on {
		h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(st.requests.limit))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(max(st.requests.remaining, 0)))
		h.Set("X-Ratelimit-Reset-Requests", formatReset(st.requests.reset))
	}
	if st.tokens.on {
		h.Set("X-Ratelimit-Limit-Tokens", strconv.Itoa(st.tokens.limit))
		h.Set("X-Ratelimit-Remaining-Tokens", strconv.Itoa(max(st.tokens.remaining, 0)))
		h.Set("X-Ratelimit-Reset-Tokens", formatReset(st.tokens.reset))
	}
}

func (s *Server) newRecord(r *http.Request) Request {
	return Request{Time: s.cfg.Now().Round(0), Endpoint: r.URL.Path, Cell: r.Header.Get(CellHeader)}
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	rec := s.newRecord(r)
	if o, ok := s.outageAt(rec.Time); ok {
		s.failOutage(w, &rec, o) // before the call takes a number: see Config.Outages
		return
	}
	n := s.calls.Add(1)
	var req chatRequest
	if err := decode(w, r, &req); err != nil {
		s.badRequest(w, &rec, "", err.Error())
		return
	}
	rec.Model = req.Model
	if req.Seed != nil {
		rec.Seed = *req.Seed
	}
	if req.Model == "" {
		s.badRequest(w, &rec, "model", "you must provide a model parameter")
		return
	}
	if len(req.Messages) == 0 {
		s.badRequest(w, &rec, "messages", "'messages' must contain at least one message")
		return
	}
	rec.Ignored = req.ignoredParams(s.cfg.Sampling == SamplingSeeded)
	opts, param, err := parseChatOptions(&req)
	opts.bias, opts.prefs = s.cfg.PositionBias, s.cfg.Preferences
	rec.Logprobs, rec.ResponseFormat = req.Logprobs, opts.format.kind
	if err != nil {
		s.badRequest(w, &rec, param, err.Error())
		return
	}
	var temperature float64
	if s.cfg.Sampling == SamplingSeeded {
		if temperature, err = parseTemperature(req.Temperature); err != nil {
			s.badRequest(w, &rec, "temperature", err.Error())
			return
		}
	}
	if s.cfg.RefuseJSONSchema && opts.format.kind == "json_schema" {
		s.badRequest(w, &rec, "response_format", "the chat template of this server cannot apply response_format "+
			"json_schema (simulated: refuse_json_schema)")
		return
	}
	msgs := make([]chatMessage, len(req.Messages))
	var images []imagePart
	for i, m := range req.Messages {
		msgs[i] = chatMessage{Role: m.Role, Name: m.Name, Content: m.Content.Text}
		images = append(images, m.Content.Images...)
	}
	tc := s.counterFor(req.Model)
	prompt, err := tc.chatPromptTokens(msgs)
	if err != nil {
		s.internalError(w, &rec, err)
		return
	}
	if len(images) > 0 {
		n, param, err := s.imageTokens(r.Context(), images)
		if err != nil {
			s.badRequest(w, &rec, param, err.Error())
			return
		}
		rec.Images, rec.ImageTokens = len(images), n
		prompt += n
	}
	if limit := s.cfg.ContextWindow; limit > 0 && prompt > limit {
		s.refuse(w, &rec, "messages", "context_length_exceeded", fmt.Sprintf("This model's maximum context length is %d tokens. "+
			"However, your messages resulted in %d tokens. Please reduce the length of the messages.", limit, prompt))
		return
	}
	cost := prompt + opts.maxTokens*opts.n
	if opts.maxTokens == 0 {
		cost = prompt + DefaultMaxTokens*opts.n
	}
	proceed, malformed := s.gate(w, r, &rec, n, cost)
	if !proceed {
		return
	}

	h := answerHash(req.Model, rec.Seed, msgs)
	if s.cfg.Sampling == SamplingSeeded {
		// The preference hash: answerHash without the seed (0 stands in), salted apart from seed 0's.
		opts.seeded = &seededDraw{pref: mix64(answerHash(req.Model, 0, msgs) ^ preferenceSalt), seed: rec.Seed,
			temperature: temperature}
	}
	choices := make([]chatChoice, opts.n)
	completion := 0
	for i := range choices {
		c, k, err := choose(tc, choiceHash(h, i), i, msgs, opts, rec.Fault)
		if err != nil {
			s.internalError(w, &rec, err)
			return
		}
		c.Index = i
		choices[i], completion = c, completion+k
	}
	rec.FinishReason = choices[0].FinishReason
	rec.Labels, rec.LabelProbs = choices[0].labels, choices[0].labelProbs
	rec.PromptTokens, rec.CompletionTokens, rec.Status = prompt, completion, http.StatusOK
	u := usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	id := "chatcmpl-sim" + strconv.FormatUint(n, 36)
	created := rec.Time.Unix()
	served, fingerprint := s.cfg.provenance(req.Model, rec.Seed)
	if strings.HasPrefix(r.URL.Path, "/v1beta/") {
		// Gemini's own answers (its batch lines) have a modelVersion and no fingerprint: its OpenAI-compatible
		// path answers alike, so a cell's provenance does not depend on the way it was asked.
		fingerprint = ""
	}
	if req.Stream {
		// One choice (parseChatOptions refuses n > 1 with stream), sent without logprobs.
		var text string
		if c := choices[0].Message.Content; c != nil {
			text = *c
		}
		withUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		s.send(rec, func() error {
			return s.stream(w, chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: served,
				SystemFingerprint: fingerprint}, text, choices[0].FinishReason, u, withUsage, malformed)
		})
		return
	}
	body, err := json.Marshal(chatResponse{
		ID: id, Object: "chat.completion", Created: created, Model: served,
		Choices:           choices,
		Usage:             u,
		SystemFingerprint: fingerprint,
	})
	if err != nil {
		s.internalError(w, &rec, fmt.Errorf("sim: encode response: %w", err))
		return
	}
	if malformed {
		body = body[:len(body)/2]
	}
	s.send(rec, func() error { return writeJSON(w, http.StatusOK, body) })
}

// maxChoices bounds n, as OpenAI does.
const maxChoices = 128

// chatOptions are what a chat request asks of the answer, beyond its messages.
type chatOptions struct {
	// maxTokens caps each choice's completion (0: no cap).
	maxTokens int
	// logprobs asks for the tokens' log probabilities, with top alternatives at each position (0..20).
	logprobs bool
	top      int
	format   responseFormat
	// n is the number of choices.
	n int
	// seeded is set under seeded sampling (Config.Sampling); nil: the answer is the hash's.
	seeded *seededDraw
	// bias is the server's PositionBias, prefs its Preferences.
	bias  PositionBias
	prefs Preferences
}

// parseChatOptions checks the request's max_tokens, logprobs, top_logprobs, n and response_format as OpenAI
// does, and returns them, or the parameter at fault and why.
func parseChatOptions(req *chatRequest) (chatOptions, string, error) {
	o := chatOptions{maxTokens: req.MaxCompletionTokens, logprobs: req.Logprobs, n: 1}
	if o.maxTokens == 0 {
		o.maxTokens = req.MaxTokens
	}
	if o.maxTokens < 0 {
		return o, "max_tokens", fmt.Errorf("max_tokens %d: want a positive number", o.maxTokens)
	}
	if t := req.TopLogprobs; t != nil {
		if !req.Logprobs {
			return o, "top_logprobs", fmt.Errorf("invalid value for 'top_logprobs': 'logprobs' must be true when " +
				"'top_logprobs' is given")
		}
		if *t < 0 || *t > MaxTopLogprobs {
			return o, "top_logprobs", fmt.Errorf("invalid 'top_logprobs': %d; want an integer from 0 to %d", *t, MaxTopLogprobs)
		}
		o.top = *t
	}
	if req.N != nil {
		o.n = *req.N
		switch {
		case o.n < 1 || o.n > maxChoices:
			return o, "n", fmt.Errorf("invalid 'n': %d; want an integer from 1 to %d", o.n, maxChoices)
		case o.n > 1 && req.Stream:
			return o, "n", fmt.Errorf("n %d with stream: the simulator streams one choice; send n 1 or no stream", o.n)
		}
	}
	f, err := parseResponseFormat(req.ResponseFormat)
	if err != nil {
		return o, "response_format", err
	}
	o.format = f
	return o, "", nil
}

// choiceHash is the hash of choice i of an answer of hash h: choice 0 is the answer itself, so n only adds
// choices; the others are answers drawn afresh.
func choiceHash(h uint64, i int) uint64 {
	if i == 0 {
		return h
	}
	return mix64(h ^ uint64(i)*0x9e3779b97f4a7c15)
}

// choose writes one choice of the answer of hash h and returns it with its completion tokens: the reply to the
// request's format, cut to max_tokens (finish_reason "length"), cut after its first token by the length fault,
// withheld by the content_filter fault, with logprobs when asked for.
// Under seeded sampling (o.seeded) the option is drawn as sampleOption says from the label distribution of the
// request's preference hash, and that distribution is the one its logprobs report; i is the choice's index.
func choose(tc *tokenCounter, h uint64, i int, msgs []chatMessage, o chatOptions, fault string) (chatChoice, int, error) {
	c := chatChoice{Message: responseMessage{Role: "assistant"}, FinishReason: "stop"}
	if fault == FaultContentFilter {
		c.FinishReason = "content_filter"
		return c, 0, nil
	}
	r := compose(h, msgs, o.format, -1, o.bias, o.prefs)
	var label []candidate
	if d := o.seeded; d != nil && len(r.labels) > 0 {
		// The preferred option is the one compose writes for the preference hash; the distribution is drawn
		// from a stream of that hash alone, so neither depends on the seed. A position bias moves its share of
		// that distribution (and of the options' shares the draw reads) onto its option before the draw.
		pref := compose(d.pref, msgs, o.format, -1, PositionBias{}, o.prefs)
		st := rng{state: mix64(d.pref ^ preferenceSalt)}
		var shares []float64
		label, shares = labelDistribution(&st, pref.labels, pref.chosen)
		if o.bias.Strength > 0 && len(pref.labels) >= 2 {
			b := o.bias.index(len(pref.labels))
			label = biased(label, pref.labels[b], o.bias.Strength)
			for j := range shares {
				shares[j] *= 1 - o.bias.Strength
			}
			shares[b] += o.bias.Strength
		}
		r = compose(h, msgs, o.format, sampleOption(shares, d.temperature, seededUniform(d.seed, i)), PositionBias{}, nil)
	}
	limit := o.maxTokens
	if fault == FaultLength {
		limit, c.FinishReason = 1, "length"
	}
	n, err := tc.replyTokens(r)
	if err != nil {
		return c, 0, err
	}
	text := r.text
	cut := limit > 0 && n > limit
	if cut {
		c.FinishReason = "length"
	}
	if o.logprobs || cut {
		pieces, labelAt, err := tc.replyPieces(r)
		if err != nil {
			return c, 0, err
		}
		if limit > 0 && len(pieces) > limit {
			pieces = pieces[:limit]
			text, n = strings.Join(pieces, ""), limit
			if labelAt >= limit {
				labelAt = -1
			}
		}
		if o.logprobs {
			if labelAt >= 0 {
				if label == nil {
					label = labelCandidates(h, labelAt, pieces[labelAt], r.labels, r.chosen, o.bias)
				}
				c.labels, c.labelProbs = r.labels, labelShares(label, r.labels)
			}
			c.Logprobs = logprobsOf(h, pieces, labelAt, r.labels, r.chosen, o.top, label, o.bias)
		}
	}
	c.Message.Content = &text
	return c, n, nil
}

// stream sends the answer as server-sent events the way OpenAI does: a role chunk, content chunks of one word
// each, a chunk with the finish reason, the usage chunk when asked for, and "data: [DONE]". A malformed stream
// stops in the middle of its second event. It returns an error when an event could not be written to the
// connection.
func (s *Server) stream(w http.ResponseWriter, base chatChunk, text, finish string, u usage, withUsage, malformed bool) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(c chatChunk, truncate bool) error {
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("sim: encode a stream chunk: %w", err)
		}
		if truncate {
			b = b[:len(b)/2]
		}
		buf := make([]byte, 0, len(b)+8)
		buf = append(append(append(buf, "data: "...), b...), "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return err
		}
		return rc.Flush()
	}
	empty := ""
	c := base
	c.Choices = []chunkChoice{{Delta: chunkDelta{Role: "assistant", Content: &empty}}}
	if err := send(c, false); err != nil {
		return err
	}
	for i, word := range splitWords(text) {
		c.Choices = []chunkChoice{{Delta: chunkDelta{Content: &word}}}
		if err := send(c, malformed && i == 0); err != nil || (malformed && i == 0) {
			return err
		}
	}
	c.Choices = []chunkChoice{{FinishReason: &finish}}
	if err := send(c, false); err != nil {
		return err
	}
	if withUsage {
		c.Choices = []chunkChoice{}
		c.Usage = &u
		if err := send(c, false); err != nil {
			return err
		}
	}
	if _, err := w.Write([]byte("data: [DONE]\n\n")); err != nil {
		return err
	}
	return rc.Flush()
}

// splitWords splits text before each space, so the pieces join back to text (" word" as OpenAI's chunks do).
func splitWords(text string) []string {
	var out []string
	for len(text) > 0 {
		i := strings.IndexByte(text[1:], ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// embedInput is one input of an embeddings call: a text or a list of token ids.
type embedInput struct {
	text   string
	tokens []int
}

func parseEmbedInput(raw json.RawMessage) ([]embedInput, error) {
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []embedInput{{text: one}}, nil
	}
	var texts []string
	if err := json.Unmarshal(raw, &texts); err == nil {
		in := make([]embedInput, len(texts))
		for i, t := range texts {
			in[i].text = t
		}
		return in, nil
	}
	var toks []int
	if err := json.Unmarshal(raw, &toks); err == nil {
		return []embedInput{{tokens: toks}}, nil
	}
	var batches [][]int
	if err := json.Unmarshal(raw, &batches); err == nil {
		in := make([]embedInput, len(batches))
		for i, t := range batches {
			in[i].tokens = t
		}
		return in, nil
	}
	return nil, fmt.Errorf("'input' must be a string, an array of strings, an array of token ids or an array of such arrays")
}

// maxDimensions bounds the dimensions of an embedding.
const maxDimensions = 8192

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	rec := s.newRecord(r)
	if o, ok := s.outageAt(rec.Time); ok {
		s.failOutage(w, &rec, o) // before the call takes a number: see Config.Outages
		return
	}
	n := s.calls.Add(1)
	var req embeddingRequest
	if err := decode(w, r, &req); err != nil {
		s.badRequest(w, &rec, "", err.Error())
		return
	}
	rec.Model = req.Model
	if req.Model == "" {
		s.badRequest(w, &rec, "model", "you must provide a model parameter")
		return
	}
	if len(req.Input) == 0 {
		s.badRequest(w, &rec, "input", "you must provide an input parameter")
		return
	}
	in, err := parseEmbedInput(req.Input)
	if err != nil {
		s.badRequest(w, &rec, "input", err.Error())
		return
	}
	if len(in) == 0 {
		s.badRequest(w, &rec, "input", "'input' must not be empty")
		return
	}
	dims := req.Dimensions
	if dims == 0 {
		dims = DefaultDimensions
	}
	if dims < 1 || dims > maxDimensions {
		s.badRequest(w, &rec, "dimensions", fmt.Sprintf("dimensions %d: want 1..%d", req.Dimensions, maxDimensions))
		return
	}
	b64 := false
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		b64 = true
	default:
		s.badRequest(w, &rec, "encoding_format",
			fmt.Sprintf("encoding_format %q: want \"float\" or \"base64\"", req.EncodingFormat))
		return
	}
	tc := s.counterFor(req.Model)
	prompt := 0
	for _, x := range in {
		if x.tokens != nil {
			prompt += len(x.tokens)
			continue
		}
		k, err := tc.count(x.text)
		if err != nil {
			s.internalError(w, &rec, err)
			return
		}
		prompt += k
	}
	proceed, malformed := s.gate(w, r, &rec, n, prompt)
	if !proceed {
		return
	}
	if rec.Fault == FaultLength || rec.Fault == FaultContentFilter {
		rec.Fault = "" // faults of chat answers: a vector has no finish reason
	}
	vecs := make([][]float32, len(in))
	for i, x := range in {
		vecs[i] = embed(req.Model, x, dims)
	}
	u := embeddingUsage{PromptTokens: prompt, TotalTokens: prompt}
	var body []byte
	if b64 {
		resp := embeddingResponse[string]{Object: "list", Model: req.Model, Usage: u,
			Data: make([]embedding[string], len(vecs))}
		for i, v := range vecs {
			resp.Data[i] = embedding[string]{Object: "embedding", Index: i, Embedding: base64Floats(v)}
		}
		body, err = json.Marshal(resp)
	} else {
		resp := embeddingResponse[[]float32]{Object: "list", Model: req.Model, Usage: u,
			Data: make([]embedding[[]float32], len(vecs))}
		for i, v := range vecs {
			resp.Data[i] = embedding[[]float32]{Object: "embedding", Index: i, Embedding: v}
		}
		body, err = json.Marshal(resp)
	}
	if err != nil {
		s.internalError(w, &rec, fmt.Errorf("sim: encode embeddings: %w", err))
		return
	}
	if malformed {
		body = body[:len(body)/2]
	}
	rec.PromptTokens, rec.Status = prompt, http.StatusOK
	s.send(rec, func() error { return writeJSON(w, http.StatusOK, body) })
}

// Embedding is the simulator's vector of text from model with dims dimensions: what /v1/embeddings answers for
// it, whatever else the request carries.
func Embedding(model, text string, dims int) []float32 {
	return embed(model, embedInput{text: text}, dims)
}

// embed returns a deterministic unit vector of dims for the input from model: normal components drawn from a
// stream seeded with the hash of the model name and the input, normalised. It depends on nothing else (not the
// request's other inputs, nor the order they come in), so a batch packed another way gets the same vectors, and
// two models give different ones.
func embed(model string, x embedInput, dims int) []float32 {
	h := fnvString(fnvOffset, model)
	h = fnvString(h, "\x00"+x.text)
	for _, t := range x.tokens {
		h = fnvUint64(h, uint64(t))
	}
	r := rng{state: mix64(h)}
	next := r.uniform
	v := make([]float32, dims)
	var norm float64
	for i := 0; i < dims; i += 2 {
		// Box–Muller: two normal components from two uniforms.
		r := math.Sqrt(-2 * math.Log(next()))
		theta := 2 * math.Pi * next()
		a, b := r*math.Cos(theta), r*math.Sin(theta)
		v[i] = float32(a)
		norm += a * a
		if i+1 < dims {
			v[i+1] = float32(b)
			norm += b * b
		}
	}
	inv := 1 / math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// base64Floats encodes v as OpenAI does for encoding_format "base64": little-endian float32s.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.models)
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	body, err := json.Marshal(modelObject{ID: r.PathValue("model"), Object: "model", OwnedBy: "silico"})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	rec := s.newRecord(r)
	rec.Status = http.StatusNotFound
	s.send(rec, func() error {
		return writeError(w, rec.Status, "invalid_request_error", "unknown_url", "",
			fmt.Sprintf("Unknown request URL: %s %s.", r.Method, r.URL.Path))
	})
}
