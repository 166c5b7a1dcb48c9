package activities

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"go.temporal.io/sdk/log"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
)

// cacheStore is the response cache a pass uses: the results store's own.
type cacheStore interface {
	store.BatchWriter
	respcache.Getter
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

// cacheUse is how a pass uses the response cache: its policy and its owner name for claims. A nil *cacheUse is a
// pass without a cache.
type cacheUse struct {
	st     cacheStore
	policy experiment.CachePolicy
	model  string // the model name, as entries and tallies name it
	owner  string
}

func newCacheUse(st cacheStore, policy experiment.CachePolicy, m experiment.Model, run string, pass int) *cacheUse {
	if policy == experiment.CacheOff || st == nil {
		return nil
	}
	return &cacheUse{st: st, policy: policy, model: m.Name, owner: fmt.Sprintf("%s/%d", run, pass)}
}

func (cu *cacheUse) reads() bool  { return cu != nil && cu.policy.Reads() }
func (cu *cacheUse) writes() bool { return cu != nil && cu.policy.Writes() }

// claims says whether the pass claims what it calls: only a pass that both reads and writes shares its calls.
func (cu *cacheUse) claims() bool { return cu.reads() && cu.writes() }

// renew keeps the pass's claims alive until ctx ends.
func (cu *cacheUse) renew(ctx context.Context, clk interface{ Now() time.Time }, lg log.Logger) {
	tick(ctx, claimTTL/3, func() {
		if err := cu.st.CacheRenew(ctx, cu.owner, clk.Now().Add(claimTTL)); err != nil && ctx.Err() == nil {
			lg.Warn("response cache: renewing claims failed", "error", err)
		}
	})
}

// release drops the claims the pass still holds (cells it did not finish), so other runs need not wait for them
// to expire.
func (cu *cacheUse) release(ctx context.Context, lg log.Logger) {
	if !cu.claims() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cu.st.CacheRelease(rctx, cu.owner); err != nil {
		lg.Warn("response cache: releasing claims failed; they expire by themselves", "error", err, "ttl", claimTTL)
	}
}

// lookup is what the cache said of one prepared cell.
type lookup struct {
	prepared
	hit *respcache.Answer // served from the cache
	// taken says another run is calling the same request: wait for its answer.
	taken bool
	// stopped says the dispatch ended while the cell was being looked up.
	stopped bool
}

// window keeps the cells ahead of the dispatcher prepared and looked up in the response cache: it reads a batch
// of keys in one round trip, claims the misses (under read_write) so that no other run pays for them at the
// same time, and refills itself in the background whenever it runs low, so that the dispatcher does not wait for
// the store while it has cells to send.
type window struct {
	cu    *cacheUse
	prep  *preparer
	clock interface{ Now() time.Time }
	log   log.Logger
	// invalid counts entries that failed validation, in the pass's cache tallies.
	invalid func(n int)

	mu    sync.Mutex
	ahead map[int]lookup // cells looked up, not yet taken by the dispatcher
	// loading holds the cells of the background lookup under way, each mapped to the channel closed when it ends.
	loading map[int]chan struct{}
	fills   sync.WaitGroup
}

func newWindow(cu *cacheUse, prep *preparer, clk interface{ Now() time.Time }, lg log.Logger, invalid func(int)) *window {
	return &window{cu: cu, prep: prep, clock: clk, log: lg, invalid: invalid, ahead: map[int]lookup{},
		loading: map[int]chan struct{}{}}
}

// wait waits for the background lookups. Call it once the dispatch has ended.
func (w *window) wait() { w.fills.Wait() }

// take returns what the cache says of cell idx. It is called by the dispatcher alone, with next its next cells
// (the queue's peek). A cell looked up ahead is taken from the window; one being looked up is waited for; any
// other is looked up at once with the cells after it.
func (w *window) take(ctx context.Context, idx int, next []int) lookup {
	for {
		w.mu.Lock()
		if l, ok := w.ahead[idx]; ok {
			delete(w.ahead, idx)
			w.mu.Unlock()
			w.prefetch(ctx, next)
			return l
		}
		ch, busy := w.loading[idx]
		w.mu.Unlock()
		if !busy {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return lookup{stopped: true}
		}
		// The fill that held idx is done; idx is in the window now unless it was cut short.
		w.mu.Lock()
		_, ok := w.ahead[idx]
		w.mu.Unlock()
		if !ok {
			break
		}
	}
	cells := append([]int{idx}, w.unknown(next, lookAhead-1)...)
	batch := w.lookUp(ctx, cells)
	l := batch[idx]
	delete(batch, idx)
	w.mu.Lock()
	maps.Copy(w.ahead, batch)
	w.mu.Unlock()
	return l
}

// unknown returns up to n of cells that are neither in the window nor being looked up.
func (w *window) unknown(cells []int, n int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int
	for _, i := range cells {
		if len(out) == n {
			break
		}
		_, ahead := w.ahead[i]
		_, busy := w.loading[i]
		if !ahead && !busy {
			out = append(out, i)
		}
	}
	return out
}

// prefetch looks the next batch of cells up in the background when the window holds fewer than lookAhead cells
// and no lookup is under way. The pass waits for it (wait) before it ends.
func (w *window) prefetch(ctx context.Context, next []int) {
	w.mu.Lock()
	low := len(w.ahead) < lookAhead && len(w.loading) == 0
	w.mu.Unlock()
	if !low || ctx.Err() != nil {
		return
	}
	cells := w.unknown(next, lookAhead)
	if len(cells) == 0 {
		return
	}
	done := make(chan struct{})
	w.mu.Lock()
	for _, i := range cells {
		w.loading[i] = done
	}
	w.mu.Unlock()
	w.fills.Go(func() {
		batch := w.lookUp(ctx, cells)
		w.mu.Lock()
		if ctx.Err() == nil {
			maps.Copy(w.ahead, batch)
		}
		for _, i := range cells {
			delete(w.loading, i)
		}
		w.mu.Unlock()
		close(done)
	})
}

// lookUp prepares cells, reads their keys from the cache in one call, and claims the misses (under read_write).
// A store error makes the cells misses: they are called, as without a cache.
func (w *window) lookUp(ctx context.Context, cells []int) map[int]lookup {
	preps, stopped := w.prep.prepareAll(ctx, cells)
	batch := make(map[int]lookup, len(cells))
	keys := make([]store.CacheKey, 0, len(cells))
	for _, i := range cells {
		if stopped[i] {
			batch[i] = lookup{stopped: true}
			continue
		}
		p := preps[i]
		batch[i] = lookup{prepared: p}
		if p.err == nil {
			keys = append(keys, p.key)
		}
	}
	found, err := respcache.Lookup(ctx, w.cu.st, keys)
	if err != nil && ctx.Err() == nil {
		// A read error costs money, never an answer.
		w.log.Error("response cache lookup failed; the cells are sent to the provider", "model", w.cu.model, "error", err)
	}
	var invalid int
	var misses []store.CacheKey
	for i, l := range batch {
		if l.err != nil || l.stopped {
			continue
		}
		if a, ok := found.Answers[l.key]; ok {
			l.hit = &a
			batch[i] = l
			continue
		}
		if e, bad := found.Invalid[l.key]; bad {
			invalid++
			w.log.Warn("response cache entry failed validation; the cell is called again and the entry replaced",
				"model", w.cu.model, "key", l.key.String(), "error", e)
		}
		misses = append(misses, l.key)
	}
	if invalid > 0 {
		w.invalid(invalid)
	}
	if !w.cu.claims() || len(misses) == 0 {
		return batch
	}
	now := w.clock.Now()
	taken, err := w.cu.st.CacheClaim(ctx, w.cu.owner, misses, now, now.Add(claimTTL))
	if err != nil && ctx.Err() == nil {
		w.log.Error("response cache claim failed; the cells are sent without one", "model", w.cu.model, "error", err)
	}
	busy := make(map[store.CacheKey]bool, len(taken))
	for _, k := range taken {
		busy[k] = true
	}
	for i, l := range batch {
		if l.hit == nil && l.err == nil && !l.stopped && busy[l.key] {
			l.taken = true
			batch[i] = l
		}
	}
	return batch
}
