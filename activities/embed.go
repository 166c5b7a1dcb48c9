package activities

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// embedBatch is one embeddings request: distinct texts, each with the cells (the texts' positions in the pass)
// it answers. Texts repeated in the pass are sent once and their vector recorded for every cell.
type embedBatch struct {
	texts  []string
	cells  [][]int // cells[i] are the cells of texts[i], lowest first
	tokens []int   // tiktoken count of each text
	total  int
}

// key is the batch's name to the judge: its first cell.
func (b *embedBatch) key() int { return b.cells[0][0] }

// cellID names the batch in the X-Silico-Cell header: its cells' indexes, comma-separated, so a server's log
// tells which texts each request carried.
func (b *embedBatch) cellID() string {
	var sb strings.Builder
	for i, cs := range b.cells {
		for j, c := range cs {
			if i+j > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(c))
		}
	}
	return sb.String()
}

// embedState is what an embed pass knows beyond a chat pass's state.
type embedState struct {
	texts []experiment.EmbedText
	keys  map[string]store.CacheKey // by text
	// dims is the length of the model's vectors: embed.dimensions, else the length the cache or the first
	// answer showed. Zero until known; guarded by mu once requests are out.
	mu   sync.Mutex
	dims int
	// left counts the requests not finished yet: the breaker's pool for this pass.
	left atomic.Int64
}

// dispatchEmbed embeds the unfinished texts of the pass: cached vectors are served, the rest are packed into
// requests of at most embed.max_inputs_per_request texts and embed.max_tokens_per_request tokens (each distinct
// text once), and each request goes through the limiter's gates like a chat call (1 request, its tokens) and is
// tried again as health decides. Each request's vectors are written as it lands. The pass claims nothing in the
// cache: a text is cheap to embed twice, and a claim per text would cost more than the calls it saves.
func (p *pass) dispatchEmbed(dctx, runCtx context.Context) {
	es := &embedState{dims: p.spec.Embed.Dimensions, keys: map[string]store.CacheKey{}}
	texts, err := p.spec.EmbedTexts()
	if err != nil {
		for _, idx := range p.pending(p.in.Pass.Start, p.in.Pass.End) {
			p.rec.record(store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: string(errclass.InvalidRequest),
				ErrorMessage: err.Error()}, nil)
		}
		return
	}
	es.texts = texts
	pending := p.pending(p.in.Pass.Start, p.in.Pass.End)
	if p.cu != nil {
		for _, idx := range pending {
			t := p.textOf(es, idx)
			if _, ok := es.keys[t]; !ok {
				es.keys[t] = respcache.VectorKey(p.prep.endpoint, p.model.Name, t, p.spec.Embed.Dimensions)
			}
		}
	}
	if p.cu.reads() {
		pending = p.serveVectors(dctx, es, pending)
	}
	batches := p.pack(es, pending)
	es.left.Store(int64(len(batches)))
	ids := make([]int, len(batches))
	for i := range ids {
		ids[i] = i
	}
	q := newCellQueue(p.clock, ids)
	for {
		bi, ok := q.next(dctx)
		if !ok {
			return
		}
		b := batches[bi]
		if !p.unheld(q, bi, b.key(), func(e *llm.Error, t wire.Tries) {
			for _, cs := range b.cells {
				for _, idx := range cs {
					p.rec.record(failedRecord(idx, e, t), nil)
				}
			}
			es.left.Add(-1)
		}) {
			continue
		}
		var cost usage.USD
		if p.budget != nil && p.rec.priced {
			cost = llm.Cost(p.rec.price, b.total, 0)
		}
		tokens := 0
		if p.in.Limits.TPM > 0 {
			tokens = b.total
		}
		adm, ok := p.admit.admit(dctx, cost, tokens)
		if !ok {
			q.done()
			return
		}
		p.calls.Go(func() {
			again, at := p.embedCall(runCtx, es, b, adm)
			if !again {
				es.left.Add(-1)
			}
			p.requeue(q, bi, b.key(), again, at)
		})
	}
}

// textOf is the text of cell idx of the pass.
func (p *pass) textOf(es *embedState, idx int) string {
	_, t := p.spec.EmbedCell(idx)
	return es.texts[t].Text
}

// vectorLookup is how many keys one cache read asks for.
const vectorLookup = 512

// serveVectors records the cells whose vectors the cache holds and returns the others. An entry that fails
// validation (checksum, key, version, not finite, or another length than the model's vectors) is a miss, and is
// replaced when the fresh vector is written.
func (p *pass) serveVectors(ctx context.Context, es *embedState, pending []int) []int {
	keys := make([]store.CacheKey, 0, len(es.keys))
	seen := map[store.CacheKey]bool{}
	for _, idx := range pending {
		k := es.keys[p.textOf(es, idx)]
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	vs, err := lookupVectors(ctx, p.cu.st, keys, es.dims)
	if err != nil {
		p.log.Warn("response cache: lookup failed; the texts are embedded again", "error", err)
		return pending
	}
	es.dims = vs.dims
	for _, err := range vs.invalid {
		p.log.Warn("response cache: invalid vector entry, embedded again", "error", err)
	}
	var rest []int
	now := p.clock.Now()
	for _, idx := range pending {
		k := es.keys[p.textOf(es, idx)]
		v, ok := vs.found[k]
		if !ok {
			if vs.invalid[k] != nil {
				p.rec.invalid(1)
			}
			rest = append(rest, idx)
			continue
		}
		p.judge.served(idx, now)
		p.rec.record(cachedVectorRecord(idx, v, p.rec.price, p.rec.priced), nil)
	}
	return rest
}

// cachedVectors are the vectors a cache lookup found, by key; the entries that failed validation, with why; and
// the length the vectors were held to.
type cachedVectors struct {
	found   map[store.CacheKey]respcache.Vector
	invalid map[store.CacheKey]error
	dims    int
}

// lookupVectors reads the entries of keys, vectorLookup keys a read, and validates them (respcache.ReadVector) against
// the length dims, or when dims is 0 the length most of them have.
func lookupVectors(ctx context.Context, g respcache.Getter, keys []store.CacheKey, dims int) (cachedVectors, error) {
	var entries []store.CacheEntry
	for i := 0; i < len(keys); i += vectorLookup {
		got, err := g.CacheGet(ctx, keys[i:min(len(keys), i+vectorLookup)])
		if err != nil {
			return cachedVectors{}, fmt.Errorf("read vectors: %w", err)
		}
		entries = append(entries, got...)
	}
	if dims == 0 {
		dims = commonLength(entries)
	}
	out := cachedVectors{found: map[store.CacheKey]respcache.Vector{}, invalid: map[store.CacheKey]error{}, dims: dims}
	for _, e := range entries {
		v, err := respcache.ReadVector(e, e.Key, dims)
		if err != nil {
			out.invalid[e.Key] = err
			continue
		}
		out.found[e.Key] = v
	}
	return out, nil
}

// cachedVectorRecord is the record of cell idx served vector v from the cache, its cost (saved, not spent) at
// price when priced.
func cachedVectorRecord(idx int, v respcache.Vector, price experiment.Price, priced bool) store.Record {
	rec := store.Record{Index: idx, Status: store.StatusOK, Raw: results.EncodeVector(v.Values),
		PromptTokens: v.PromptTokens, Cached: true}
	if priced {
		rec.CostUSD = llm.Cost(price, v.PromptTokens, 0)
	}
	return rec
}

// commonLength is the most frequent vector length among cache entries (decoded without validation): the
// model's length when the spec does not set dimensions, so that an entry of another length is invalid.
func commonLength(entries []store.CacheEntry) int {
	counts := map[int]int{}
	best, bestN := 0, 0
	for _, e := range entries {
		v, err := respcache.ReadVector(e, e.Key, 0)
		if err != nil {
			continue
		}
		n := len(v.Values)
		counts[n]++
		if counts[n] > bestN || (counts[n] == bestN && n < best) {
			best, bestN = n, counts[n]
		}
	}
	return best
}

// pack groups the pending cells into requests in submission order (packTexts). A text longer than the token
// limit on its own is recorded failed (errclass.TextTooLong) and never sent.
func (p *pass) pack(es *embedState, pending []int) []*embedBatch {
	out, long := packTexts(p.spec, es.texts, pending, tokenCounter(p.a.Tokenizer, p.model.Name))
	for _, b := range long {
		for _, idx := range b.cells[0] {
			p.judge.finished(nil, idx, p.clock.Now(), false)
			p.rec.record(textTooLong(p.spec, idx, b.tokens[0]), nil)
		}
	}
	return out
}

// packTexts groups cells (of one model of an embed spec whose texts are texts) by text, in the order of their
// first cells, counts each distinct text once with count, and packs them in that order (experiment.PackTexts): a
// request takes at most max_inputs_per_request texts and max_tokens_per_request tokens. The packing is a function
// of the cells alone, and packing a run of whole requests again gives the same requests. A text longer than the
// token limit fits in no request: it comes back in tooLong, one text per element, with its cells.
func packTexts(spec *experiment.Spec, texts []experiment.EmbedText, cells []int, count func(string) int) (reqs, tooLong []*embedBatch) {
	var order []string
	var tokens []int
	byText := map[string][]int{}
	for _, idx := range cells {
		_, ti := spec.EmbedCell(idx)
		t := texts[ti].Text
		if _, ok := byText[t]; !ok {
			order = append(order, t)
			tokens = append(tokens, count(t))
		}
		byText[t] = append(byText[t], idx)
	}
	groups, long := experiment.PackTexts(tokens, spec.Embed.MaxInputsPerRequest, spec.Embed.MaxTokensPerRequest)
	for _, i := range long {
		tooLong = append(tooLong, &embedBatch{texts: []string{order[i]}, cells: [][]int{byText[order[i]]},
			tokens: []int{tokens[i]}, total: tokens[i]})
	}
	reqs = make([]*embedBatch, len(groups))
	for bi, g := range groups {
		b := &embedBatch{}
		for _, i := range g {
			b.texts = append(b.texts, order[i])
			b.cells = append(b.cells, byText[order[i]])
			b.tokens = append(b.tokens, tokens[i])
			b.total += tokens[i]
		}
		reqs[bi] = b
	}
	return reqs, tooLong
}

// textTooLong is the record of cell idx, whose text of the given tokens fits in no request.
func textTooLong(spec *experiment.Spec, idx, tokens int) store.Record {
	maxTok := spec.Embed.MaxTokensPerRequest
	msg := fmt.Sprintf("text has %d tokens, more than embed.max_tokens_per_request (%d): it fits in no request; "+
		"shorten the text or raise max_tokens_per_request (at most what the model accepts)", tokens, maxTok)
	return store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: errclass.TextTooLong, ErrorCode: "text_too_long",
		ErrorMessage: msg}
}

// tokenCounter counts a text's tokens for model with tok (tiktoken), or estimates them from its length without a
// tokenizer.
func tokenCounter(tok *llm.Tokenizer, model string) func(string) int {
	if tok == nil {
		return func(t string) int { return max(1, len(t)/4) }
	}
	return func(t string) int { return tok.Count(model, t) }
}

// embedCall sends one batch and records its vectors, each with its cache entry. It reports whether the batch
// must be sent again, and from when.
func (p *pass) embedCall(ctx context.Context, es *embedState, b *embedBatch, adm admission) (again bool, at time.Time) {
	if !p.brk.Current(adm.ticket) {
		p.admit.abandon(adm) // the breaker opened while the batch waited for the limiter
		return true, p.clock.Now()
	}
	p.tally.called()
	resp, r := p.call.embed(ctx, llm.EmbedRequest{Model: p.model.Name, Input: b.texts,
		Dimensions: p.spec.Embed.Dimensions, CellID: b.cellID()}, es.check)
	used := b.total
	defer func() { adm.permit.Release(used) }()
	if r.err != nil {
		used = p.settleFailed(adm, r.err)
		if used == 0 {
			used = b.total // a refused embeddings request is charged as sent, as before
		}
		return p.failed(adm.ticket, b.key(), r, int(es.left.Load()), func(tries wire.Tries) {
			p.log.Warn("embeddings request failed", "model", p.model.ID, "texts", len(b.texts),
				"class", string(r.err.Class), "error", r.err.Message)
			for _, cs := range b.cells {
				for _, idx := range cs {
					p.rec.record(failedRecord(idx, r.err, tries), nil)
				}
			}
		})
	}
	if resp.PromptTokens > 0 {
		used = resp.PromptTokens
	}
	p.answered(resp.RateLimit)
	p.budget.settle(adm.reserved, 0)
	t := p.judge.answer(adm.ticket, b.key(), r.at)
	embedAnswered(b, resp, p.rec.price, p.rec.priced, func(i int, rec store.Record, keep *respcache.Vector) {
		rec.LatencyMS, rec.Attempts, rec.Tries = float64(r.latency.Microseconds())/1000, t.Sent, t.Transient
		if keep != nil && p.cu.writes() {
			e := respcache.VectorEntry(es.keys[b.texts[i]], p.model.Name, p.in.RunID, *keep, r.at)
			p.rec.record(rec, &e)
			return
		}
		p.rec.record(rec, nil)
	})
	return false, time.Time{}
}

// embedAnswered builds the records of the cells of request b answered with resp (one vector per text, in order)
// and hands each to fn with the index of its text and, for the first cell of each text, the vector to keep in
// the response cache under the text's key (nil for the others: a repeated text was sent and paid for once). Each
// text gets its share of the request's prompt tokens by its own count; its cost is taken at price when priced.
// The synchronous and the batch pass both record an answer through it.
func embedAnswered(b *embedBatch, resp llm.EmbedResponse, price experiment.Price, priced bool,
	fn func(text int, rec store.Record, keep *respcache.Vector)) {
	for i, cs := range b.cells {
		tokens := b.tokens[i]
		if resp.PromptTokens > 0 && b.total > 0 {
			// The provider counts the request; each text gets its share by its own count.
			tokens = int(math.Round(float64(resp.PromptTokens) * float64(b.tokens[i]) / float64(b.total)))
		}
		raw := results.EncodeVector(resp.Vectors[i])
		for j, idx := range cs {
			rec := store.Record{Index: idx, Status: store.StatusOK, Raw: raw}
			if j > 0 {
				fn(i, rec, nil)
				continue
			}
			rec.PromptTokens = tokens
			if priced {
				rec.CostUSD = llm.Cost(price, tokens, 0)
			}
			fn(i, rec, &respcache.Vector{Values: resp.Vectors[i], PromptTokens: tokens})
		}
	}
}

// check validates a batch's vectors: every one finite and of the model's length. The first answer fixes the
// length when the cache did not. A bad vector makes the whole answer malformed (ClassTransport): it is retried.
func (es *embedState) check(vecs [][]float32) error {
	es.mu.Lock()
	defer es.mu.Unlock()
	want := es.dims
	if want == 0 && len(vecs) > 0 && len(vecs[0]) > 0 {
		want = len(vecs[0])
		defer func() {
			if es.dims == 0 {
				es.dims = want
			}
		}()
	}
	for i, v := range vecs {
		if len(v) == 0 || len(v) != want {
			return &llm.Error{Class: errclass.Transport, Code: "malformed_body",
				Message: fmt.Sprintf("embedding %d has %d dimensions, want %d", i, len(v), want)}
		}
		for j, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return &llm.Error{Class: errclass.Transport, Code: "malformed_body",
					Message: fmt.Sprintf("embedding %d: component %d is not finite", i, j)}
			}
		}
	}
	return nil
}
