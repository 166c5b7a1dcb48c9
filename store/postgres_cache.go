package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CacheGet returns the key, value and checksum of the entries stored under keys, in one query.
func (p *Postgres) CacheGet(ctx context.Context, keys []CacheKey) ([]CacheEntry, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := p.pool.Query(ctx, "SELECT key, value, sum FROM silico_cache WHERE key = ANY($1::bytea[])", keyBytes(keys))
	if err != nil {
		return nil, fmt.Errorf("store: cache lookup: %w", err)
	}
	defer rows.Close()
	out := make([]CacheEntry, 0, len(keys))
	for rows.Next() {
		var e CacheEntry
		var key, sum []byte
		if err := rows.Scan(&key, &e.Value, &sum); err != nil {
			return nil, fmt.Errorf("store: cache lookup: %w", err)
		}
		copy(e.Key[:], key)
		copy(e.Sum[:], sum)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: cache lookup: %w", err)
	}
	return out, nil
}

func keyBytes(keys []CacheKey) [][]byte {
	out := make([][]byte, len(keys))
	for i := range keys {
		out[i] = keys[i][:]
	}
	return out
}

// CacheClaim claims keys for owner until until, except keys whose claim by another owner lasts beyond now, in
// one statement.
func (p *Postgres) CacheClaim(ctx context.Context, owner string, keys []CacheKey, now, until time.Time) ([]CacheKey, error) {
	keys = uniqueKeys(keys)
	if len(keys) == 0 {
		return nil, nil
	}
	sorted := sortedKeys(keys) // one lock order for concurrent claims
	rows, err := p.pool.Query(ctx, `INSERT INTO silico_cache_claims (key, owner, expires)
		SELECT k, $2, $3 FROM unnest($1::bytea[]) AS k
		ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
		WHERE silico_cache_claims.owner = excluded.owner OR silico_cache_claims.expires <= $4
		RETURNING key`, keyBytes(sorted), owner, until.UnixMilli(), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("store: cache claim: %w", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("store: cache claim: %w", err)
	}
	claimed := make(map[CacheKey]bool, len(got))
	for _, b := range got {
		var k CacheKey
		copy(k[:], b)
		claimed[k] = true
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
func (p *Postgres) CacheRenew(ctx context.Context, owner string, until time.Time) error {
	if _, err := p.pool.Exec(ctx, "UPDATE silico_cache_claims SET expires = $1 WHERE owner = $2", until.UnixMilli(), owner); err != nil {
		return fmt.Errorf("store: cache renew claims of %s: %w", owner, err)
	}
	return nil
}

// CacheRelease drops every claim of owner.
func (p *Postgres) CacheRelease(ctx context.Context, owner string) error {
	if _, err := p.pool.Exec(ctx, "DELETE FROM silico_cache_claims WHERE owner = $1", owner); err != nil {
		return fmt.Errorf("store: cache release claims of %s: %w", owner, err)
	}
	return nil
}

// CacheStats returns the holdings and lookup counts of every model, by model name.
func (p *Postgres) CacheStats(ctx context.Context) ([]CacheStats, error) {
	rows, err := p.pool.Query(ctx, "SELECT model, count(*), coalesce(sum(length(value)), 0)::bigint FROM silico_cache GROUP BY model")
	if err != nil {
		return nil, fmt.Errorf("store: cache stats: %w", err)
	}
	held, err := scanHeld(rows)
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("store: cache stats: %w", err)
	}
	rows, err = p.pool.Query(ctx, "SELECT model, hits, misses, invalid FROM silico_cache_tally")
	if err != nil {
		return nil, fmt.Errorf("store: cache stats: %w", err)
	}
	defer rows.Close()
	tallies, err := scanTallies(rows)
	if err != nil {
		return nil, fmt.Errorf("store: cache stats: %w", err)
	}
	return mergeStats(held, tallies), nil
}

// CachePrune deletes the entries f selects and returns how many there were.
func (p *Postgres) CachePrune(ctx context.Context, f CacheFilter) (int, error) {
	where, args := []string{"true"}, []any{}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if !f.Before.IsZero() {
		add("created < $%d", f.Before)
	}
	if f.Model != "" {
		add("model = $%d", f.Model)
	}
	if f.Run != "" {
		add("run = $%d", f.Run)
	}
	tag, err := p.pool.Exec(ctx, "DELETE FROM silico_cache WHERE "+strings.Join(where, " AND "), args...)
	if err != nil {
		return 0, fmt.Errorf("store: cache prune: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
