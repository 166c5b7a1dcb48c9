package activities

import (
	"context"
	"testing"

	"github.com/silicolab/silico/cache"
	"github.com/silicolab/silico/experiment"
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
	if first.req.Seed != spec.Seeds[c.Seed] || first.req.CellID != spec.CellID(c) || first.req.Model != m.Name ||
		len(first.req.Messages) != len(first.msgs) {
		t.Errorf("request %+v does not carry the cell's seed, id, model and messages", first.req)
	}
	if first.key != cache.Key(cache.Endpoint(m), first.req) || first.key == (store.CacheKey{}) {
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
}
