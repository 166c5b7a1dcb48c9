package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func key(i int) CacheKey { return sha256.Sum256([]byte(fmt.Sprint("key ", i))) }

func entry(i int, model, run string, at time.Time) CacheEntry {
	v := []byte(fmt.Sprintf(`{"answer":%d}`, i))
	return CacheEntry{Key: key(i), Model: model, Value: v, Sum: sha256.Sum256(v), Run: run, Created: at.UTC().Truncate(time.Millisecond)}
}

func byKey(es []CacheEntry) map[CacheKey]CacheEntry {
	m := map[CacheKey]CacheEntry{}
	for _, e := range es {
		m[e.Key] = e
	}
	return m
}

// looked is e as CacheGet returns it: its key, value and checksum.
func looked(e CacheEntry) CacheEntry { return CacheEntry{Key: e.Key, Value: e.Value, Sum: e.Sum} }

func TestCacheEntriesRideWithRecordsAndRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		es := []CacheEntry{entry(1, "m1", "run", t0), entry(2, "m2", "run", t0)}
		err := s.Write(ctx, "run", Batch{Records: []Record{rec(0), rec(1)}, Cache: es,
			Tally: map[string]CacheTally{"m1": {Hits: 2, Misses: 3}, "m2": {Invalid: 1}}})
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		if n := count(t, s, "run"); n != 2 {
			t.Fatalf("records = %d, want 2", n)
		}
		got, err := s.CacheGet(ctx, []CacheKey{key(1), key(2), key(3)})
		if err != nil {
			t.Fatalf("CacheGet: %v", err)
		}
		if m := byKey(got); len(got) != 2 || !reflect.DeepEqual(m[key(1)], looked(es[0])) || !reflect.DeepEqual(m[key(2)], looked(es[1])) {
			t.Fatalf("CacheGet = %+v, want %+v", got, es)
		}

		// A later entry of the same key replaces the earlier one; within a batch the last wins.
		newer := entry(1, "m1", "run2", t0.Add(time.Hour))
		newer.Value = []byte(`{"answer":"new"}`)
		if err := s.Write(ctx, "run2", Batch{Cache: []CacheEntry{entry(1, "m1", "x", t0), newer},
			Tally: map[string]CacheTally{"m1": {Hits: 1}}}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		got, _ = s.CacheGet(ctx, []CacheKey{key(1)})
		if len(got) != 1 || !reflect.DeepEqual(got[0], looked(newer)) {
			t.Fatalf("after replacement CacheGet = %+v, want [%+v]", got, newer)
		}

		st, err := s.CacheStats(ctx)
		if err != nil {
			t.Fatalf("CacheStats: %v", err)
		}
		want := []CacheStats{
			{Model: "m1", Entries: 1, Bytes: int64(len(newer.Value)), CacheTally: CacheTally{Hits: 3, Misses: 3}},
			{Model: "m2", Entries: 1, Bytes: int64(len(es[1].Value)), CacheTally: CacheTally{Invalid: 1}},
		}
		if !reflect.DeepEqual(st, want) {
			t.Fatalf("CacheStats = %+v, want %+v", st, want)
		}
	})
}

func TestCacheLookupOfManyKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		var es []CacheEntry
		var keys []CacheKey
		for i := range 1200 { // more than one query's worth of keys
			if i%3 != 0 {
				es = append(es, entry(i, "m", "run", time.Now()))
			}
			keys = append(keys, key(i))
		}
		if err := s.Write(ctx, "run", Batch{Cache: es}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		got, err := s.CacheGet(ctx, keys)
		if err != nil {
			t.Fatalf("CacheGet: %v", err)
		}
		if len(got) != len(es) {
			t.Fatalf("CacheGet found %d entries, want %d", len(got), len(es))
		}
		m := byKey(got)
		for _, e := range es {
			if !slices.Equal(m[e.Key].Value, e.Value) {
				t.Fatalf("entry %s = %q, want %q", e.Key, m[e.Key].Value, e.Value)
			}
		}
	})
}

func TestCacheClaims(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		dsn := b.dsn(t)
		s1, s2 := openStore(t, dsn), openStore(t, dsn) // two workers
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		until := now.Add(time.Minute)
		taken, err := s1.CacheClaim(ctx, "a/0", []CacheKey{key(1), key(2), key(2)}, now, until)
		if err != nil || len(taken) != 0 {
			t.Fatalf("first claim: taken %v, %v; want none", taken, err)
		}
		taken, err = s2.CacheClaim(ctx, "b/0", []CacheKey{key(2), key(3)}, now, until)
		if err != nil || !slices.Equal(taken, []CacheKey{key(2)}) {
			t.Fatalf("claim of a held key: taken %v, %v; want [%s]", taken, err, key(2))
		}
		// The owner claims its own keys again (a retried attempt of the same pass).
		if taken, err = s1.CacheClaim(ctx, "a/0", []CacheKey{key(1)}, now, until); err != nil || len(taken) != 0 {
			t.Fatalf("re-claim by the owner: taken %v, %v", taken, err)
		}
		// A claim not renewed expires; a renewed one does not.
		later := until.Add(time.Second)
		if err := s1.CacheRenew(ctx, "a/0", later.Add(time.Minute)); err != nil {
			t.Fatalf("CacheRenew: %v", err)
		}
		if taken, err = s1.CacheClaim(ctx, "a/0", nil, later, later); err != nil || len(taken) != 0 {
			t.Fatalf("empty claim: %v %v", taken, err)
		}
		taken, err = s2.CacheClaim(ctx, "c/0", []CacheKey{key(1), key(2), key(3)}, later, later.Add(time.Minute))
		if err != nil || !slices.Equal(taken, []CacheKey{key(1), key(2)}) {
			t.Fatalf("claims at %v: taken %v, %v; want only the renewed %s and %s", later, taken, err, key(1), key(2))
		}
		// Released claims are free at once.
		if err := s1.CacheRelease(ctx, "a/0"); err != nil {
			t.Fatalf("CacheRelease: %v", err)
		}
		if taken, err = s2.CacheClaim(ctx, "c/0", []CacheKey{key(1), key(2)}, later, later.Add(time.Minute)); err != nil || len(taken) != 0 {
			t.Fatalf("claim after release: taken %v, %v", taken, err)
		}
	})
}

func TestCachePrune(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		es := []CacheEntry{
			entry(1, "m1", "r1", t0), entry(2, "m1", "r2", t0.Add(48*time.Hour)),
			entry(3, "m2", "r1", t0.Add(48*time.Hour)), entry(4, "m2", "r2", t0.Add(96*time.Hour)),
		}
		if err := s.Write(ctx, "r", Batch{Cache: es}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		left := func() []CacheKey {
			got, err := s.CacheGet(ctx, []CacheKey{key(1), key(2), key(3), key(4)})
			if err != nil {
				t.Fatalf("CacheGet: %v", err)
			}
			var ks []CacheKey
			for _, e := range got {
				ks = append(ks, e.Key)
			}
			slices.SortFunc(ks, func(a, b CacheKey) int { return strings.Compare(a.String(), b.String()) })
			return ks
		}
		for _, step := range []struct {
			f    CacheFilter
			n    int
			gone CacheKey
		}{
			{CacheFilter{Before: t0.Add(24 * time.Hour)}, 1, key(1)},
			{CacheFilter{Model: "m2", Run: "r1"}, 1, key(3)},
			{CacheFilter{Run: "r2", Before: t0.Add(72 * time.Hour)}, 1, key(2)},
		} {
			n, err := s.CachePrune(ctx, step.f)
			if err != nil || n != step.n {
				t.Fatalf("CachePrune(%+v) = %d, %v; want %d", step.f, n, err, step.n)
			}
			if slices.Contains(left(), step.gone) {
				t.Fatalf("CachePrune(%+v) left %s", step.f, step.gone)
			}
		}
		if got := left(); !slices.Equal(got, []CacheKey{key(4)}) {
			t.Fatalf("entries left = %v, want only %s", got, key(4))
		}
		if n, err := s.CachePrune(ctx, CacheFilter{}); err != nil || n != 1 {
			t.Fatalf("CachePrune of everything = %d, %v; want 1", n, err)
		}
	})
}

// cacheRefuser fails every batch that carries cache entries, as a store whose cache table cannot be written.
type cacheRefuser struct {
	s       Store
	refused int
}

func (c *cacheRefuser) Write(ctx context.Context, run string, b Batch) error {
	if len(b.Cache) > 0 {
		c.refused++
		return errors.New("disk full")
	}
	return c.s.Write(ctx, run, b)
}

func TestWriterKeepsTheRecordsWhenTheCacheWriteFails(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, backends[0].dsn(t))
	refuser := &cacheRefuser{s: s}
	var told []string
	w := NewWriter(refuser, "run", WriterOptions{CacheFailed: func(n int, err error) {
		told = append(told, fmt.Sprintf("%d: %v", n, err))
	}})
	if err := w.AddAnswer(ctx, rec(0), entry(0, "m", "run", time.Now())); err != nil {
		t.Fatalf("AddAnswer: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v (a cache write that fails must not fail the records)", err)
	}
	if n := count(t, s, "run"); n != 1 {
		t.Fatalf("records = %d, want 1", n)
	}
	if refuser.refused != 1 || len(told) != 1 || !strings.Contains(told[0], "disk full") {
		t.Fatalf("refused %d batches, told %q; want the failure reported once", refuser.refused, told)
	}
}

// TestCacheClaimsOfManyKeys: claims of more keys than one statement takes, and of counts between the prepared
// sizes (whose slots left over repeat a key), claim exactly the keys free and report exactly the keys held.
func TestCacheClaimsOfManyKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		dsn := b.dsn(t)
		s1, s2 := openStore(t, dsn), openStore(t, dsn)
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		keys := func(from, to int) []CacheKey {
			var out []CacheKey
			for i := from; i < to; i++ {
				out = append(out, key(i))
			}
			return out
		}
		if taken, err := s1.CacheClaim(ctx, "a/0", keys(0, 300), now, now.Add(time.Minute)); err != nil || len(taken) != 0 {
			t.Fatalf("first claim of 300 keys: taken %d, %v; want none", len(taken), err)
		}
		taken, err := s2.CacheClaim(ctx, "b/0", keys(290, 303), now, now.Add(time.Minute))
		if err != nil || !slices.Equal(taken, keys(290, 300)) {
			t.Fatalf("claim of 13 keys, 10 held: taken %d keys, %v; want keys 290 to 299", len(taken), err)
		}
		taken, err = s1.CacheClaim(ctx, "a/0", keys(295, 305), now, now.Add(time.Minute))
		if err != nil || !slices.Equal(taken, keys(300, 303)) {
			t.Fatalf("owner's claim of 10 keys, 3 held by another: taken %d keys, %v; want keys 300 to 302", len(taken), err)
		}
	})
}
