package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgMigrations are the PostgreSQL schema's steps; migration i+1 takes the schema from version i to i+1. The
// version reached is recorded in silico_schema_version. Append only: a released step is never edited.
//
// The tables are prefixed so that silico can share a database with other programs; to keep it apart entirely,
// give the DSN a search_path (…?search_path=silico) naming a schema of its own.
//
// silico_cells has no foreign key to silico_runs: its per-row check made a batch insert four times slower
// (100,000 rows in one statement: 2.7 s with it, 0.7 s without). Put creates the run's row itself, and
// DeleteRun removes both in one transaction.
var pgMigrations = []string{
	`CREATE TABLE silico_runs (
		run        TEXT PRIMARY KEY,
		spec       BYTEA,
		created    TIMESTAMPTZ NOT NULL DEFAULT now(),
		-- the run's wall time as its workflow measured it when it exported; NULL before that
		elapsed_ms BIGINT
	);
	CREATE TABLE silico_cells (
		run               TEXT             NOT NULL,
		idx               BIGINT           NOT NULL,
		status            TEXT             NOT NULL,
		option_id         TEXT             NOT NULL DEFAULT '',
		raw               TEXT             NOT NULL DEFAULT '',
		candidates        TEXT             NOT NULL DEFAULT '',
		error_class       TEXT             NOT NULL DEFAULT '',
		error_message     TEXT             NOT NULL DEFAULT '',
		error_code        TEXT             NOT NULL DEFAULT '',
		prompt_tokens     BIGINT           NOT NULL DEFAULT 0,
		completion_tokens BIGINT           NOT NULL DEFAULT 0,
		cost_usd          DOUBLE PRECISION NOT NULL DEFAULT 0,
		latency_ms        DOUBLE PRECISION NOT NULL DEFAULT 0,
		attempts          BIGINT           NOT NULL DEFAULT 0,
		cached            BOOLEAN          NOT NULL DEFAULT false,
		PRIMARY KEY (run, idx)
	);`,
	`CREATE TABLE silico_cache (
		key     BYTEA       PRIMARY KEY,
		model   TEXT        NOT NULL,
		value   BYTEA       NOT NULL,
		sum     BYTEA       NOT NULL,
		run     TEXT        NOT NULL,
		created TIMESTAMPTZ NOT NULL
	);
	-- claims on requests being called, by owner (a run's pass), until expires (Unix milliseconds)
	CREATE TABLE silico_cache_claims (
		key     BYTEA  PRIMARY KEY,
		owner   TEXT   NOT NULL,
		expires BIGINT NOT NULL
	);
	CREATE INDEX silico_cache_claims_owner ON silico_cache_claims (owner);
	CREATE TABLE silico_cache_tally (
		model   TEXT   PRIMARY KEY,
		hits    BIGINT NOT NULL DEFAULT 0,
		misses  BIGINT NOT NULL DEFAULT 0,
		invalid BIGINT NOT NULL DEFAULT 0
	);`,
	// the digests of the pictures a cell sent
	`ALTER TABLE silico_cells ADD COLUMN image_sha256 TEXT NOT NULL DEFAULT '';`,
	// why generation stopped, whether a json_schema answer held, and the option probabilities (see EncodeProbs)
	`ALTER TABLE silico_cells ADD COLUMN finish_reason TEXT NOT NULL DEFAULT '';
	 ALTER TABLE silico_cells ADD COLUMN schema TEXT NOT NULL DEFAULT '';
	 ALTER TABLE silico_cells ADD COLUMN probs TEXT NOT NULL DEFAULT '';
	 ALTER TABLE silico_cells ADD COLUMN coverage DOUBLE PRECISION NOT NULL DEFAULT 0;`,
	// the tries charged to a cell, apart from the requests sent (0, unknown, in the rows already written); the
	// counts of the failed records DeleteFailed removed, which the cells' next records add to (--retry-failed)
	`ALTER TABLE silico_cells ADD COLUMN tries BIGINT NOT NULL DEFAULT 0;
	 CREATE TABLE silico_cell_carry (
		run      TEXT   NOT NULL,
		idx      BIGINT NOT NULL,
		attempts BIGINT NOT NULL,
		tries    BIGINT NOT NULL,
		PRIMARY KEY (run, idx)
	 );`,
	// the state a starter last recorded for a run, so that runs can be listed without a Temporal server
	`CREATE TABLE silico_run_state (
		run   TEXT        PRIMARY KEY,
		state TEXT        NOT NULL,
		at    TIMESTAMPTZ NOT NULL
	);`,
	// the raw sum of a verbalized answer's stated probabilities (0 in the rows already written: none was verbalized)
	`ALTER TABLE silico_cells ADD COLUMN probs_sum DOUBLE PRECISION NOT NULL DEFAULT 0;`,
	// the model the provider says answered and its system fingerprint ('', unknown, in the rows already written)
	`ALTER TABLE silico_cells ADD COLUMN served_model TEXT NOT NULL DEFAULT '';
	 ALTER TABLE silico_cells ADD COLUMN system_fingerprint TEXT NOT NULL DEFAULT '';`,
}

// pgMigrateLock is the key of the advisory lock that serializes migrations: many workers started at once all
// open the store, and only one of them may create the tables.
const pgMigrateLock = 0x5111c0

// pgUpsert writes a whole batch in one statement and one round trip: the run's row (created by the first write
// of a run whose spec is not saved yet) in a data-modifying CTE, and the cells from one array per column ($2...,
// pgArgs). A statement is atomic on its own, so Put needs no explicit transaction. ON CONFLICT makes a rewritten
// cell (a retried pass, FailUnfinished after a crash) replace the earlier row, never add a second one, except that
// a failed record never replaces an answer. The arrays must not repeat an index: one statement cannot update a
// row twice. A cell's carried columns (attempts and tries) add what silico_cell_carry keeps of its earlier
// executions (see DeleteFailed); the lookups are subqueries of its primary key, not a join, so the rows keep the
// arrays' order.
func pgUpsert() string {
	names := recordColumnNames()
	sel := make([]string, len(recordColumns))
	arrays := make([]string, len(recordColumns))
	for i, c := range recordColumns {
		sel[i] = "u." + c.name
		if c.carried {
			sel[i] += fmt.Sprintf(" + coalesce((SELECT c.%s FROM silico_cell_carry c WHERE c.run = $1 AND c.%s = u.%s), 0)",
				c.name, keyColumn, keyColumn)
		}
		arrays[i] = fmt.Sprintf("$%d::%s[]", i+2, c.pgType)
	}
	return "WITH r AS (INSERT INTO silico_runs (run) VALUES ($1) ON CONFLICT (run) DO NOTHING)\n" +
		"INSERT INTO silico_cells (run, " + names + ")\n" +
		"SELECT $1, " + strings.Join(sel, ", ") + "\n" +
		"FROM unnest(" + strings.Join(arrays, ", ") + ")\n\tAS u(" + names + ")" +
		upsertSet("silico_cells")
}

// pgArgs are the parameters of pgUpsert: the run, then one array per column of recs.
func pgArgs(run string, recs []Record) []any {
	args := make([]any, 0, 1+len(recordColumns))
	args = append(args, run)
	for _, c := range recordColumns {
		args = append(args, c.array(recs))
	}
	return args
}

// Postgres is the results store in a PostgreSQL database, shared by any number of worker processes on any
// number of machines. It is safe for use by several goroutines.
type Postgres struct {
	pool *pgxpool.Pool
	// where is the DSN without its password, for messages.
	where string
	// upsert is pgUpsert's statement, built once.
	upsert string
}

// OpenPostgres connects to the database a postgres:// URL names (pgx's connection string: sslmode,
// search_path, pool_max_conns … as query parameters) and creates or migrates silico's tables.
func OpenPostgres(ctx context.Context, dsn string) (*Postgres, error) {
	where := redactDSN(dsn)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		// pgx's parse errors quote the connection string; say only where.
		return nil, fmt.Errorf("store: open %s: invalid PostgreSQL connection string", where)
	}
	p := &Postgres{pool: pool, where: where, upsert: pgUpsert()}
	if err := p.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: open %s: %w", where, err)
	}
	return p, nil
}

// redactDSN hides the password of a URL, given as user:password@ or as a password= parameter, and all of a URL
// it cannot parse.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

func (p *Postgres) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", pgMigrateLock); err != nil {
			return fmt.Errorf("lock schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS silico_schema_version (
			version INTEGER PRIMARY KEY,
			applied TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create version table: %w", err)
		}
		var v int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM silico_schema_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > len(pgMigrations) {
			return fmt.Errorf("schema version %d is newer than this program's %d: upgrade silico", v, len(pgMigrations))
		}
		for ; v < len(pgMigrations); v++ {
			if _, err := tx.Exec(ctx, pgMigrations[v]); err != nil {
				return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO silico_schema_version (version) VALUES ($1)", v+1); err != nil {
				return fmt.Errorf("record schema version %d: %w", v+1, err)
			}
		}
		return nil
	})
}

// Location is the DSN without its password.
func (p *Postgres) Location() string { return p.where }

// Close closes the connection pool, waiting for connections in use to be returned.
func (p *Postgres) Close() error {
	p.pool.Close()
	return nil
}

// SaveRun records the spec of a run (its canonical bytes). Saving the same bytes again is a no-op; saving
// different bytes under an existing run is an error, since the run's records would no longer match its spec.
func (p *Postgres) SaveRun(ctx context.Context, run string, spec []byte) error {
	if run == "" {
		return errors.New("store: save run: empty run id")
	}
	if spec == nil {
		spec = []byte{}
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		// The row lock makes concurrent SaveRuns of one run (two starters) compare against each other's bytes.
		if _, err := tx.Exec(ctx, "INSERT INTO silico_runs (run) VALUES ($1) ON CONFLICT (run) DO NOTHING", run); err != nil {
			return err
		}
		var old []byte
		if err := tx.QueryRow(ctx, "SELECT spec FROM silico_runs WHERE run = $1 FOR UPDATE", run).Scan(&old); err != nil {
			return err
		}
		switch {
		case old == nil: // a new run, or one created by Put before the spec was saved
			_, err := tx.Exec(ctx, "UPDATE silico_runs SET spec = $1 WHERE run = $2", spec, run)
			return err
		case bytes.Equal(old, spec):
			return nil
		default:
			return ErrSpecConflict
		}
	})
	if err != nil {
		return fmt.Errorf("store: save run %s: %w", run, err)
	}
	return nil
}

// LoadRun returns the spec bytes saved by SaveRun, or ErrNotFound.
func (p *Postgres) LoadRun(ctx context.Context, run string) ([]byte, error) {
	var spec []byte
	err := p.pool.QueryRow(ctx, "SELECT spec FROM silico_runs WHERE run = $1", run).Scan(&spec)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && spec == nil) {
		return nil, fmt.Errorf("store: load run %s: %w", run, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: load run %s: %w", run, err)
	}
	return spec, nil
}

// SetElapsed records the wall time of a run (from its start to its export), for exports made later from the
// store alone. The run need not exist yet.
func (p *Postgres) SetElapsed(ctx context.Context, run string, d time.Duration) error {
	if _, err := p.pool.Exec(ctx, `INSERT INTO silico_runs (run, elapsed_ms) VALUES ($1, $2)
		ON CONFLICT (run) DO UPDATE SET elapsed_ms = excluded.elapsed_ms`, run, d.Milliseconds()); err != nil {
		return fmt.Errorf("store: set elapsed %s: %w", run, err)
	}
	return nil
}

// Elapsed returns the wall time of a run: what SetElapsed recorded, else (a run still going, or one that never
// exported) the time since the run was created in the store. ErrNotFound when the run does not exist.
func (p *Postgres) Elapsed(ctx context.Context, run string, now time.Time) (time.Duration, error) {
	var ms *int64
	var created time.Time
	err := p.pool.QueryRow(ctx, "SELECT elapsed_ms, created FROM silico_runs WHERE run = $1", run).Scan(&ms, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("store: elapsed of %s: %w", run, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("store: elapsed of %s: %w", run, err)
	}
	if ms != nil {
		return time.Duration(*ms) * time.Millisecond, nil
	}
	return max(0, now.Sub(created)), nil
}

// Put writes the records of a run in one statement (one round trip): all of them are durable when it returns
// nil, none when it returns an error. A record replaces an earlier one with the same index, except that a failed
// record never replaces an answer (ok or unparsed): an answer was paid for, and a give-up written late by a stale
// attempt or by the workflow must not erase it. Within recs, the last one wins by the same rule. The run need
// not have been saved first.
//
// Workers writing the same cells at once never lose or duplicate a row: each cell is one row under the
// (run, idx) key, and a batch locks its rows in index order, so two overlapping batches cannot deadlock.
func (p *Postgres) Put(ctx context.Context, run string, recs []Record) error {
	return p.Write(ctx, run, Batch{Records: recs})
}

// Write makes a batch durable in one transaction: its records as Put writes them, its cache entries (each
// replacing any entry of its key) and its lookup counts. The statements go to the
// server in one round trip.
func (p *Postgres) Write(ctx context.Context, run string, b Batch) error {
	if b.empty() {
		return nil
	}
	if err := checkBatch(run, b); err != nil {
		return err
	}
	var q pgx.Batch
	if len(b.Records) > 0 {
		q.Queue(p.upsert, pgArgs(run, mergeByIndex(b.Records))...)
	}
	if len(b.Cache) > 0 {
		// Sorted by key, so that two batches writing the same keys lock them in one order.
		entries := lastEntries(b.Cache)
		slices.SortFunc(entries, func(x, y CacheEntry) int { return bytes.Compare(x.Key[:], y.Key[:]) })
		n := len(entries)
		keys, values, sums := make([][]byte, n), make([][]byte, n), make([][]byte, n)
		models, runs, created := make([]string, n), make([]string, n), make([]time.Time, n)
		for i, e := range entries {
			keys[i], values[i], sums[i] = e.Key[:], e.Value, e.Sum[:]
			models[i], runs[i], created[i] = e.Model, e.Run, e.Created
		}
		q.Queue(`INSERT INTO silico_cache (key, model, value, sum, run, created)
			SELECT * FROM unnest($1::bytea[], $2::text[], $3::bytea[], $4::bytea[], $5::text[], $6::timestamptz[])
			ON CONFLICT (key) DO UPDATE SET model = excluded.model, value = excluded.value, sum = excluded.sum,
			run = excluded.run, created = excluded.created`, keys, models, values, sums, runs, created)
	}
	if models, t := tallyColumns(b.Tally); len(models) > 0 {
		q.Queue(`INSERT INTO silico_cache_tally (model, hits, misses, invalid)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[])
			ON CONFLICT (model) DO UPDATE SET hits = silico_cache_tally.hits + excluded.hits,
			misses = silico_cache_tally.misses + excluded.misses, invalid = silico_cache_tally.invalid + excluded.invalid`,
			models, t[0], t[1], t[2])
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, &q).Close() })
	if err != nil {
		return fmt.Errorf("store: put %s: %d records, %d cache entries: %w", run, len(b.Records), len(b.Cache), err)
	}
	return nil
}

// tallyColumns returns the non-zero tallies as a sorted list of models and one array per count.
func tallyColumns(tally map[string]CacheTally) ([]string, [3][]int64) {
	var models []string
	for m, t := range tally {
		if !t.IsZero() {
			models = append(models, m)
		}
	}
	slices.Sort(models)
	var cols [3][]int64
	for _, m := range models {
		t := tally[m]
		cols[0] = append(cols[0], int64(t.Hits))
		cols[1] = append(cols[1], int64(t.Misses))
		cols[2] = append(cols[2], int64(t.Invalid))
	}
	return models, cols
}

// mergeByIndex returns recs sorted by index with one record per index: of several, the last, unless it is a
// failure and an earlier one is an answer (the rule of the upsert, applied within the batch). recs is not
// modified.
func mergeByIndex(recs []Record) []Record {
	out := slices.Clone(recs)
	// A stable sort keeps the records of one index in the order given.
	slices.SortStableFunc(out, func(a, b Record) int { return a.Index - b.Index })
	w := -1
	for _, r := range out {
		switch {
		case w < 0 || out[w].Index != r.Index:
			w++
			out[w] = r
		case r.Status != StatusFailed || out[w].Status == StatusFailed:
			out[w] = r
		}
	}
	return out[:w+1]
}

// Records returns the recorded cells of a run with start <= index < end, by index. Every record is a finished
// cell: a cell whose call failed transiently is left unrecorded, to be run again.
func (p *Postgres) Records(ctx context.Context, run string, start, end int) ([]Record, error) {
	rows, err := p.pool.Query(ctx, "SELECT "+recordColumnNames()+" FROM silico_cells WHERE run = $1 AND idx >= $2 AND idx < $3 ORDER BY idx",
		run, start, end)
	if err != nil {
		return nil, fmt.Errorf("store: records %s [%d,%d): %w", run, start, end, err)
	}
	defer rows.Close()
	out, err := scanRecords(rows, nil)
	if err != nil {
		return nil, fmt.Errorf("store: records %s [%d,%d): %w", run, start, end, err)
	}
	return out, nil
}

// Scan calls fn with every record of a run, by index, reading a page at a time so that a run of any size
// streams and no connection is held while fn runs. It stops at, and returns, fn's first error. Scan is not a
// snapshot: records written while it runs at indexes it has not reached yet are seen.
func (p *Postgres) Scan(ctx context.Context, run string, fn func(Record) error) error {
	return scanPaged(run, fn, func(after int, buf []Record) ([]Record, error) {
		rows, err := p.pool.Query(ctx, "SELECT "+recordColumnNames()+" FROM silico_cells WHERE run = $1 AND idx > $2 ORDER BY idx LIMIT $3",
			run, after, scanPage)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		return scanRecords(rows, buf)
	})
}

// Counts returns the per-status counts and the token and cost sums of a run's records (a cell answered from the
// cache adds its cost to SavedUSD, not to CostUSD, and no tokens). A run without records
// has zero counts. Costs are added up as whole picodollars (picoCost), so they are the exact sums of the
// records' costs.
func (p *Postgres) Counts(ctx context.Context, run string) (Counts, error) {
	var c Counts
	err := p.pool.QueryRow(ctx, `SELECT count(*),
		count(*) FILTER (WHERE status = $2), count(*) FILTER (WHERE status = $3), count(*) FILTER (WHERE status = $4),
		count(*) FILTER (WHERE cached),
		coalesce(sum(prompt_tokens) FILTER (WHERE NOT cached), 0)::bigint,
		coalesce(sum(completion_tokens) FILTER (WHERE NOT cached), 0)::bigint,
		coalesce(sum(`+picoCost+`) FILTER (WHERE NOT cached), 0)::bigint,
		coalesce(sum(`+picoCost+`) FILTER (WHERE cached), 0)::bigint
		FROM silico_cells WHERE run = $1`, run, StatusOK, StatusUnparsed, StatusFailed).
		Scan(&c.Records, &c.OK, &c.Unparsed, &c.Failed, &c.Cached, &c.PromptTokens, &c.CompletionTokens,
			(*int64)(&c.CostUSD), (*int64)(&c.SavedUSD))
	if err != nil {
		return Counts{}, fmt.Errorf("store: counts %s: %w", run, err)
	}
	return c, nil
}

// DeleteFailed removes the failed records of a run, so that its cells are called again, and returns how many
// there were. Their requests and tries are kept (silico_cell_carry) in the same transaction: the cells' next
// records add to them. A record's counts already include what was carried into it, so they replace the carried
// ones.
func (p *Postgres) DeleteFailed(ctx context.Context, run string) (int, error) {
	var n int64
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO silico_cell_carry (run, idx, attempts, tries)
			SELECT run, idx, attempts, tries FROM silico_cells
			WHERE run = $1 AND status = $2 AND (attempts > 0 OR tries > 0)
			ON CONFLICT (run, idx) DO UPDATE SET attempts = excluded.attempts, tries = excluded.tries`, run, StatusFailed); err != nil {
			return fmt.Errorf("keep their counts: %w", err)
		}
		tag, err := tx.Exec(ctx, "DELETE FROM silico_cells WHERE run = $1 AND status = $2", run, StatusFailed)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: delete failed %s: %w", run, err)
	}
	return int(n), nil
}

// DeleteRun removes a run and all its records. Deleting a run that does not exist is not an error.
func (p *Postgres) DeleteRun(ctx context.Context, run string) error {
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM silico_cells WHERE run = $1", run); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM silico_run_state WHERE run = $1", run); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM silico_cell_carry WHERE run = $1", run); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "DELETE FROM silico_runs WHERE run = $1", run)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete run %s: %w", run, err)
	}
	return nil
}
