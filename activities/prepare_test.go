package activities

import (
	"context"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
)

// One preparation serves the cache and the call: the request carries the cell's messages, seed, parameters and
// id, and its key is the cache's key of that very request; without a cache no key is computed. In cumulative
// mode the persona's history is in the messages, and so in the key.
func TestPrepareBuildsTheRequestAndItsKeyOnce(t *testing.T) {
	spec := testSpec("http://127.0.0.1:1", 2, 2)
	spec.Run.Cumulative = true
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	m := spec.Models[0]
	mem := newMemory(true, len(spec.Personas))
	keyed := newPreparer(&spec, m, mem, nil, true)
	plain := newPreparer(&spec, m, mem, nil, false)

	first, ok := keyed.prepare(context.Background(), 0)
	if !ok || first.err != nil {
		t.Fatalf("prepare: %+v", first)
	}
	c := spec.Cell(0)
	if first.req.Seed != spec.CallSeed(c) || first.req.CellID != spec.CellID(c) || first.req.Model != m.Name ||
		len(first.req.Messages) != len(first.msgs) {
		t.Errorf("request %+v does not carry the cell's seed, id, model and messages", first.req)
	}
	if first.key != respcache.Key(respcache.Endpoint(m), first.req) || first.key == (store.CacheKey{}) {
		t.Errorf("key %x is not the cache key of the request", first.key)
	}
	if got, _ := plain.prepare(context.Background(), 0); got.key != (store.CacheKey{}) {
		t.Errorf("a pass without a cache computed key %x", got.key)
	}

	// Persona 0 answered item 1: its item-2 cell carries that turn, and so has another key than without it.
	later := spec.Cell(2) // item 2, persona 0
	before, _ := keyed.prepare(context.Background(), later.Index)
	mem.add(c.Persona, experiment.Turn{User: first.msgs[len(first.msgs)-1].Content, Assistant: "1. No"})
	after, _ := keyed.prepare(context.Background(), later.Index)
	if len(after.msgs) != len(before.msgs)+2 || after.key == before.key {
		t.Errorf("cumulative history: %d messages (was %d), key changed %v; want the turn in the request and its key",
			len(after.msgs), len(before.msgs), after.key != before.key)
	}

	t.Run("a pass looks each key up once and sends each request once", testPassPreparesEachCellOnce)
}

// lookupCounter is a results store that counts the cache reads of each key.
type lookupCounter struct {
	Store
	mu    sync.Mutex
	reads map[store.CacheKey]int
}

func (c *lookupCounter) CacheGet(ctx context.Context, keys []store.CacheKey) ([]store.CacheEntry, error) {
	c.mu.Lock()
	for _, k := range keys {
		c.reads[k]++
	}
	c.mu.Unlock()
	return c.Store.CacheGet(ctx, keys)
}

// testPassPreparesEachCellOnce: in a pass the one preparation serves the lookup and the call, so each cell's key,
// the preparer's, is read from the cache once and its request is sent once, carrying the messages that key was
// made of.
func testPassPreparesEachCellOnce(t *testing.T) {
	fm := &fakeModel{}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	h := newHarness(t, testSpec(srv.URL, 2, 3))
	lc := &lookupCounter{Store: h.acts.Store, reads: map[store.CacheKey]int{}}
	h.acts.Store = lc
	if _, err := h.runPass(ratelimit.Limits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	prep := newPreparer(&h.spec, h.spec.Models[0], newMemory(false, len(h.spec.Personas)), nil, true)
	for i := range h.spec.NumCells() {
		p, _ := prep.prepare(context.Background(), i)
		id := p.req.CellID
		if n := lc.reads[p.key]; n != 1 {
			t.Errorf("cell %s: its key read from the cache %d times, want once", id, n)
		}
		if n := fm.seen[id]; n != 1 {
			t.Errorf("cell %s: sent %d times, want once", id, n)
		}
		if !reflect.DeepEqual(fm.messages[id], p.msgs) {
			t.Errorf("cell %s: sent %+v, want the prepared %+v", id, fm.messages[id], p.msgs)
		}
	}
	if len(lc.reads) != h.spec.NumCells() {
		t.Errorf("%d keys read from the cache, want the %d cells' own", len(lc.reads), h.spec.NumCells())
	}
}
