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

	"github.com/silicolab/silico/cache"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/store"
)

// ClassTextTooLong marks a text of an embed spec with more tokens than embed.max_tokens_per_request: no request
// may carry it, so it is never sent.
const ClassTextTooLong = "TextTooLong"

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
			p.rec.record(store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: string(llm.ClassInvalidRequest),
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
				es.keys[t] = cache.VectorKey(p.prep.endpoint, p.model.Name, t, p.spec.Embed.Dimensions)
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
		cost := 0.0
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
			if again, at := p.embedCall(runCtx, es, b, adm); again {
				q.retry(bi, at)
			} else {
				es.left.Add(-1)
				q.done()
			}
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
	var entries []store.CacheEntry
	for i := 0; i < len(keys); i += vectorLookup {
		got, err := p.cu.st.CacheGet(ctx, keys[i:min(len(keys), i+vectorLookup)])
		if err != nil {
			p.log.Warn("response cache: lookup failed; the texts are embedded again", "error", err)
			return pending
		}
		entries = append(entries, got...)
	}
	if es.dims == 0 {
		es.dims = commonLength(entries)
	}
	found := map[store.CacheKey]cache.Vector{}
	invalid := map[store.CacheKey]bool{}
	for _, e := range entries {
		v, err := cache.ReadVector(e, e.Key, es.dims)
		if err != nil {
			invalid[e.Key] = true
			p.log.Warn("response cache: invalid vector entry, embedded again", "error", err)
			continue
		}
		found[e.Key] = v
	}
	var rest []int
	now := p.clock.Now()
	for _, idx := range pending {
		k := es.keys[p.textOf(es, idx)]
		v, ok := found[k]
		if !ok {
			if invalid[k] {
				p.rec.invalid(1)
			}
			rest = append(rest, idx)
			continue
		}
		rec := store.Record{Index: idx, Status: store.StatusOK, Raw: results.EncodeVector(v.Values),
			PromptTokens: v.PromptTokens, Cached: true}
		if p.rec.priced {
			rec.CostUSD = llm.Cost(p.rec.price, v.PromptTokens, 0)
		}
		p.judge.served(idx, now)
		p.rec.record(rec, nil)
	}
	return rest
}

// commonLength is the most frequent vector length among cache entries (decoded without validation): the
// model's length when the spec does not set dimensions, so that an entry of another length is invalid.
func commonLength(entries []store.CacheEntry) int {
	counts := map[int]int{}
	best, bestN := 0, 0
	for _, e := range entries {
		v, err := cache.ReadVector(e, e.Key, 0)
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

// pack groups the pending cells into requests in submission order (experiment.PackTexts): each distinct text
// once, at most max_inputs_per_request texts and max_tokens_per_request tokens per request. A text longer than
// the token limit on its own is recorded failed (ClassTextTooLong) and never sent.
func (p *pass) pack(es *embedState, pending []int) []*embedBatch {
	var order []string
	var tokens []int
	cells := map[string][]int{}
	for _, idx := range pending {
		t := p.textOf(es, idx)
		if _, ok := cells[t]; !ok {
			order = append(order, t)
			tokens = append(tokens, p.countTokens(t))
		}
		cells[t] = append(cells[t], idx)
	}
	maxTok := p.spec.Embed.MaxTokensPerRequest
	groups, tooLong := experiment.PackTexts(tokens, p.spec.Embed.MaxInputsPerRequest, maxTok)
	for _, i := range tooLong {
		msg := fmt.Sprintf("text has %d tokens, more than embed.max_tokens_per_request (%d): it fits in no request; "+
			"shorten the text or raise max_tokens_per_request (at most what the model accepts)", tokens[i], maxTok)
		for _, idx := range cells[order[i]] {
			p.judge.finished(nil, idx, p.clock.Now(), false)
			p.rec.record(store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: ClassTextTooLong,
				ErrorCode: "text_too_long", ErrorMessage: msg}, nil)
		}
	}
	out := make([]*embedBatch, len(groups))
	for bi, g := range groups {
		b := &embedBatch{}
		for _, i := range g {
			b.texts = append(b.texts, order[i])
			b.cells = append(b.cells, cells[order[i]])
			b.tokens = append(b.tokens, tokens[i])
			b.total += tokens[i]
		}
		out[bi] = b
	}
	return out
}

// countTokens is a text's tiktoken count for the model (a character estimate without a tokenizer).
func (p *pass) countTokens(t string) int {
	if p.a.Tokenizer == nil {
		return max(1, len(t)/4)
	}
	return p.a.Tokenizer.Count(p.model.Name, t)
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
		return p.failed(adm.ticket, b.key(), r, int(es.left.Load()), func(tries Tries) {
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
	attempts := p.judge.answer(adm.ticket, b.key(), r.at)
	for i, cs := range b.cells {
		tokens := b.tokens[i]
		if resp.PromptTokens > 0 && b.total > 0 {
			// The provider counts the request; each text gets its share by its own count.
			tokens = int(math.Round(float64(resp.PromptTokens) * float64(b.tokens[i]) / float64(b.total)))
		}
		raw := results.EncodeVector(resp.Vectors[i])
		for j, idx := range cs {
			rec := store.Record{Index: idx, Status: store.StatusOK, Raw: raw,
				LatencyMS: float64(r.latency.Microseconds()) / 1000, Attempts: attempts}
			if j == 0 { // a repeated text was sent and paid for once
				rec.PromptTokens = tokens
				if p.rec.priced {
					rec.CostUSD = llm.Cost(p.rec.price, tokens, 0)
				}
			}
			if j == 0 && p.cu.writes() {
				e := cache.VectorEntry(es.keys[b.texts[i]], p.model.Name, p.in.RunID,
					cache.Vector{Values: resp.Vectors[i], PromptTokens: tokens}, r.at)
				p.rec.record(rec, &e)
				continue
			}
			p.rec.record(rec, nil)
		}
	}
	return false, time.Time{}
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
			return &llm.Error{Class: llm.ClassTransport, Code: "malformed_body",
				Message: fmt.Sprintf("embedding %d has %d dimensions, want %d", i, len(v), want)}
		}
		for j, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return &llm.Error{Class: llm.ClassTransport, Code: "malformed_body",
					Message: fmt.Sprintf("embedding %d: component %d is not finite", i, j)}
			}
		}
	}
	return nil
}
