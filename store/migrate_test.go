package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// schemaV1 is the schema of version 1 files, as that version created them.
const schemaV1 = `
CREATE TABLE runs (
	run     TEXT PRIMARY KEY,
	spec    BLOB,
	created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE cells (
	run               TEXT    NOT NULL REFERENCES runs(run) ON DELETE CASCADE,
	idx               INTEGER NOT NULL,
	status            TEXT    NOT NULL,
	option_id         TEXT    NOT NULL DEFAULT '',
	raw               TEXT    NOT NULL DEFAULT '',
	candidates        TEXT    NOT NULL DEFAULT '',
	error_class       TEXT    NOT NULL DEFAULT '',
	error_message     TEXT    NOT NULL DEFAULT '',
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	cost_usd          REAL    NOT NULL DEFAULT 0,
	latency_ms        REAL    NOT NULL DEFAULT 0,
	attempts          INTEGER NOT NULL DEFAULT 0,
	cached            INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run, idx)
) WITHOUT ROWID;
INSERT INTO runs (run, spec, created) VALUES ('old', '{}', '2025-01-02T03:04:05.000Z');
INSERT INTO cells (run, idx, status, error_class, error_message, attempts) VALUES ('old', 0, 'failed', 'RateLimited', 'slow down', 3);
PRAGMA user_version = 1;
`

func TestMigrateVersion1File(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, schemaV1); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("Open v1 file: %v", err)
	}
	got, err := s.Records(ctx, "old", 0, 10)
	if err != nil || len(got) != 1 || got[0].ErrorClass != "RateLimited" || got[0].ErrorMessage != "slow down" || got[0].ErrorCode != "" {
		t.Fatalf("old record after migration = %+v, %v", got, err)
	}
	// A run of the old file ended who knows when: its elapsed time is unknown (0), not the time since 2025.
	if d, err := s.Elapsed(ctx, "old", time.Now()); err != nil || d != 0 {
		t.Errorf("Elapsed(old) = %v, %v; want 0", d, err)
	}
	// The new column is written and read.
	r := Record{Index: 1, Status: StatusFailed, ErrorClass: "InvalidRequest", ErrorCode: "context_length_exceeded", Attempts: 1}
	if err := s.Put(ctx, "old", []Record{r}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Records(ctx, "old", 1, 2); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], r) {
		t.Fatalf("Records = %+v, %v; want %+v", got, err, r)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Errorf("user_version = %d, %v; want %d", v, err, schemaVersion)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Opening again neither migrates twice nor fails.
	s, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	_ = s.Close()

	// A file of a newer schema is refused.
	db, _ = sql.Open("sqlite", path)
	if _, err := db.ExecContext(ctx, "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a version 99 file = %v, want refused", err)
	}
}

func TestElapsed(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	if _, err := s.Elapsed(ctx, "none", time.Now()); err == nil {
		t.Error("Elapsed of a missing run: no error")
	}
	if err := s.SaveRun(ctx, "r", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	// Not exported yet: the time since the run was created.
	later := time.Now().Add(time.Hour)
	if d, err := s.Elapsed(ctx, "r", later); err != nil || d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("Elapsed before export = %v, %v; want about an hour", d, err)
	}
	if err := s.SetElapsed(ctx, "r", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Elapsed(ctx, "r", later); err != nil || d != 1500*time.Millisecond {
		t.Errorf("Elapsed = %v, %v; want 1.5s as recorded", d, err)
	}
	// SaveRun of the same spec keeps the recorded time.
	if err := s.SaveRun(ctx, "r", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Elapsed(ctx, "r", later); d != 1500*time.Millisecond {
		t.Errorf("Elapsed after SaveRun = %v", d)
	}
}

// TestMigrateVersion5Elapsed holds the 5 → 6 migration: the elapsed times a version 5 file kept in the runs row
// move to run_elapsed, a run without one still counts from its creation, and the saved spec stays.
func TestMigrateVersion5Elapsed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx, "ended", []byte(`{"name":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx, "going", []byte(`{"name":"y"}`)); err != nil {
		t.Fatal(err)
	}
	// Back to version 5's layout: elapsed_ms a column of runs (and version 6's: no tries, no cell_carry; no
	// run_state, which version 8 adds; no probs_sum, which version 9 adds).
	for _, q := range []string{
		"ALTER TABLE cells DROP COLUMN served_model",
		"ALTER TABLE cells DROP COLUMN system_fingerprint",
		"ALTER TABLE cells DROP COLUMN probs_sum",
		"DROP TABLE run_state",
		"DROP TABLE cell_carry",
		"ALTER TABLE cells DROP COLUMN tries",
		"DROP TABLE run_elapsed",
		"ALTER TABLE runs ADD COLUMN elapsed_ms INTEGER",
		"UPDATE runs SET elapsed_ms = 1234 WHERE run = 'ended'",
		"UPDATE runs SET created = '2025-01-01T00:00:00.000Z' WHERE run = 'going'",
		"PRAGMA user_version = 5",
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("open a version 5 file: %v", err)
	}
	defer func() { _ = s.Close() }()
	if d, err := s.Elapsed(ctx, "ended", time.Now()); err != nil || d != 1234*time.Millisecond {
		t.Errorf("Elapsed(ended) = %v, %v; want 1.234s", d, err)
	}
	now := time.Date(2025, 1, 1, 0, 1, 0, 0, time.UTC)
	if d, err := s.Elapsed(ctx, "going", now); err != nil || d != time.Minute {
		t.Errorf("Elapsed(going) = %v, %v; want 1m0s since its creation", d, err)
	}
	if b, err := s.LoadRun(ctx, "ended"); err != nil || string(b) != `{"name":"x"}` {
		t.Errorf("LoadRun(ended) = %q, %v", b, err)
	}
	var cols int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'elapsed_ms'").Scan(&cols); err != nil || cols != 0 {
		t.Errorf("runs still has elapsed_ms (%d, %v)", cols, err)
	}
	if err := s.SetElapsed(ctx, "going", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Elapsed(ctx, "going", now); err != nil || d != 5*time.Second {
		t.Errorf("Elapsed(going) after SetElapsed = %v, %v; want 5s", d, err)
	}
}

// TestMigrateVersion6Tries holds the 6 → 7 migration: the cells of a version 6 file keep their requests, get
// tries 0 (unknown), and a failed one deleted for --retry-failed carries its requests into its next record.
func TestMigrateVersion6Tries(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	old := []Record{{Index: 0, Status: StatusOK, OptionID: "a", Raw: "A", Attempts: 2},
		{Index: 1, Status: StatusFailed, ErrorClass: "ServerError", Attempts: 4}}
	if err := s.Put(ctx, "run", old); err != nil {
		t.Fatal(err)
	}
	// Back to version 6's layout: no tries column, no carry table, no run_state.
	for _, q := range []string{
		"ALTER TABLE cells DROP COLUMN served_model",
		"ALTER TABLE cells DROP COLUMN system_fingerprint",
		"ALTER TABLE cells DROP COLUMN probs_sum",
		"DROP TABLE run_state",
		"DROP TABLE cell_carry",
		"ALTER TABLE cells DROP COLUMN tries",
		"PRAGMA user_version = 6",
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("open a version 6 file: %v", err)
	}
	defer func() { _ = s.Close() }()
	got, err := s.Records(ctx, "run", 0, 2)
	if err != nil || !reflect.DeepEqual(got, old) {
		t.Fatalf("records after migration = %+v, %v; want %+v", got, err, old)
	}
	if _, err := s.DeleteFailed(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	again := Record{Index: 1, Status: StatusOK, OptionID: "b", Raw: "B", Attempts: 1, Tries: 1}
	if err := s.Put(ctx, "run", []Record{again}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Records(ctx, "run", 1, 2); err != nil || len(got) != 1 || got[0].Attempts != 5 || got[0].Tries != 1 {
		t.Fatalf("retried cell = %+v, %v; want attempts 4+1, tries 0+1", got, err)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Errorf("user_version = %d, %v; want %d", v, err, schemaVersion)
	}
}

// TestPostgresMigrateTries holds PostgreSQL's step 5 as TestMigrateVersion6Tries holds SQLite's: the rows of a
// schema without tries keep their requests and get tries 0, and a failed cell deleted for --retry-failed carries
// its requests into its next record.
func TestPostgresMigrateTries(t *testing.T) {
	ctx := context.Background()
	dsn := pgTestDSN(t)
	s, err := OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	old := Record{Index: 1, Status: StatusFailed, ErrorClass: "ServerError", Attempts: 4}
	if err := s.Put(ctx, "run", []Record{old}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	// Back to step 4's layout.
	for _, q := range []string{
		"DROP TABLE silico_cell_carry",
		"ALTER TABLE silico_cells DROP COLUMN tries",
		"DROP TABLE silico_run_state",
		"ALTER TABLE silico_cells DROP COLUMN probs_sum",
		"ALTER TABLE silico_cells DROP COLUMN served_model",
		"ALTER TABLE silico_cells DROP COLUMN system_fingerprint",
		"DELETE FROM silico_schema_version WHERE version >= 5",
	} {
		pgExec(t, dsn, q)
	}
	if s, err = OpenPostgres(ctx, dsn); err != nil {
		t.Fatalf("open a schema of step 4: %v", err)
	}
	defer func() { _ = s.Close() }()
	if got, err := s.Records(ctx, "run", 1, 2); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], old) {
		t.Fatalf("record after migration = %+v, %v; want %+v", got, err, old)
	}
	if _, err := s.DeleteFailed(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "run", []Record{{Index: 1, Status: StatusOK, OptionID: "b", Attempts: 1, Tries: 1}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Records(ctx, "run", 1, 2); err != nil || len(got) != 1 || got[0].Attempts != 5 || got[0].Tries != 1 {
		t.Fatalf("retried cell = %+v, %v; want attempts 4+1, tries 0+1", got, err)
	}
}

// TestMigrateVersion7RunState holds the 7 → 8 migration: a version 7 file gains run_state, its runs are listed
// with no state, and states can be recorded.
func TestMigrateVersion7RunState(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx, "r", []byte(`{"name":"x"}`)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE cells DROP COLUMN served_model", "ALTER TABLE cells DROP COLUMN system_fingerprint", "ALTER TABLE cells DROP COLUMN probs_sum", "DROP TABLE run_state", "PRAGMA user_version = 7"} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("open a version 7 file: %v", err)
	}
	defer func() { _ = s.Close() }()
	runs, err := s.Runs(ctx)
	if err != nil || len(runs) != 1 || runs[0].ID != "r" || runs[0].State != "" {
		t.Fatalf("Runs after the migration = %+v, %v; want run r without a state", runs, err)
	}
	if err := s.SetRunState(ctx, "r", RunCompleted, time.Now()); err != nil {
		t.Fatalf("SetRunState after the migration: %v", err)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", v, err, schemaVersion)
	}
}

// TestMigrateVersion8ProbsSum holds the 8 → 9 migration: a version 8 file gains probs_sum, its rows read back
// with 0 there, and a verbalized record's raw sum is written and read back.
func TestMigrateVersion8ProbsSum(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	old := Record{Index: 0, Status: StatusOK, OptionID: "a", Raw: "A", Probs: []float64{0.25, 0.75}, Coverage: 0.9, Attempts: 1}
	if err := s.Put(ctx, "run", []Record{old}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE cells DROP COLUMN served_model", "ALTER TABLE cells DROP COLUMN system_fingerprint", "ALTER TABLE cells DROP COLUMN probs_sum", "PRAGMA user_version = 8"} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("open a version 8 file: %v", err)
	}
	defer func() { _ = s.Close() }()
	if got, err := s.Records(ctx, "run", 0, 1); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], old) {
		t.Fatalf("record after migration = %+v, %v; want %+v", got, err, old)
	}
	stated := Record{Index: 1, Status: StatusOK, OptionID: "b", Probs: []float64{0.2, 0.8}, ProbsSum: 1.25, Attempts: 1}
	if err := s.Put(ctx, "run", []Record{stated}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Records(ctx, "run", 1, 2); err != nil || len(got) != 1 || got[0].ProbsSum != 1.25 {
		t.Fatalf("verbalized record = %+v, %v; want probs_sum 1.25", got, err)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", v, err, schemaVersion)
	}
}

// TestPostgresMigrateProbsSum holds PostgreSQL's step 7 as TestMigrateVersion8ProbsSum holds SQLite's.
func TestPostgresMigrateProbsSum(t *testing.T) {
	ctx := context.Background()
	dsn := pgTestDSN(t)
	s, err := OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	old := Record{Index: 0, Status: StatusOK, OptionID: "a", Probs: []float64{0.25, 0.75}, Attempts: 1}
	if err := s.Put(ctx, "run", []Record{old}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	pgExec(t, dsn, "ALTER TABLE silico_cells DROP COLUMN served_model")
	pgExec(t, dsn, "ALTER TABLE silico_cells DROP COLUMN system_fingerprint")
	pgExec(t, dsn, "ALTER TABLE silico_cells DROP COLUMN probs_sum")
	pgExec(t, dsn, "DELETE FROM silico_schema_version WHERE version >= 7")
	if s, err = OpenPostgres(ctx, dsn); err != nil {
		t.Fatalf("open a schema of step 6: %v", err)
	}
	defer func() { _ = s.Close() }()
	if got, err := s.Records(ctx, "run", 0, 1); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], old) {
		t.Fatalf("record after migration = %+v, %v; want %+v", got, err, old)
	}
	stated := Record{Index: 1, Status: StatusOK, OptionID: "b", Probs: []float64{0.2, 0.8}, ProbsSum: 1.25, Attempts: 1}
	if err := s.Put(ctx, "run", []Record{stated}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Records(ctx, "run", 1, 2); err != nil || len(got) != 1 || got[0].ProbsSum != 1.25 {
		t.Fatalf("verbalized record = %+v, %v; want probs_sum 1.25", got, err)
	}
}

// TestMigrateVersion9Provenance holds the 9 → 10 migration: the records of a version 9 file read with no served
// model or fingerprint (unknown), and records with them are written and read back whole.
func TestMigrateVersion9Provenance(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	old := Record{Index: 0, Status: StatusOK, OptionID: "a", Raw: "A", Attempts: 1, Tries: 1}
	if err := s.Put(ctx, "run", []Record{old}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE cells DROP COLUMN served_model",
		"ALTER TABLE cells DROP COLUMN system_fingerprint", "PRAGMA user_version = 9"} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = OpenSQLite(ctx, path); err != nil {
		t.Fatalf("open a version 9 file: %v", err)
	}
	defer func() { _ = s.Close() }()
	checkProvenanceMigrated(ctx, t, s, old)
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", v, err, schemaVersion)
	}
}

// TestPostgresMigrateProvenance holds PostgreSQL's last step as TestMigrateVersion9Provenance holds SQLite's.
func TestPostgresMigrateProvenance(t *testing.T) {
	ctx := context.Background()
	dsn := pgTestDSN(t)
	s, err := OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	old := Record{Index: 0, Status: StatusOK, OptionID: "a", Raw: "A", Attempts: 1, Tries: 1}
	if err := s.Put(ctx, "run", []Record{old}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	pgExec(t, dsn, "ALTER TABLE silico_cells DROP COLUMN served_model")
	pgExec(t, dsn, "ALTER TABLE silico_cells DROP COLUMN system_fingerprint")
	// The last step records version len(pgMigrations).
	pgExec(t, dsn, fmt.Sprintf("DELETE FROM silico_schema_version WHERE version >= %d", len(pgMigrations)))
	if s, err = OpenPostgres(ctx, dsn); err != nil {
		t.Fatalf("open a schema without provenance: %v", err)
	}
	defer func() { _ = s.Close() }()
	checkProvenanceMigrated(ctx, t, s, old)
}

// checkProvenanceMigrated checks that old, written before the migration, reads back as it was, and that a
// record with provenance is kept whole.
func checkProvenanceMigrated(ctx context.Context, t *testing.T, s Store, old Record) {
	t.Helper()
	if got, err := s.Records(ctx, "run", 0, 1); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], old) {
		t.Fatalf("record after migration = %+v, %v; want %+v", got, err, old)
	}
	rec := Record{Index: 1, Status: StatusOK, OptionID: "b", Raw: "B", Attempts: 1, Tries: 1,
		ServedModel: "gpt-4o-mini-2024-07-18", SystemFingerprint: "fp_44709d6fcb"}
	if err := s.Put(ctx, "run", []Record{rec}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Records(ctx, "run", 1, 2); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], rec) {
		t.Fatalf("record with provenance = %+v, %v; want %+v", got, err, rec)
	}
}
