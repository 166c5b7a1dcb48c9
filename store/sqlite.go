package store

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// schemaVersion is stored in PRAGMA user_version. OpenSQLite refuses a file written by a newer schema and
// migrates an older one (see migrations).
const schemaVersion = 10

// migrations[v] brings a file of schema version v+1 to v+2. A new file gets the current schema at once.
var migrations = []string{
	// 1 → 2: the provider's error code of a failed cell; the run's elapsed time (unknown, 0, for the runs a
	// version 1 file holds: they may have ended long ago, so the time since their creation would be wrong).
	`ALTER TABLE cells ADD COLUMN error_code TEXT NOT NULL DEFAULT '';
	 ALTER TABLE runs ADD COLUMN elapsed_ms INTEGER;
	 UPDATE runs SET elapsed_ms = 0;`,
	// 2 → 3: the response cache, whose tables the schema creates.
	`SELECT 1;`,
	// 3 → 4: the digests of the pictures a cell sent.
	`ALTER TABLE cells ADD COLUMN image_sha256 TEXT NOT NULL DEFAULT '';`,
	// 4 → 5: why generation stopped, whether a json_schema answer held, and the option probabilities.
	`ALTER TABLE cells ADD COLUMN finish_reason TEXT NOT NULL DEFAULT '';
	 ALTER TABLE cells ADD COLUMN schema TEXT NOT NULL DEFAULT '';
	 ALTER TABLE cells ADD COLUMN probs TEXT NOT NULL DEFAULT '';
	 ALTER TABLE cells ADD COLUMN coverage REAL NOT NULL DEFAULT 0;`,
	// 5 → 6: the elapsed time moves out of the runs row (see run_elapsed in schema).
	`CREATE TABLE run_elapsed (run TEXT PRIMARY KEY, elapsed_ms INTEGER NOT NULL);
	 INSERT INTO run_elapsed (run, elapsed_ms) SELECT run, elapsed_ms FROM runs WHERE elapsed_ms IS NOT NULL;
	 ALTER TABLE runs DROP COLUMN elapsed_ms;`,
	// 6 → 7: the tries charged to a cell, apart from the requests sent (0, unknown, in the rows already
	// written), and the counts of the failed records DeleteFailed removed (see cell_carry in schema).
	`ALTER TABLE cells ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;
	 CREATE TABLE cell_carry (run TEXT NOT NULL, idx INTEGER NOT NULL, attempts INTEGER NOT NULL,
	   tries INTEGER NOT NULL, PRIMARY KEY (run, idx)) WITHOUT ROWID;`,
	// 7 → 8: the state a starter last recorded for a run (see run_state in schema).
	`CREATE TABLE run_state (run TEXT PRIMARY KEY, state TEXT NOT NULL, at TEXT NOT NULL);`,
	// 8 → 9: the raw sum of a verbalized answer's stated probabilities (0 in the rows already written: none
	// was verbalized).
	`ALTER TABLE cells ADD COLUMN probs_sum REAL NOT NULL DEFAULT 0;`,
	// 9 → 10: the model the provider says answered and its system fingerprint (unknown, '', in the rows already
	// written).
	`ALTER TABLE cells ADD COLUMN served_model TEXT NOT NULL DEFAULT '';
	 ALTER TABLE cells ADD COLUMN system_fingerprint TEXT NOT NULL DEFAULT '';`,
}

// mmapSize is the most of a store's file that each connection maps into memory: none. Mapped pages count in the
// process's resident memory once read, once per connection, so a run's memory would grow with its store (a
// 1,000,000-cell run peaked at 453 MB with 64 MB per connection); reads go through SQLite's page cache instead.
const mmapSize = 0

// busyTimeout is how long a statement waits for another connection or process holding the write lock.
// A batch of a few hundred records commits in milliseconds, so this is only reached when something is stuck.
const busyTimeout = 30 * time.Second

const schema = `
CREATE TABLE IF NOT EXISTS runs (
	run     TEXT PRIMARY KEY,
	spec    BLOB,
	created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
-- elapsed_ms is a run's wall time as its workflow measured it when it exported. It has a table of its own because
-- SQLite rewrites a whole row on any update: in the runs row, recording it rewrote the saved spec (tens of
-- megabytes for a large item bank, all of it in memory at once).
CREATE TABLE IF NOT EXISTS run_elapsed (
	run        TEXT PRIMARY KEY,
	elapsed_ms INTEGER NOT NULL
);
-- state is what a starter last saw of the run (running, completed, failed, cancelled, ...), at when it saw it, so
-- that runs can be listed without a Temporal server.
CREATE TABLE IF NOT EXISTS run_state (
	run   TEXT PRIMARY KEY,
	state TEXT NOT NULL,
	at    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
	run               TEXT    NOT NULL REFERENCES runs(run) ON DELETE CASCADE,
	idx               INTEGER NOT NULL,
	status            TEXT    NOT NULL,
	option_id         TEXT    NOT NULL DEFAULT '',
	raw               TEXT    NOT NULL DEFAULT '',
	candidates        TEXT    NOT NULL DEFAULT '',
	error_class       TEXT    NOT NULL DEFAULT '',
	error_code        TEXT    NOT NULL DEFAULT '',
	error_message     TEXT    NOT NULL DEFAULT '',
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	cost_usd          REAL    NOT NULL DEFAULT 0,
	latency_ms        REAL    NOT NULL DEFAULT 0,
	attempts          INTEGER NOT NULL DEFAULT 0,
	cached            INTEGER NOT NULL DEFAULT 0,
	image_sha256      TEXT    NOT NULL DEFAULT '',
	finish_reason     TEXT    NOT NULL DEFAULT '',
	schema            TEXT    NOT NULL DEFAULT '',
	-- probs: the option probabilities, in the item's option order, comma-separated (see EncodeProbs).
	probs             TEXT    NOT NULL DEFAULT '',
	coverage          REAL    NOT NULL DEFAULT 0,
	tries             INTEGER NOT NULL DEFAULT 0,
	-- probs_sum: the sum of a verbalized answer's stated probabilities before normalising; 0 otherwise.
	probs_sum         REAL    NOT NULL DEFAULT 0,
	served_model      TEXT    NOT NULL DEFAULT '',
	system_fingerprint TEXT   NOT NULL DEFAULT '',
	PRIMARY KEY (run, idx)
) WITHOUT ROWID;
-- cell_carry keeps the requests and tries of a failed cell whose record DeleteFailed removed (--retry-failed),
-- so that the cell's next record adds to them instead of starting over: every write of a cell's record adds the
-- carried counts, and DeleteFailed replaces them with the removed record's (which already include them).
CREATE TABLE IF NOT EXISTS cell_carry (
	run      TEXT    NOT NULL,
	idx      INTEGER NOT NULL,
	attempts INTEGER NOT NULL,
	tries    INTEGER NOT NULL,
	PRIMARY KEY (run, idx)
) WITHOUT ROWID;
-- The response cache: one answer per request digest, written by run at created (Unix milliseconds).
CREATE TABLE IF NOT EXISTS cache (
	key     BLOB    PRIMARY KEY,
	model   TEXT    NOT NULL,
	value   BLOB    NOT NULL,
	sum     BLOB    NOT NULL,
	run     TEXT    NOT NULL,
	created INTEGER NOT NULL
) WITHOUT ROWID;
-- Lookups of the cache by model name.
CREATE TABLE IF NOT EXISTS cache_tally (
	model   TEXT    PRIMARY KEY,
	hits    INTEGER NOT NULL DEFAULT 0,
	misses  INTEGER NOT NULL DEFAULT 0,
	invalid INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
`

// SQLite is the results store in one SQLite file (WAL mode). It is safe for use by several goroutines, and
// several processes (a worker and a starter exporting results) may open the same file at once: writes take
// the write lock when their transaction begins and wait up to a busy timeout for it.
type SQLite struct {
	db   *sql.DB
	path string
	// writeSem serializes this process's write transactions, so that they queue in Go instead of polling
	// SQLite's busy handler (which sleeps in steps of milliseconds). Other processes still meet busy_timeout.
	writeSem chan struct{}
	// claims is the response cache's claims, in a file of their own beside the store (path + ".claims"): a
	// pass claims before it calls, so a claim must never wait behind a commit of results, and SQLite has one
	// write lock per file. Claims are short-lived and need no migration: the file can be deleted when no worker
	// runs.
	claims *sql.DB
	// claimSem is writeSem of the claims file.
	claimSem chan struct{}
	// lookups are the prepared cache lookups, by the number of keys they take (see CacheGet).
	lookupMu sync.Mutex
	lookups  map[int]*sql.Stmt
	// claimStmts are the prepared claims on the claims file, by the number of keys they take (CacheClaim).
	claimStmts map[int]*sql.Stmt
	// writes are Write's statements, prepared once: preparing them in every transaction cost more than the
	// rows of a small group commit.
	writes writeStmts
	// wal is the write-ahead log's file. walLimit is the size from which a writer truncates it (the constant
	// walLimit; tests lower it), trimAt the size at which it tries next (see trimWAL); both under writeSem.
	wal      string
	walLimit int64
	trimAt   int64
}

// writeStmts are the statements of Write. database/sql prepares each on a connection the first time a
// transaction on that connection uses it (Tx.StmtContext) and keeps it there.
type writeStmts struct {
	run, cell, carried, hasCarry, cache, tally *sql.Stmt
}

func (w *writeStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		st    **sql.Stmt
		query string
	}{
		{&w.run, "INSERT INTO runs (run) VALUES (?) ON CONFLICT (run) DO NOTHING"},
		{&w.cell, sqliteUpsert(false)},
		{&w.carried, sqliteUpsert(true)},
		{&w.hasCarry, "SELECT EXISTS (SELECT 1 FROM cell_carry WHERE run = ?)"},
		{&w.cache, putCacheQuery},
		{&w.tally, addTallyQuery},
	} {
		st, err := db.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.st = st
	}
	return nil
}

func (w *writeStmts) close() {
	for _, st := range []*sql.Stmt{w.run, w.cell, w.carried, w.hasCarry, w.cache, w.tally} {
		if st != nil {
			_ = st.Close()
		}
	}
}

// OpenSQLite opens the store at path, creating its directory, the file and the schema when they do not exist.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("store: open: empty path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("store: open %s: path must not contain '?'", path)
	}
	// Absolute, so that the driver never reads the name as a "file:" URI.
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db, err := openSQLiteDB(abs)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	claims, err := openSQLiteDB(abs + ".claims")
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &SQLite{db: db, path: path, writeSem: make(chan struct{}, 1), claims: claims, claimSem: make(chan struct{}, 1),
		wal: abs + "-wal", walLimit: walLimit, trimAt: walLimit}
	if err := s.migrate(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if _, err := claims.ExecContext(ctx, claimsSchema); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("store: open %s: claims: %w", path, err)
	}
	if err := s.writes.prepare(ctx, db); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return s, nil
}

// claimsSchema is the claims file's: claims on requests being called, by owner (a run's pass), until expires
// (Unix milliseconds).
const claimsSchema = `CREATE TABLE IF NOT EXISTS cache_claims (
	key     BLOB    PRIMARY KEY,
	owner   TEXT    NOT NULL,
	expires INTEGER NOT NULL
) WITHOUT ROWID`

// openSQLiteDB opens the SQLite file at the absolute path abs. Every pooled connection applies these pragmas
// when it is opened. _txlock=immediate makes BEGIN take the write lock at once, so two writers never deadlock
// upgrading a read lock (which busy_timeout cannot resolve). mmap_size: see mmapSize.
func openSQLiteDB(abs string) (*sql.DB, error) {
	dsn := abs + fmt.Sprintf("?_pragma=busy_timeout(%d)", busyTimeout.Milliseconds()) +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate" +
		fmt.Sprintf("&_pragma=mmap_size(%d)", mmapSize)
	return sql.Open("sqlite", dsn)
}

// beginWrite starts a write transaction once this process's earlier write transactions have ended. The
// returned end function rolls back (a no-op after Commit) and lets the next writer in.
func (s *SQLite) beginWrite(ctx context.Context) (tx *sql.Tx, end func(), err error) {
	return beginWriteOn(ctx, s.db, s.writeSem)
}

// beginClaims is beginWrite on the claims file.
func (s *SQLite) beginClaims(ctx context.Context) (tx *sql.Tx, end func(), err error) {
	return beginWriteOn(ctx, s.claims, s.claimSem)
}

func beginWriteOn(ctx context.Context, db *sql.DB, sem chan struct{}) (tx *sql.Tx, end func(), err error) {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		<-sem
		return nil, nil, err
	}
	return tx, func() { _ = tx.Rollback(); <-sem }, nil
}

func (s *SQLite) migrate(ctx context.Context) error {
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer end()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > schemaVersion {
		return fmt.Errorf("schema version %d is newer than this program's %d: upgrade silico", v, schemaVersion)
	}
	var tables int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'cells'").Scan(&tables); err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if tables > 0 {
		if v == 0 {
			v = 1 // the first schema did not always record its version
		}
		for ; v < schemaVersion; v++ {
			if _, err := tx.ExecContext(ctx, migrations[v-1]); err != nil {
				return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("write schema version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit schema: %w", err)
	}
	return nil
}

// Path is the file the store was opened on.
func (s *SQLite) Path() string { return s.path }

// Location is the file the store was opened on.
func (s *SQLite) Location() string { return s.path }

// Close closes the store. Writers of the store must be closed first.
func (s *SQLite) Close() error {
	s.lookupMu.Lock()
	for _, st := range s.lookups {
		_ = st.Close()
	}
	for _, st := range s.claimStmts {
		_ = st.Close()
	}
	s.lookups, s.claimStmts = nil, nil
	s.lookupMu.Unlock()
	s.writes.close()
	_ = s.claims.Close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}

// SaveRun records the spec of a run (its canonical bytes). Saving the same bytes again is a no-op; saving
// different bytes under an existing run is an error, since the run's records would no longer match its spec.
func (s *SQLite) SaveRun(ctx context.Context, run string, spec []byte) error {
	if run == "" {
		return errors.New("store: save run: empty run id")
	}
	if spec == nil {
		spec = []byte{}
	}
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: save run %s: %w", run, err)
	}
	defer end()
	var old []byte
	err = tx.QueryRowContext(ctx, "SELECT spec FROM runs WHERE run = ?", run).Scan(&old)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, "INSERT INTO runs (run, spec) VALUES (?, ?)", run, spec)
	case err != nil:
	case old == nil: // created by Put before the spec was saved
		_, err = tx.ExecContext(ctx, "UPDATE runs SET spec = ? WHERE run = ?", spec, run)
	case bytes.Equal(old, spec):
		return nil
	default:
		return fmt.Errorf("store: save run %s: %w", run, ErrSpecConflict)
	}
	if err != nil {
		return fmt.Errorf("store: save run %s: %w", run, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: save run %s: commit: %w", run, err)
	}
	return nil
}

// LoadRun returns the spec bytes saved by SaveRun, or ErrNotFound.
func (s *SQLite) LoadRun(ctx context.Context, run string) ([]byte, error) {
	var spec []byte
	err := s.db.QueryRowContext(ctx, "SELECT spec FROM runs WHERE run = ?", run).Scan(&spec)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && spec == nil) {
		return nil, fmt.Errorf("store: load run %s: %w", run, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: load run %s: %w", run, err)
	}
	return spec, nil
}

// SetElapsed records the wall time of a run (from its start to its export), for exports made later from the
// store alone. The run need not exist yet.
func (s *SQLite) SetElapsed(ctx context.Context, run string, d time.Duration) error {
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: set elapsed %s: %w", run, err)
	}
	defer end()
	if _, err := tx.ExecContext(ctx, "INSERT INTO runs (run) VALUES (?) ON CONFLICT (run) DO NOTHING", run); err != nil {
		return fmt.Errorf("store: set elapsed %s: %w", run, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO run_elapsed (run, elapsed_ms) VALUES (?, ?)
		ON CONFLICT (run) DO UPDATE SET elapsed_ms = excluded.elapsed_ms`, run, d.Milliseconds()); err != nil {
		return fmt.Errorf("store: set elapsed %s: %w", run, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: set elapsed %s: commit: %w", run, err)
	}
	return nil
}

// Elapsed returns the wall time of a run: what SetElapsed recorded, else (a run still going, or one that never
// exported) the time since the run was created in the store. ErrNotFound when the run does not exist.
func (s *SQLite) Elapsed(ctx context.Context, run string, now time.Time) (time.Duration, error) {
	var ms sql.NullInt64
	var created string
	err := s.db.QueryRowContext(ctx, `SELECT e.elapsed_ms, r.created FROM runs r LEFT JOIN run_elapsed e ON e.run = r.run
		WHERE r.run = ?`, run).Scan(&ms, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: elapsed of %s: %w", run, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("store: elapsed of %s: %w", run, err)
	}
	if ms.Valid {
		return time.Duration(ms.Int64) * time.Millisecond, nil
	}
	t, err := time.Parse("2006-01-02T15:04:05.999Z", created)
	if err != nil {
		return 0, fmt.Errorf("store: elapsed of %s: created %q: %w", run, created, err)
	}
	return max(0, now.Sub(t)), nil
}

// Put writes the records of a run in one transaction: all of them are durable when it returns nil, none when
// it returns an error. A record replaces an earlier one with the same index, except that a failed record never
// replaces an answer (ok or unparsed): an answer was paid for, and a give-up written late by a stale attempt or
// by the workflow must not erase it. Within recs, the last one wins by the same rule. The run need not have been
// saved first.
func (s *SQLite) Put(ctx context.Context, run string, recs []Record) error {
	return s.Write(ctx, run, Batch{Records: recs})
}

// Write makes a batch durable in one transaction: its records as Put writes them, its cache entries (each
// replacing any entry of its key) and its lookup counts.
func (s *SQLite) Write(ctx context.Context, run string, b Batch) error {
	if b.empty() {
		return nil
	}
	if err := checkBatch(run, b); err != nil {
		return err
	}
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: put %s: begin: %w", run, err)
	}
	defer end()
	// The rows' statements run without ctx's cancellation: with a cancellable context the driver starts a
	// goroutine per statement to interrupt it, which cost more than a row. Cancelling ctx still ends the
	// transaction: database/sql rolls it back, after the statement running (microseconds: the write lock is
	// taken at BEGIN, so no row waits for another writer).
	rows := context.WithoutCancel(ctx)
	if err := putCells(rows, tx, s.writes, run, b.Records); err != nil {
		return fmt.Errorf("store: put %s: %w", run, err)
	}
	if err := putCache(rows, tx, s.writes.cache, b.Cache); err != nil {
		return fmt.Errorf("store: put %s: cache: %w", run, err)
	}
	if err := addTally(rows, tx, s.writes.tally, b.Tally); err != nil {
		return fmt.Errorf("store: put %s: cache lookups: %w", run, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: put %s: commit %d records, %d cache entries: %w", run, len(b.Records), len(b.Cache), err)
	}
	s.trimWAL(rows)
	return nil
}

// walLimit is the size of the write-ahead log from which a writer checkpoints it and truncates it (trimWAL).
const walLimit = 64 << 20

// trimBusy is how long trimWAL's checkpoint waits for the readers of the log before it gives up until later.
const trimBusy = 100 * time.Millisecond

// trimWAL checkpoints the write-ahead log and truncates it once it reaches its limit. SQLite's automatic
// checkpoint (PASSIVE, every 1,000 pages) copies the log into the database, but the log starts over only at a
// moment when no reader uses it, and a run has lookups and progress queries going on all the time: without this
// the log grew to 60 GB in a 10,000,000-cell run, beside a 2.9 GB database, and its index, which every connection
// maps into memory, to 111 MB. A TRUNCATE checkpoint waits for the readers that still use the log and keeps
// writers out while it does, so it runs on a connection of its own with a short busy timeout (trimBusy): a
// reader that takes longer (a scan of a large run) makes it give up, and it is tried again once the log has
// grown by another quarter of the limit, never holding the writers for long. The caller holds writeSem, so this
// process's writers queue here rather than in SQLite's busy handler. Nothing here fails the write that committed.
func (s *SQLite) trimWAL(ctx context.Context) {
	fi, err := os.Stat(s.wal)
	if err != nil || fi.Size() < s.trimAt {
		return
	}
	s.trimAt = fi.Size() + s.walLimit/4
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", trimBusy.Milliseconds())); err != nil {
		return
	}
	// The connection goes back to the pool with the store's busy timeout, or not at all.
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeout.Milliseconds())); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	var busy, logFrames, done int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil || busy != 0 {
		return
	}
	s.trimAt = s.walLimit
}

// sqliteUpsert is SQLite's write of one record: ?1 the run, ?2... the values of recordColumns (recordArgs).
// With carried, the carried columns add what cell_carry keeps of the cell, by a lookup of the carry table's
// primary key.
func sqliteUpsert(carried bool) string {
	var b strings.Builder
	b.WriteString("INSERT INTO cells (run, " + recordColumnNames() + ")\nVALUES (?1")
	param := func(i int) string { return "?" + strconv.Itoa(i+2) }
	key := param(slices.IndexFunc(recordColumns, func(c recordColumn) bool { return c.name == keyColumn }))
	for i, c := range recordColumns {
		p := param(i)
		if carried && c.carried {
			p += fmt.Sprintf(" + coalesce((SELECT %s FROM cell_carry WHERE run = ?1 AND %s = %s), 0)", c.name, keyColumn, key)
		}
		b.WriteString(", " + p)
	}
	b.WriteString(")")
	b.WriteString(upsertSet("cells"))
	return b.String()
}

// recordArgs are the parameters of sqliteUpsert for record r of run, in args (reused from record to record).
func recordArgs(args []any, run string, r *Record) []any {
	args = append(args[:0], run)
	for _, c := range recordColumns {
		args = append(args, c.value(r))
	}
	return args
}

// putCells writes recs in tx, one upsert (sqliteUpsert) per record. The carried form, which looks up what
// cell_carry keeps of each cell, is used only when the run has carried counts, asked once per batch: a run that
// was never retried is spared the lookups.
func putCells(ctx context.Context, tx *sql.Tx, ws writeStmts, run string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	if _, err := tx.StmtContext(ctx, ws.run).ExecContext(ctx, run); err != nil {
		return err
	}
	var carry bool
	if err := tx.StmtContext(ctx, ws.hasCarry).QueryRowContext(ctx, run).Scan(&carry); err != nil {
		return fmt.Errorf("carried counts: %w", err)
	}
	stmt := tx.StmtContext(ctx, ws.cell)
	if carry {
		stmt = tx.StmtContext(ctx, ws.carried)
	}
	var args []any
	for i := range recs {
		r := &recs[i]
		args = recordArgs(args, run, r)
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("cell %d: %w", r.Index, err)
		}
	}
	return nil
}

// Records returns the recorded cells of a run with start <= index < end, by index. Every record is a finished
// cell: a cell whose call failed transiently is left unrecorded, to be run again.
func (s *SQLite) Records(ctx context.Context, run string, start, end int) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+recordColumnNames()+" FROM cells WHERE run = ? AND idx >= ? AND idx < ? ORDER BY idx",
		run, start, end)
	if err != nil {
		return nil, fmt.Errorf("store: records %s [%d,%d): %w", run, start, end, err)
	}
	defer func() { _ = rows.Close() }()
	out, err := scanRecords(rows, nil)
	if err != nil {
		return nil, fmt.Errorf("store: records %s [%d,%d): %w", run, start, end, err)
	}
	return out, nil
}

// Scan calls fn with every record of a run, by index, reading a page at a time so that a run of any size
// streams. It stops at, and returns, fn's first error. Scan is not a snapshot: records written while it runs
// at indexes it has not reached yet are seen.
func (s *SQLite) Scan(ctx context.Context, run string, fn func(Record) error) error {
	return scanPaged(run, fn, func(after int, buf []Record) ([]Record, error) {
		rows, err := s.db.QueryContext(ctx, "SELECT "+recordColumnNames()+" FROM cells WHERE run = ? AND idx > ? ORDER BY idx LIMIT ?",
			run, after, scanPage)
		if err != nil {
			return nil, err
		}
		defer func() { _ = rows.Close() }()
		return scanRecords(rows, buf)
	})
}

// Counts returns the per-status counts and the token and cost sums of a run's records (a cell answered from the
// cache adds its cost to SavedUSD, not to CostUSD, and no tokens). A run without records
// has zero counts. Costs are added up as whole picodollars (picoCost), so they are the exact sums of the
// records' costs.
func (s *SQLite) Counts(ctx context.Context, run string) (Counts, error) {
	var c Counts
	err := s.db.QueryRowContext(ctx, `SELECT count(*),
		coalesce(sum(status = ?), 0), coalesce(sum(status = ?), 0), coalesce(sum(status = ?), 0), coalesce(sum(cached), 0),
		coalesce(sum(prompt_tokens * (cached = 0)), 0), coalesce(sum(completion_tokens * (cached = 0)), 0),
		coalesce(sum(`+picoCost+` * (cached = 0)), 0), coalesce(sum(`+picoCost+` * cached), 0)
		FROM cells WHERE run = ?`, StatusOK, StatusUnparsed, StatusFailed, run).
		Scan(&c.Records, &c.OK, &c.Unparsed, &c.Failed, &c.Cached, &c.PromptTokens, &c.CompletionTokens,
			(*int64)(&c.CostUSD), (*int64)(&c.SavedUSD))
	if err != nil {
		return Counts{}, fmt.Errorf("store: counts %s: %w", run, err)
	}
	return c, nil
}

// DeleteFailed removes the failed records of a run, so that its cells are called again, and returns how many
// there were. Their requests and tries are kept (cell_carry): the cells' next records add to them.
func (s *SQLite) DeleteFailed(ctx context.Context, run string) (int, error) {
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: delete failed %s: %w", run, err)
	}
	defer end()
	if _, err := tx.ExecContext(ctx, carryFailed, run, StatusFailed); err != nil {
		return 0, fmt.Errorf("store: delete failed %s: keep their counts: %w", run, err)
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM cells WHERE run = ? AND status = ?", run, StatusFailed)
	if err != nil {
		return 0, fmt.Errorf("store: delete failed %s: %w", run, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: delete failed %s: %w", run, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: delete failed %s: commit: %w", run, err)
	}
	return int(n), nil
}

// carryFailed keeps the counts of a run's failed records (?1, status ?2) in cell_carry before they are deleted.
// A record's counts already include what was carried into it, so they replace the carried ones.
const carryFailed = `INSERT INTO cell_carry (run, idx, attempts, tries)
SELECT run, idx, attempts, tries FROM cells WHERE run = ?1 AND status = ?2 AND (attempts > 0 OR tries > 0)
ON CONFLICT (run, idx) DO UPDATE SET attempts = excluded.attempts, tries = excluded.tries`

// DeleteRun removes a run and all its records. Deleting a run that does not exist is not an error.
func (s *SQLite) DeleteRun(ctx context.Context, run string) error {
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: delete run %s: %w", run, err)
	}
	defer end()
	if _, err := tx.ExecContext(ctx, "DELETE FROM cells WHERE run = ?", run); err != nil {
		return fmt.Errorf("store: delete run %s: %w", run, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM cell_carry WHERE run = ?", run); err != nil {
		return fmt.Errorf("store: delete run %s: %w", run, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM run_elapsed WHERE run = ?", run); err != nil {
		return fmt.Errorf("store: delete run %s: %w", run, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM run_state WHERE run = ?", run); err != nil {
		return fmt.Errorf("store: delete run %s: %w", run, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM runs WHERE run = ?", run); err != nil {
		return fmt.Errorf("store: delete run %s: %w", run, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: delete run %s: commit: %w", run, err)
	}
	return nil
}
