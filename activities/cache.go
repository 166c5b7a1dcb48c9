package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/log"

	"github.com/silicolab/silico/cache"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
)

// cacheStore is the response cache a pass uses: the results store's own.
type cacheStore interface {
	store.BatchWriter
	cache.Getter
	CacheClaim(ctx context.Context, owner string, keys []store.CacheKey, now, until time.Time) ([]store.CacheKey, error)
	CacheRenew(ctx context.Context, owner string, until time.Time) error
	CacheRelease(ctx context.Context, owner string) error
}

const (
	// lookAhead is how many cells the dispatcher looks up (and claims) in one round trip to the store. A batch
	// makes a rerun served from the cache fast; a small one keeps the claims of cells not yet sent few.
	lookAhead = 256
	// claimTTL is how long a claim lasts unless renewed; a live pass renews its claims every claimTTL/3, so only
	// a dead worker's claims ever expire, and other runs wait at most this long for them.
	claimTTL = 60 * time.Second
	// claimPoll is how long a cell whose request another run is calling waits before it looks again.
	claimPoll = 500 * time.Millisecond
)

// passCache is one pass attempt's use of the response cache: it looks cells up ahead of the dispatcher, claims
// the requests it is about to send so that no other run pays for them at the same time, and turns answers into
// entries. Under policy write it only writes; under read it neither claims nor writes.
type passCache struct {
	st       cacheStore
	policy   experiment.CachePolicy
	endpoint string
	model    string // the model name, as entries and tallies name it
	run      string
	owner    string
	log      log.Logger

	mu    sync.Mutex
	ahead map[int]lookup // cells looked up, not yet taken by the dispatcher
}

// lookup is what the cache said of one cell.
type lookup struct {
	msgs []experiment.Message
	key  store.CacheKey
	err  error         // the prompt could not be rendered
	hit  *cache.Answer // served from the cache
	// taken says another run is calling the same request: wait for its answer.
	taken bool
}

func newPassCache(st cacheStore, policy experiment.CachePolicy, m experiment.Model, run string, pass int, lg log.Logger) *passCache {
	if policy == experiment.CacheOff || st == nil {
		return nil
	}
	return &passCache{st: st, policy: policy, endpoint: cache.Endpoint(m), model: m.Name, run: run,
		owner: fmt.Sprintf("%s/%d", run, pass), log: lg, ahead: map[int]lookup{}}
}

func (pc *passCache) reads() bool  { return pc != nil && pc.policy.Reads() }
func (pc *passCache) writes() bool { return pc != nil && pc.policy.Writes() }

// claims says whether the pass claims what it calls: only a pass that both reads and writes shares its calls.
func (pc *passCache) claims() bool { return pc.reads() && pc.writes() }

// key is the cache key of req.
func (pc *passCache) key(req llm.Request) store.CacheKey { return cache.Key(pc.endpoint, req) }

// take returns what the cache says of cell idx, looking it up together with those of the cells next (the
// dispatcher's next ones) that were not looked up yet, when it was not looked up itself. It is called by the
// dispatcher alone.
func (p *passRun) take(ctx context.Context, idx int, next []int) lookup {
	pc := p.cache
	pc.mu.Lock()
	l, ok := pc.ahead[idx]
	delete(pc.ahead, idx)
	pc.mu.Unlock()
	if ok {
		return l
	}
	batch := map[int]lookup{}
	keys := make([]store.CacheKey, 0, len(next)+1)
	cells := []int{idx}
	pc.mu.Lock()
	for _, i := range next {
		if _, ok := pc.ahead[i]; !ok {
			cells = append(cells, i)
		}
	}
	pc.mu.Unlock()
	for _, i := range cells {
		c := p.spec.Cell(i)
		msgs, err := p.spec.Render(c, p.memory.of(c.Persona))
		if err != nil {
			batch[i] = lookup{err: err}
			continue
		}
		k := pc.key(p.request(c, msgs))
		batch[i] = lookup{msgs: msgs, key: k}
		keys = append(keys, k)
	}
	found, err := cache.Lookup(ctx, pc.st, keys)
	if err != nil && ctx.Err() == nil {
		// The cell is called, as without a cache: a read error costs money, never an answer.
		pc.log.Error("response cache lookup failed; the cells are sent to the provider", "model", pc.model, "error", err)
	}
	var invalid int
	var misses []store.CacheKey
	for i, l := range batch {
		if l.err != nil {
			continue
		}
		if a, ok := found.Answers[l.key]; ok {
			l.hit = &a
			batch[i] = l
			continue
		}
		if e, bad := found.Invalid[l.key]; bad {
			invalid++
			pc.log.Warn("response cache entry failed validation; the cell is called again and the entry replaced",
				"model", pc.model, "key", l.key.String(), "error", e)
		}
		misses = append(misses, l.key)
	}
	if invalid > 0 {
		p.writer.Tally(pc.model, store.CacheTally{Invalid: invalid})
	}
	if pc.claims() && len(misses) > 0 {
		now := p.clock.Now()
		taken, err := pc.st.CacheClaim(ctx, pc.owner, misses, now, now.Add(claimTTL))
		if err != nil && ctx.Err() == nil {
			pc.log.Error("response cache claim failed; the cells are sent without one", "model", pc.model, "error", err)
		}
		busy := make(map[store.CacheKey]bool, len(taken))
		for _, k := range taken {
			busy[k] = true
		}
		for i, l := range batch {
			if l.hit == nil && busy[l.key] {
				l.taken = true
				batch[i] = l
			}
		}
	}
	l = batch[idx]
	delete(batch, idx)
	pc.mu.Lock()
	for i, v := range batch {
		pc.ahead[i] = v
	}
	pc.mu.Unlock()
	return l
}

// request is the call of cell c with msgs.
func (p *passRun) request(c experiment.Cell, msgs []experiment.Message) llm.Request {
	return llm.Request{
		Model:    p.model.Name,
		Messages: msgs,
		Seed:     p.spec.Seeds[c.Seed],
		Params:   p.model.Params,
		CellID:   p.spec.CellID(c),
	}
}

// serve records cell c answered from the cache. Its cost is what the call would have cost: the run counts it as
// saved, not spent.
func (p *passRun) serve(c experiment.Cell, msgs []experiment.Message, a cache.Answer) {
	m := experiment.Match(a.Text, p.spec.OptionsFor(c.Item))
	rec := store.Record{
		Index:            c.Index,
		Status:           m.Status,
		OptionID:         m.OptionID,
		Raw:              a.Text,
		Candidates:       joinCandidates(m.Candidates),
		PromptTokens:     a.PromptTokens,
		CompletionTokens: a.CompletionTokens,
		Cached:           true,
	}
	if p.priced {
		rec.CostUSD = llm.Cost(p.price, a.PromptTokens, a.CompletionTokens)
	}
	p.health.served(c.Index, p.clock.Now())
	p.memory.add(c.Persona, experiment.Turn{User: msgs[len(msgs)-1].Content, Assistant: a.Text})
	p.record(rec, nil)
}

// renewClaims keeps the pass's claims alive until ctx ends.
func (p *passRun) renewClaims(ctx context.Context) {
	t := time.NewTicker(claimTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := p.cache.st.CacheRenew(ctx, p.cache.owner, p.clock.Now().Add(claimTTL)); err != nil && ctx.Err() == nil {
				p.log.Warn("response cache: renewing claims failed", "error", err)
			}
		}
	}
}

// releaseClaims drops the claims the pass still holds (cells it did not finish), so other runs need not wait for
// them to expire.
func (p *passRun) releaseClaims(ctx context.Context) {
	if !p.cache.claims() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.cache.st.CacheRelease(rctx, p.cache.owner); err != nil {
		p.log.Warn("response cache: releasing claims failed; they expire by themselves", "error", err, "ttl", claimTTL)
	}
}
