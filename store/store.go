package store

import (
	"context"
	"strings"
	"time"
)

// Store is a results store: a SQLite file on one machine, or a PostgreSQL database that workers on many machines
// share. Open returns the one a DSN names. Its consumers declare the subsets they use; this is the whole of it.
//
// Every method is safe for use by several goroutines, and several processes may use one store at once.
type Store interface {
	// SaveRun records the spec of a run; saving the same bytes again is a no-op, different bytes an error.
	SaveRun(ctx context.Context, run string, spec []byte) error
	// LoadRun returns the spec saved by SaveRun, or an error wrapping ErrNotFound.
	LoadRun(ctx context.Context, run string) ([]byte, error)
	// Put writes records of a run in one transaction; a record replaces an earlier one with the same index.
	Put(ctx context.Context, run string, recs []Record) error
	// Records returns the records with start <= index < end, by index.
	Records(ctx context.Context, run string, start, end int) ([]Record, error)
	// Scan calls fn with every record of a run, by index, a page at a time.
	Scan(ctx context.Context, run string, fn func(Record) error) error
	// Counts sums up the records of a run.
	Counts(ctx context.Context, run string) (Counts, error)
	// DeleteFailed removes a run's failed records, so that their cells are called again, and counts them.
	DeleteFailed(ctx context.Context, run string) (int, error)
	// SetElapsed records a run's wall time, for exports made later from the store alone.
	SetElapsed(ctx context.Context, run string, d time.Duration) error
	// Elapsed returns what SetElapsed recorded, else the time since the run was created.
	Elapsed(ctx context.Context, run string, now time.Time) (time.Duration, error)
	// Runs lists the runs, newest first, with the state a starter last recorded for each.
	Runs(ctx context.Context) ([]RunInfo, error)
	// SetRunState records the state of a run (RunRunning, RunCompleted, ...) at a time.
	SetRunState(ctx context.Context, run, state string, at time.Time) error
	// DeleteRun removes a run and its records.
	DeleteRun(ctx context.Context, run string) error
	// Location says where the store is, for messages: a file path, or a URL without its password.
	Location() string
	// Close releases the store. Writers of the store must be closed first.
	Close() error
	// Cache is the response cache the store keeps beside the results.
	Cache
}

var (
	_ Store = (*SQLite)(nil)
	_ Store = (*Postgres)(nil)
)

// IsPostgres reports whether dsn names a PostgreSQL database (a postgres:// or postgresql:// URL) rather than a
// SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// DefaultDir and FileName place the SQLite results store when nothing names another: FileName in DefaultDir. The
// starter's state dir defaults to DefaultDir and the worker's store to the file there, so a worker and a starter
// on one machine meet in the same store.
const (
	DefaultDir = ".silico"
	FileName   = "results.db"
)

// EnvDSN is the environment variable that names the results store (a DSN as Open takes it) when no --store flag
// does; the worker and the starter read it.
const EnvDSN = "SILICO_STORE"

// DSN is the results store a command line names: flag (--store) when given, else the value of EnvDSN in getenv,
// else fallback.
func DSN(flag string, getenv func(string) string, fallback string) string {
	for _, v := range []string{flag, getenv(EnvDSN)} {
		if v != "" {
			return v
		}
	}
	return fallback
}

// Open opens the results store dsn names: a postgres:// or postgresql:// URL opens PostgreSQL (OpenPostgres),
// anything else is the path of a SQLite file (OpenSQLite). Either creates or migrates its schema.
func Open(ctx context.Context, dsn string) (Store, error) {
	if IsPostgres(dsn) {
		return OpenPostgres(ctx, dsn)
	}
	return OpenSQLite(ctx, dsn)
}
