package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"time"
)

// CacheKey identifies a request in the response cache: the SHA-256 digest of everything that decides its answer.
type CacheKey [32]byte

// String is the key in hex.
func (k CacheKey) String() string { return hex.EncodeToString(k[:]) }

// CacheEntry is one entry of the response cache as the store keeps it. The store does not interpret Value or
// check Sum: the cache package encodes entries and validates each one it reads, so that a corrupted or foreign
// row is a miss, never a wrong answer.
type CacheEntry struct {
	Key CacheKey
	// Model is the model name the answer came from, for statistics and pruning.
	Model string
	// Value is the encoded answer; Sum its checksum.
	Value []byte
	Sum   [32]byte
	// Run is the run that wrote the entry, Created when.
	Run     string
	Created time.Time
}

// CacheTally counts the lookups of one model's cells in the cache: served (Hits), not there (Misses), and there
// but failing validation (Invalid, also a miss).
type CacheTally struct {
	Hits    int `json:"hits"`
	Misses  int `json:"misses"`
	Invalid int `json:"invalid"`
}

// Add adds t to c.
func (c *CacheTally) Add(t CacheTally) {
	c.Hits += t.Hits
	c.Misses += t.Misses
	c.Invalid += t.Invalid
}

// IsZero reports whether nothing was counted.
func (c CacheTally) IsZero() bool { return c == CacheTally{} }

// Batch is what one write transaction makes durable: records of a run, the cache entries of their fresh answers
// and the lookup counts of the cells they finished, so that a group commit costs one transaction however much it
// carries.
type Batch struct {
	Records []Record
	Cache   []CacheEntry
	// Tally is keyed by model name.
	Tally map[string]CacheTally
}

func (b Batch) empty() bool { return len(b.Records) == 0 && len(b.Cache) == 0 && len(b.Tally) == 0 }

// CacheStats describes the cache's holdings and use for one model name.
type CacheStats struct {
	Model   string `json:"model"`
	Entries int    `json:"entries"`
	// Bytes is the size of the stored answers.
	Bytes int64 `json:"bytes"`
	CacheTally
}

// CacheFilter selects cache entries to prune: those written before Before (zero: any time), for the model named
// Model (empty: any) and by the run Run (empty: any). The zero filter selects every entry.
type CacheFilter struct {
	Before time.Time
	Model  string
	Run    string
}

// Cache is the response cache's part of a Store.
//
// Claims keep two runs (on any workers sharing the store) from paying for the same request at once: a pass claims
// the keys it is about to call, a pass that finds a key claimed by another owner waits for that owner's answer
// instead of calling, and a claim that is not renewed expires, so a dead worker's claims free themselves. A claim
// outlives the answer written under its key (claims matter only to lookups that miss) until its owner releases
// it: one statement when the pass ends, rather than one more write per answer.
type Cache interface {
	// Write makes a batch durable in one transaction; Put is Write of records alone.
	Write(ctx context.Context, run string, b Batch) error
	// CacheGet returns the entries stored under keys, in no particular order; keys without one are left out.
	// Only Key, Value and Sum are read: what a lookup validates and decodes.
	CacheGet(ctx context.Context, keys []CacheKey) ([]CacheEntry, error)
	// CacheClaim claims keys for owner until until, unless another owner's claim on a key lasts beyond now; it
	// returns the keys held by other owners. Claiming a key the owner already holds extends the claim.
	CacheClaim(ctx context.Context, owner string, keys []CacheKey, now, until time.Time) (taken []CacheKey, err error)
	// CacheRenew extends every claim of owner until until.
	CacheRenew(ctx context.Context, owner string, until time.Time) error
	// CacheRelease drops every claim of owner.
	CacheRelease(ctx context.Context, owner string) error
	// CacheStats returns the holdings and lookup counts of every model, by model name.
	CacheStats(ctx context.Context) ([]CacheStats, error)
	// CachePrune deletes the entries f selects and returns how many there were.
	CachePrune(ctx context.Context, f CacheFilter) (int, error)
}

// uniqueKeys returns keys without repeats, in their first order.
func uniqueKeys(keys []CacheKey) []CacheKey {
	seen := make(map[CacheKey]bool, len(keys))
	out := make([]CacheKey, 0, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// lastEntries returns entries with one entry per key, the last given, in their first order.
func lastEntries(entries []CacheEntry) []CacheEntry {
	at := make(map[CacheKey]int, len(entries))
	out := make([]CacheEntry, 0, len(entries))
	for _, e := range entries {
		if i, ok := at[e.Key]; ok {
			out[i] = e
			continue
		}
		at[e.Key] = len(out)
		out = append(out, e)
	}
	return out
}

// statRows are the rows of a query of both back ends' drivers (*sql.Rows, pgx.Rows).
type statRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanHeld reads rows of (model, entries, bytes).
func scanHeld(rows statRows) (map[string]CacheStats, error) {
	held := map[string]CacheStats{}
	for rows.Next() {
		var st CacheStats
		if err := rows.Scan(&st.Model, &st.Entries, &st.Bytes); err != nil {
			return nil, err
		}
		held[st.Model] = st
	}
	return held, rows.Err()
}

// scanTallies reads rows of (model, hits, misses, invalid).
func scanTallies(rows statRows) (map[string]CacheTally, error) {
	tallies := map[string]CacheTally{}
	for rows.Next() {
		var m string
		var t CacheTally
		if err := rows.Scan(&m, &t.Hits, &t.Misses, &t.Invalid); err != nil {
			return nil, err
		}
		tallies[m] = t
	}
	return tallies, rows.Err()
}

// mergeStats joins per-model holdings and tallies into one list sorted by model name.
func mergeStats(held map[string]CacheStats, tallies map[string]CacheTally) []CacheStats {
	for m, t := range tallies {
		s := held[m]
		s.Model = m
		s.CacheTally = t
		held[m] = s
	}
	out := make([]CacheStats, 0, len(held))
	for _, s := range held {
		out = append(out, s)
	}
	sortStats(out)
	return out
}

func sortStats(s []CacheStats) {
	slices.SortFunc(s, func(a, b CacheStats) int { return strings.Compare(a.Model, b.Model) })
}

// sortedKeys returns a sorted copy of keys.
func sortedKeys(keys []CacheKey) []CacheKey {
	out := slices.Clone(keys)
	slices.SortFunc(out, func(a, b CacheKey) int { return bytes.Compare(a[:], b[:]) })
	return out
}
