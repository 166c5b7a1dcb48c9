package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// lookupSizes are the numbers of keys the prepared lookup statements take. A lookup uses the smallest that holds
// its keys, repeating the last key in the slots left over, so that parsing and planning a statement (more than
// the lookup itself costs) happens once per size and connection, not once per lookup.
var lookupSizes = []int{1, 8, 64, 256}

const putCacheQuery = `INSERT INTO cache (key, model, value, sum, run, created) VALUES (?, ?, ?, ?, ?, ?)
	ON CONFLICT (key) DO UPDATE SET model = excluded.model, value = excluded.value, sum = excluded.sum,
	run = excluded.run, created = excluded.created`

const addTallyQuery = `INSERT INTO cache_tally (model, hits, misses, invalid) VALUES (?, ?, ?, ?)
	ON CONFLICT (model) DO UPDATE SET hits = hits + excluded.hits, misses = misses + excluded.misses,
	invalid = invalid + excluded.invalid`

// putCache writes entries in tx through the prepared statement st (putCacheQuery).
func putCache(ctx context.Context, tx *sql.Tx, st *sql.Stmt, entries []CacheEntry) error {
	if len(entries) == 0 {
		return nil
	}
	put := tx.StmtContext(ctx, st)
	for _, e := range entries {
		if _, err := put.ExecContext(ctx, e.Key[:], e.Model, e.Value, e.Sum[:], e.Run, e.Created.UnixMilli()); err != nil {
			return fmt.Errorf("entry %s: %w", e.Key, err)
		}
	}
	return nil
}

// addTally adds the lookup counts in tx through the prepared statement st (addTallyQuery).
func addTally(ctx context.Context, tx *sql.Tx, st *sql.Stmt, tally map[string]CacheTally) error {
	var add *sql.Stmt
	for m, t := range tally {
		if t.IsZero() {
			continue
		}
		if add == nil {
			add = tx.StmtContext(ctx, st)
		}
		if _, err := add.ExecContext(ctx, m, t.Hits, t.Misses, t.Invalid); err != nil {
			return fmt.Errorf("model %s: %w", m, err)
		}
	}
	return nil
}

// lookup returns the prepared lookup of n keys.
func (s *SQLite) lookup(ctx context.Context, n int) (*sql.Stmt, error) {
	s.lookupMu.Lock()
	defer s.lookupMu.Unlock()
	if st, ok := s.lookups[n]; ok {
		return st, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
	st, err := s.db.PrepareContext(ctx, "SELECT key, value, sum FROM cache WHERE key IN ("+marks+")")
	if err != nil {
		return nil, err
	}
	if s.lookups == nil {
		s.lookups = map[int]*sql.Stmt{}
	}
	s.lookups[n] = st
	return st, nil
}

// CacheGet returns the key, value and checksum of the entries stored under keys, up to 256 keys per query.
func (s *SQLite) CacheGet(ctx context.Context, keys []CacheKey) ([]CacheEntry, error) {
	keys = uniqueKeys(keys)
	out := make([]CacheEntry, 0, len(keys))
	largest := lookupSizes[len(lookupSizes)-1]
	args := make([]any, largest)
	for start := 0; start < len(keys); start += largest {
		part := keys[start:min(len(keys), start+largest)]
		size := lookupSizes[slices.IndexFunc(lookupSizes, func(n int) bool { return n >= len(part) })]
		for i := range size {
			args[i] = part[min(i, len(part)-1)][:]
		}
		st, err := s.lookup(ctx, size)
		if err != nil {
			return nil, fmt.Errorf("store: cache lookup: %w", err)
		}
		rows, err := st.QueryContext(ctx, args[:size]...)
		if err != nil {
			return nil, fmt.Errorf("store: cache lookup: %w", err)
		}
		out, err = scanCacheRows(rows, out)
		if err != nil {
			return nil, fmt.Errorf("store: cache lookup: %w", err)
		}
	}
	return out, nil
}

func scanCacheRows(rows *sql.Rows, out []CacheEntry) ([]CacheEntry, error) {
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var e CacheEntry
		var key, sum sql.RawBytes
		if err := rows.Scan(&key, &e.Value, &sum); err != nil {
			return nil, err
		}
		// A key or sum of the wrong length is kept as far as it goes: validation then rejects the entry.
		copy(e.Key[:], key)
		copy(e.Sum[:], sum)
		out = append(out, e)
	}
	return out, rows.Err()
}

// claimStmt returns the prepared claim of n keys, on the claims file.
func (s *SQLite) claimStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	s.lookupMu.Lock()
	defer s.lookupMu.Unlock()
	if st, ok := s.claimStmts[n]; ok {
		return st, nil
	}
	st, err := s.claims.PrepareContext(ctx, `INSERT INTO cache_claims (key, owner, expires) VALUES `+
		strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", n), ", ")+`
		ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
		WHERE cache_claims.owner = excluded.owner OR cache_claims.expires <= ?
		RETURNING key`)
	if err != nil {
		return nil, err
	}
	if s.claimStmts == nil {
		s.claimStmts = map[int]*sql.Stmt{}
	}
	s.claimStmts[n] = st
	return st, nil
}

// CacheClaim claims keys for owner until until, except keys whose claim by another owner lasts beyond now: one
// prepared statement per 256 keys (of the sizes of lookupSizes, as CacheGet), which returns the keys it claimed.
func (s *SQLite) CacheClaim(ctx context.Context, owner string, keys []CacheKey, now, until time.Time) ([]CacheKey, error) {
	keys = uniqueKeys(keys)
	if len(keys) == 0 {
		return nil, nil
	}
	tx, end, err := s.beginClaims(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: cache claim: %w", err)
	}
	defer end()
	claimed := make(map[CacheKey]bool, len(keys))
	largest := lookupSizes[len(lookupSizes)-1]
	args := make([]any, 0, 3*largest+1)
	// As in Write, the statements run without ctx's cancellation (no goroutine per statement); cancelling ctx
	// still rolls the transaction back.
	rowCtx := context.WithoutCancel(ctx)
	for start := 0; start < len(keys); start += largest {
		part := keys[start:min(len(keys), start+largest)]
		size := lookupSizes[slices.IndexFunc(lookupSizes, func(n int) bool { return n >= len(part) })]
		args = args[:0]
		// The slots left over repeat the last key: its second row updates the claim its first row made.
		for i := range size {
			args = append(args, part[min(i, len(part)-1)][:], owner, until.UnixMilli())
		}
		args = append(args, now.UnixMilli())
		st, err := s.claimStmt(ctx, size)
		if err != nil {
			return nil, fmt.Errorf("store: cache claim: %w", err)
		}
		rows, err := tx.StmtContext(ctx, st).QueryContext(rowCtx, args...)
		if err != nil {
			return nil, fmt.Errorf("store: cache claim: %w", err)
		}
		for rows.Next() {
			var b sql.RawBytes
			if err := rows.Scan(&b); err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("store: cache claim: %w", err)
			}
			var k CacheKey
			copy(k[:], b)
			claimed[k] = true
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("store: cache claim: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: cache claim: commit: %w", err)
	}
	var taken []CacheKey
	for _, k := range keys {
		if !claimed[k] {
			taken = append(taken, k)
		}
	}
	return taken, nil
}

// CacheRenew extends every claim of owner until until.
func (s *SQLite) CacheRenew(ctx context.Context, owner string, until time.Time) error {
	return s.execClaims(ctx, "store: cache renew claims of "+owner, "UPDATE cache_claims SET expires = ? WHERE owner = ?", until.UnixMilli(), owner)
}

// CacheRelease drops every claim of owner.
func (s *SQLite) CacheRelease(ctx context.Context, owner string) error {
	return s.execClaims(ctx, "store: cache release claims of "+owner, "DELETE FROM cache_claims WHERE owner = ?", owner)
}

// execClaims runs one statement in a write transaction of its own on the claims file.
func (s *SQLite) execClaims(ctx context.Context, what, query string, args ...any) error {
	_, err := execCount(ctx, s.beginClaims, what, query, args...)
	return err
}

// execCount runs one statement in a write transaction of its own, begun by begin, and returns the rows it
// changed.
func execCount(ctx context.Context, begin func(context.Context) (*sql.Tx, func(), error), what, query string, args ...any) (int, error) {
	tx, end, err := begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	defer end()
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("%s: commit: %w", what, err)
	}
	return int(n), nil
}

// CacheStats returns the holdings and lookup counts of every model, by model name.
func (s *SQLite) CacheStats(ctx context.Context) ([]CacheStats, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT model, count(*), coalesce(sum(length(value)), 0) FROM cache GROUP BY model")
	if err != nil {
		return nil, fmt.Errorf("store: cache stats: %w", err)
	}
	held, err := scanHeld(rows)
	_ = rows.Close()
	if err != nil {
		return nil, fmt.Errorf("store: cache stats: %w", err)
	}
	rows, err = s.db.QueryContext(ctx, "SELECT model, hits, misses, invalid FROM cache_tally")
	if err != nil {
		return nil, fmt.Errorf("store: cache stats: %w", err)
	}
	defer func() { _ = rows.Close() }()
	tallies, err := scanTallies(rows)
	if err != nil {
		return nil, fmt.Errorf("store: cache stats: %w", err)
	}
	return mergeStats(held, tallies), nil
}

// CachePrune deletes the entries f selects and returns how many there were.
func (s *SQLite) CachePrune(ctx context.Context, f CacheFilter) (int, error) {
	where, args := []string{"1 = 1"}, []any{}
	if !f.Before.IsZero() {
		where, args = append(where, "created < ?"), append(args, f.Before.UnixMilli())
	}
	if f.Model != "" {
		where, args = append(where, "model = ?"), append(args, f.Model)
	}
	if f.Run != "" {
		where, args = append(where, "run = ?"), append(args, f.Run)
	}
	return execCount(ctx, s.beginWrite, "store: cache prune", "DELETE FROM cache WHERE "+strings.Join(where, " AND "), args...)
}
