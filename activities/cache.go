package activities

import (
	"context"
	"fmt"
	"maps"
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
	// lookAhead is how many cells the dispatcher looks up (and claims) in one round trip to the store, and how
	// many it keeps looked up ahead. A batch makes a rerun served from the cache fast; a small one keeps the
	// claims of cells not yet sent few.
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
	// loading holds the cells of the background lookup under way, each mapped to the channel closed when it ends.
	loading map[int]chan struct{}
	fills   sync.WaitGroup
}

// lookup is what the cache said of one cell.
type lookup struct {
	msgs []experiment.Message
	key  store.CacheKey
	err  error         // the prompt could not be rendered, or a picture fetched (imageError)
	pics pictures      // the pictures of msgs
	hit  *cache.Answer // served from the cache
	// taken says another run is calling the same request: wait for its answer.
	taken bool
	// stopped says the dispatch ended while the cell was being looked up.
	stopped bool
}

func newPassCache(st cacheStore, policy experiment.CachePolicy, m experiment.Model, run string, pass int, lg log.Logger) *passCache {
	if policy == experiment.CacheOff || st == nil {
		return nil
	}
	return &passCache{st: st, policy: policy, endpoint: cache.Endpoint(m), model: m.Name, run: run,
		owner: fmt.Sprintf("%s/%d", run, pass), log: lg, ahead: map[int]lookup{}, loading: map[int]chan struct{}{}}
}

func (pc *passCache) reads() bool  { return pc != nil && pc.policy.Reads() }
func (pc *passCache) writes() bool { return pc != nil && pc.policy.Writes() }

// claims says whether the pass claims what it calls: only a pass that both reads and writes shares its calls.
func (pc *passCache) claims() bool { return pc.reads() && pc.writes() }

// wait waits for the background lookups. Call it once the dispatch has ended.
func (pc *passCache) wait() {
	if pc != nil {
		pc.fills.Wait()
	}
}

// key is the cache key of req.
func (pc *passCache) key(req llm.Request) store.CacheKey { return cache.Key(pc.endpoint, req) }

// take returns what the cache says of cell idx. It is called by the dispatcher alone, with next its next cells
// (q.peek). A cell looked up ahead is taken from the window; one being looked up is waited for; any other is
// looked up at once with the cells after it. Whenever the window runs low, the next cells are looked up (and
// claimed) in the background, so that the dispatcher does not wait for the store while it has cells to send.
func (p *passRun) take(ctx context.Context, idx int, next []int) lookup {
	pc := p.cache
	for {
		pc.mu.Lock()
		if l, ok := pc.ahead[idx]; ok {
			delete(pc.ahead, idx)
			pc.mu.Unlock()
			p.prefetch(ctx, next)
			return l
		}
		ch, busy := pc.loading[idx]
		pc.mu.Unlock()
		if !busy {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return lookup{stopped: true}
		}
		// The fill that held idx is done; idx is in the window now unless it was cut short.
		pc.mu.Lock()
		_, ok := pc.ahead[idx]
		pc.mu.Unlock()
		if !ok {
			break
		}
	}
	cells := append([]int{idx}, pc.unknown(next, lookAhead-1)...)
	batch := p.lookUp(ctx, cells)
	l := batch[idx]
	delete(batch, idx)
	pc.mu.Lock()
	maps.Copy(pc.ahead, batch)
	pc.mu.Unlock()
	return l
}

// unknown returns up to n of cells that are neither in the window nor being looked up.
func (pc *passCache) unknown(cells []int, n int) []int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var out []int
	for _, i := range cells {
		if len(out) == n {
			break
		}
		_, ahead := pc.ahead[i]
		_, busy := pc.loading[i]
		if !ahead && !busy {
			out = append(out, i)
		}
	}
	return out
}

// prefetch looks the next batch of cells up in the background when the window holds fewer than lookAhead cells
// and no lookup is under way. The pass waits for it (cache.fills) before it ends.
func (p *passRun) prefetch(ctx context.Context, next []int) {
	pc := p.cache
	pc.mu.Lock()
	low := len(pc.ahead) < lookAhead && len(pc.loading) == 0
	pc.mu.Unlock()
	if !low || ctx.Err() != nil {
		return
	}
	cells := pc.unknown(next, lookAhead)
	if len(cells) == 0 {
		return
	}
	done := make(chan struct{})
	pc.mu.Lock()
	for _, i := range cells {
		pc.loading[i] = done
	}
	pc.mu.Unlock()
	pc.fills.Go(func() {
		batch := p.lookUp(ctx, cells)
		pc.mu.Lock()
		if ctx.Err() == nil {
			maps.Copy(pc.ahead, batch)
		}
		for _, i := range cells {
			delete(pc.loading, i)
		}
		pc.mu.Unlock()
		close(done)
	})
}

// lookUp renders cells, computes their keys, reads them from the cache in one call, and claims the misses (under
// read_write). A store error makes the cells misses: they are called, as without a cache.
func (p *passRun) lookUp(ctx context.Context, cells []int) map[int]lookup {
	pc := p.cache
	batch := make(map[int]lookup, len(cells))
	keys := make([]store.CacheKey, 0, len(cells))
	rendered := make(map[int][]experiment.Message, len(cells))
	for _, i := range cells {
		c := p.spec.Cell(i)
		msgs, err := p.spec.Render(c, p.memory.of(c.Persona))
		if err != nil {
			batch[i] = lookup{err: err}
			continue
		}
		rendered[i] = msgs
	}
	// A picture's digest is part of the key: the window's pictures are fetched side by side first.
	pics, errs := p.images.resolveAll(ctx, rendered)
	for _, i := range cells {
		msgs, ok := rendered[i]
		if !ok {
			continue
		}
		if err := errs[i]; err != nil {
			if ctx.Err() != nil {
				batch[i] = lookup{stopped: true}
			} else {
				batch[i] = lookup{err: imageError{err}}
			}
			continue
		}
		k := pc.key(p.request(p.spec.Cell(i), msgs, pics[i]))
		batch[i] = lookup{msgs: msgs, key: k, pics: pics[i]}
		keys = append(keys, k)
	}
	found, err := cache.Lookup(ctx, pc.st, keys)
	if err != nil && ctx.Err() == nil {
		// A read error costs money, never an answer.
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
	if !pc.claims() || len(misses) == 0 {
		return batch
	}
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
	return batch
}

// request is the call of cell c with msgs.
func (p *passRun) request(c experiment.Cell, msgs []experiment.Message, pics pictures) llm.Request {
	r := llm.Request{
		Model:    p.model.Name,
		Messages: msgs,
		Seed:     p.spec.Seeds[c.Seed],
		Params:   p.model.Params,
		CellID:   p.spec.CellID(c),
	}
	if len(pics.sha) > 0 {
		r.ImageSHA256, r.ImageDetail = pics.sha, p.spec.Image.Detail
	}
	return r
}

// serve records cell c answered from the cache. Its cost is what the call would have cost: the run counts it as
// saved, not spent.
func (p *passRun) serve(c experiment.Cell, msgs []experiment.Message, a cache.Answer, pics pictures) {
	rec := p.answerRecord(c, a)
	rec.Cached = true
	pics.stamp(&rec)
	p.health.served(c.Index, p.clock.Now())
	p.obs.Used(p.model.Name, rec.Usage())
	p.memory.add(c.Persona, experiment.Turn{User: msgs[len(msgs)-1].Content, Assistant: a.Text})
	p.record(rec, nil)
}

// renewClaims keeps the pass's claims alive until ctx ends.
func (p *passRun) renewClaims(ctx context.Context) {
	tick(ctx, claimTTL/3, func() {
		if err := p.cache.st.CacheRenew(ctx, p.cache.owner, p.clock.Now().Add(claimTTL)); err != nil && ctx.Err() == nil {
			p.log.Warn("response cache: renewing claims failed", "error", err)
		}
	})
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
