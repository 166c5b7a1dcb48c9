package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/silicolab/silico/store/storetest"
	"github.com/silicolab/silico/usage"
)

// postgresEnv names the variable holding the DSN of a PostgreSQL database for the tests (CI sets it). Without
// it the PostgreSQL half of the suite skips.
const postgresEnv = storetest.EnvPostgres

// backend makes fresh stores of one kind for the suite.
type backend struct {
	name string
	// dsn returns the DSN of a new, empty store that lives as long as the test; opening it twice gives two
	// handles on one store.
	dsn func(t testing.TB) string
}

var backends = []backend{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "sub", "results.db") }},
	{"postgres", pgTestDSN},
}

// eachBackend runs fn as one subtest per back end.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// openStore opens dsn and closes it when the test ends.
func openStore(t testing.TB, dsn string) Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// pgTestDSN is the DSN of a fresh PostgreSQL schema for the test.
func pgTestDSN(t testing.TB) string { return storetest.PostgresDSN(t) }

// pgExec runs one statement on its own connection.
func pgExec(t testing.TB, dsn, sql string) { storetest.Exec(t, dsn, sql) }

func count(t testing.TB, s Store, run string) int {
	t.Helper()
	c, err := s.Counts(context.Background(), run)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	return c.Records
}

func TestIsPostgres(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://u@h/db": true, "postgresql://h/db?sslmode=disable": true,
		".silico/results.db": false, "/abs/postgres/results.db": false, "postgres.db": false,
	} {
		if got := IsPostgres(dsn); got != want {
			t.Errorf("IsPostgres(%q) = %v, want %v", dsn, got, want)
		}
	}
}

func TestOpenPicksTheBackEndByDSN(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := openStore(t, b.dsn(t))
		var ok bool
		switch b.name {
		case "sqlite":
			_, ok = s.(*SQLite)
		case "postgres":
			_, ok = s.(*Postgres)
		}
		if !ok {
			t.Fatalf("Open gave a %T", s)
		}
	})
}

func TestRedactDSN(t *testing.T) {
	for _, dsn := range []string{
		"postgres://silico:s3cr3t@db.internal:5432/silico?sslmode=require",
		"postgres://silico@db.internal/silico?password=s3cr3t&sslmode=require",
		"postgres://silico:s3cr3t@db.internal:bad-port/x",
		"postgres://silico:%zz-s3cr3t@db.internal/silico",
	} {
		if got := redactDSN(dsn); strings.Contains(got, "s3cr3t") {
			t.Errorf("redactDSN(%q) = %q shows the password", dsn, got)
		}
	}
	if got := redactDSN("postgres://silico:s3cr3t@db.internal:5432/silico"); !strings.Contains(got, "db.internal:5432/silico") {
		t.Errorf("redactDSN dropped where the store is: %q", got)
	}
}

func TestPostgresErrorsNeverShowThePassword(t *testing.T) {
	// Nothing listens on port 1, so the connection fails without a server.
	_, err := Open(context.Background(), "postgres://silico:s3cr3t-pw@127.0.0.1:1/db?sslmode=disable&connect_timeout=5")
	if err == nil {
		t.Fatal("Open of an unreachable server: got nil error")
	}
	if strings.Contains(err.Error(), "s3cr3t-pw") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("error %q: want the address and not the password", err)
	}
	if _, err := Open(context.Background(), "postgres://silico:s3cr3t-pw@127.0.0.1:1/db?pool_max_conns=zero"); err == nil ||
		strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Fatalf("Open of a bad DSN: got %v, want an error without the password", err)
	}
}

func TestRunRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		if _, err := s.LoadRun(ctx, "r1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("LoadRun of a missing run: got %v, want ErrNotFound", err)
		}
		spec := []byte(`{"name":"x"}`)
		if err := s.SaveRun(ctx, "r1", spec); err != nil {
			t.Fatalf("SaveRun: %v", err)
		}
		if err := s.SaveRun(ctx, "r1", spec); err != nil {
			t.Fatalf("SaveRun again with the same bytes: %v", err)
		}
		// PrepareRun tells a conflicting spec from a failing store by errors.Is, so the sentinel must come through.
		if err := s.SaveRun(ctx, "r1", []byte(`{"name":"y"}`)); !errors.Is(err, ErrSpecConflict) {
			t.Fatalf("SaveRun with different bytes: got %v, want ErrSpecConflict", err)
		}
		got, err := s.LoadRun(ctx, "r1")
		if err != nil || string(got) != string(spec) {
			t.Fatalf("LoadRun = %q, %v; want %q", got, err, spec)
		}

		// Records may land before the spec is saved; the spec is still accepted afterwards.
		if err := s.Put(ctx, "r2", []Record{rec(0)}); err != nil {
			t.Fatalf("Put before SaveRun: %v", err)
		}
		if _, err := s.LoadRun(ctx, "r2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("LoadRun of a run with records but no spec: got %v, want ErrNotFound", err)
		}
		if err := s.SaveRun(ctx, "r2", spec); err != nil {
			t.Fatalf("SaveRun after Put: %v", err)
		}

		if err := s.DeleteRun(ctx, "r2"); err != nil {
			t.Fatalf("DeleteRun: %v", err)
		}
		if _, err := s.LoadRun(ctx, "r2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("LoadRun after DeleteRun: got %v, want ErrNotFound", err)
		}
		if c, err := s.Counts(ctx, "r2"); err != nil || c != (Counts{}) {
			t.Fatalf("Counts after DeleteRun = %+v, %v; want zero", c, err)
		}
		if err := s.DeleteRun(ctx, "nope"); err != nil {
			t.Fatalf("DeleteRun of a missing run: %v", err)
		}
	})
}

func TestPutRecordsRoundTripAndUpsert(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		var in []Record
		for i := range 10 {
			in = append(in, rec(i))
		}
		in[3] = Record{Index: 3, Status: StatusFailed, ErrorClass: "InvalidRequest", ErrorCode: "context_length_exceeded", ErrorMessage: "context too long", Attempts: 1}
		in[4] = Record{Index: 4, Status: StatusUnparsed, Raw: "maybe 2 or 3", Candidates: "2,3", Attempts: 2}
		if err := s.Put(ctx, "run", in); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := s.Records(ctx, "run", 0, 100)
		if err != nil {
			t.Fatalf("Records: %v", err)
		}
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("Records round trip:\n got %+v\nwant %+v", got, in)
		}

		// Upsert: index 5 replaced, index 20 added, within one batch the last record of an index wins.
		up := []Record{{Index: 5, Status: StatusFailed, ErrorClass: "x"}, {Index: 20, Status: StatusOK}, {Index: 5, Status: StatusUnparsed, Raw: "last"}}
		if err := s.Put(ctx, "run", up); err != nil {
			t.Fatalf("Put upsert: %v", err)
		}
		got, err = s.Records(ctx, "run", 5, 6)
		if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], up[2]) {
			t.Fatalf("Records after upsert = %+v, %v; want [%+v]", got, err, up[2])
		}
		c, err := s.Counts(ctx, "run")
		if err != nil {
			t.Fatalf("Counts: %v", err)
		}
		if c.Records != 11 || c.OK != 8 || c.Unparsed != 2 || c.Failed != 1 || c.Cached != 4 {
			t.Fatalf("Counts = %+v; want 11 records: 8 ok, 2 unparsed, 1 failed, 4 cached", c)
		}
		// Of the 7 answers with tokens (0-2, 6-9), 4 came from the cache (0, 2, 6, 8): their tokens were not spent
		// and their cost was saved.
		if want := 3 * 2; c.CompletionTokens != want {
			t.Fatalf("Counts.CompletionTokens = %d, want %d (answers from the cache not counted)", c.CompletionTokens, want)
		}
		if want := 3 * usage.Dollars(0.0000125); c.CostUSD != want {
			t.Fatalf("Counts.CostUSD = %v, want %v", c.CostUSD, want)
		}
		if want := 4 * usage.Dollars(0.0000125); c.SavedUSD != want {
			t.Fatalf("Counts.SavedUSD = %v, want %v", c.SavedUSD, want)
		}
	})
}

func TestFailedRecordNeverReplacesAnAnswer(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		failed := func(i int, msg string) Record {
			return Record{Index: i, Status: StatusFailed, ErrorClass: "ServerError", ErrorMessage: msg, Attempts: 3}
		}
		// Cell 0 is answered, then a late give-up arrives; cell 1 fails twice; cell 2 fails, then is answered.
		// Within one batch the same rule holds: cell 3's answer survives the failure after it, cell 4's second
		// failure replaces its first.
		for _, batch := range [][]Record{
			{rec(0), failed(1, "first"), failed(2, "first"), rec(3), failed(3, "same batch"), failed(4, "a"), failed(4, "b")},
			{failed(0, "late give-up"), failed(1, "second"), rec(2)},
		} {
			if err := s.Put(ctx, "run", batch); err != nil {
				t.Fatalf("Put: %v", err)
			}
		}
		got, err := s.Records(ctx, "run", 0, 5)
		if err != nil {
			t.Fatal(err)
		}
		want := []Record{rec(0), failed(1, "second"), rec(2), rec(3), failed(4, "b")}
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("cell %d = %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

func TestDeleteFailed(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		failed := Record{Index: 1, Status: StatusFailed, ErrorClass: "ServerError", Attempts: 3}
		unparsed := Record{Index: 2, Status: StatusUnparsed, Raw: "?", Attempts: 1}
		if err := s.Put(ctx, "run", []Record{rec(0), failed, unparsed, {Index: 3, Status: StatusFailed}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, "other", []Record{{Index: 1, Status: StatusFailed}}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.DeleteFailed(ctx, "run"); err != nil || n != 2 {
			t.Fatalf("DeleteFailed = %d, %v; want 2", n, err)
		}
		got, err := s.Records(ctx, "run", 0, 10)
		if err != nil || !reflect.DeepEqual(got, []Record{rec(0), unparsed}) {
			t.Fatalf("Records after DeleteFailed = %+v, %v; want the answers only", got, err)
		}
		if n := count(t, s, "other"); n != 1 {
			t.Fatalf("DeleteFailed touched another run: %d records left, want 1", n)
		}
	})
}

// TestDeleteFailedKeepsTheCounts holds what --retry-failed relies on: a failed cell's requests and tries survive
// the deletion of its record, every record of the cell written after adds them (a stale write again too, never
// twice), and a second retry carries the sum; another run and a deleted run keep nothing.
func TestDeleteFailedKeepsTheCounts(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		first := []Record{{Index: 0, Status: StatusFailed, ErrorClass: "ServerError", Attempts: 5, Tries: 3},
			{Index: 1, Status: StatusFailed, ErrorClass: "Stalled", Attempts: 2}, rec(2)}
		if err := s.Put(ctx, "run", first); err != nil {
			t.Fatal(err)
		}
		if n, err := s.DeleteFailed(ctx, "run"); err != nil || n != 2 {
			t.Fatalf("DeleteFailed = %d, %v; want 2", n, err)
		}
		// The second execution: cell 0 answers at its second request, cell 1 fails again after one try.
		answer := rec(0)
		answer.Attempts, answer.Tries = 2, 2
		again := Record{Index: 1, Status: StatusFailed, ErrorClass: "ServerError", Attempts: 1, Tries: 1}
		if err := s.Put(ctx, "run", []Record{answer, again}); err != nil {
			t.Fatal(err)
		}
		want := func(idx, attempts, tries int) {
			t.Helper()
			got, err := s.Records(ctx, "run", idx, idx+1)
			if err != nil || len(got) != 1 || got[0].Attempts != attempts || got[0].Tries != tries {
				t.Fatalf("cell %d = %+v, %v; want attempts %d, tries %d", idx, got, err, attempts, tries)
			}
		}
		want(0, 7, 5)
		want(1, 3, 1)
		want(2, 1, 0)
		// A stale attempt writes cell 0's answer again: the carry is added to what it says, not to the stored sum.
		if err := s.Put(ctx, "run", []Record{answer}); err != nil {
			t.Fatal(err)
		}
		want(0, 7, 5)
		// A third execution: cell 1 (3 requests, 1 try so far) answers at once.
		if _, err := s.DeleteFailed(ctx, "run"); err != nil {
			t.Fatal(err)
		}
		one := rec(1)
		one.Attempts, one.Tries = 1, 1
		if err := s.Put(ctx, "run", []Record{one}); err != nil {
			t.Fatal(err)
		}
		want(1, 4, 2)
		// Nothing carries into another run, nor into a run of the same id written after it was deleted.
		if err := s.Put(ctx, "other", []Record{answer}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Records(ctx, "other", 0, 1); len(got) != 1 || got[0].Attempts != 2 {
			t.Fatalf("another run's cell 0 = %+v; want attempts 2", got)
		}
		if err := s.DeleteRun(ctx, "run"); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, "run", []Record{answer}); err != nil {
			t.Fatal(err)
		}
		want(0, 2, 2)
	})
}

func TestRecordsRange(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		var in []Record
		for _, i := range []int{0, 1, 2, 5, 7, 8, 9} {
			in = append(in, rec(i))
		}
		if err := s.Put(ctx, "run", in); err != nil {
			t.Fatalf("Put: %v", err)
		}
		if err := s.Put(ctx, "other", []Record{rec(3), rec(4)}); err != nil {
			t.Fatalf("Put other run: %v", err)
		}
		for _, tc := range []struct {
			start, end int
			want       []int
		}{
			{0, 10, []int{0, 1, 2, 5, 7, 8, 9}},
			{2, 8, []int{2, 5, 7}},
			{3, 5, nil},
			{9, 9, nil},
			{100, 200, nil},
		} {
			got, err := s.Records(ctx, "run", tc.start, tc.end)
			if err != nil {
				t.Fatalf("Records(%d, %d): %v", tc.start, tc.end, err)
			}
			var idx []int
			for _, r := range got {
				idx = append(idx, r.Index)
			}
			if !reflect.DeepEqual(idx, tc.want) {
				t.Errorf("Records(%d, %d) indexes = %v, want %v", tc.start, tc.end, idx, tc.want)
			}
		}
	})
}

func TestScanStreamsAllPagesInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		n := 2*scanPage + 17
		var in []Record
		for i := n - 1; i >= 0; i-- { // written out of order
			if i%7 != 3 {
				in = append(in, rec(i))
			}
		}
		if err := s.Put(ctx, "run", in); err != nil {
			t.Fatalf("Put: %v", err)
		}
		prev, count := -1, 0
		err := s.Scan(ctx, "run", func(r Record) error {
			if r.Index <= prev || r.Index%7 == 3 {
				return fmt.Errorf("index %d after %d", r.Index, prev)
			}
			if !reflect.DeepEqual(r, rec(r.Index)) {
				return fmt.Errorf("record %d = %+v, want %+v", r.Index, r, rec(r.Index))
			}
			prev = r.Index
			count++
			return nil
		})
		if err != nil || count != len(in) {
			t.Fatalf("Scan: %d records, %v; want %d, nil", count, err, len(in))
		}
		stop := errors.New("stop")
		if err := s.Scan(ctx, "run", func(Record) error { return stop }); !errors.Is(err, stop) {
			t.Fatalf("Scan with a failing callback: got %v, want %v", err, stop)
		}
	})
}

func TestPutRejectsBadRecordsAtomically(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		bad := []Record{rec(0), {Index: 1, Status: "done"}}
		if err := s.Put(ctx, "run", bad); err == nil {
			t.Fatal("Put with an unknown status: got nil error")
		}
		if err := s.Put(ctx, "run", []Record{{Index: -1, Status: StatusOK}}); err == nil {
			t.Fatal("Put with a negative index: got nil error")
		}
		if err := s.Put(ctx, "", []Record{rec(0)}); err == nil {
			t.Fatal("Put with an empty run id: got nil error")
		}
		if n := count(t, s, "run"); n != 0 {
			t.Fatalf("after rejected Puts, %d records stored; want 0", n)
		}
	})
}

// TestConcurrentOverlappingPuts has several handles (as several worker processes would) write batches that
// overlap, in opposite orders, at once: no write may fail, and every cell is one row.
func TestConcurrentOverlappingPuts(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		dsn := b.dsn(t)
		const handles, cells, batch = 4, 1200, 100
		var wg sync.WaitGroup
		errs := make(chan error, handles)
		for h := range handles {
			s := openStore(t, dsn)
			wg.Go(func() {
				for k := range cells / batch {
					if h%2 == 1 { // odd handles walk the batches backwards
						k = cells/batch - 1 - k
					}
					recs := make([]Record, 0, batch)
					for i := k * batch; i < (k+1)*batch; i++ {
						recs = append(recs, rec(i))
					}
					if h >= 2 { // and half of them write each batch back to front
						for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
							recs[i], recs[j] = recs[j], recs[i]
						}
					}
					if err := s.Put(ctx, "run", recs); err != nil {
						errs <- fmt.Errorf("handle %d: %w", h, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		s := openStore(t, dsn)
		got, err := s.Records(ctx, "run", 0, cells)
		if err != nil || len(got) != cells {
			t.Fatalf("Records = %d, %v; want %d", len(got), err, cells)
		}
		for i, r := range got {
			if !reflect.DeepEqual(r, rec(i)) {
				t.Fatalf("record %d = %+v, want %+v", i, r, rec(i))
			}
		}
		if n := count(t, s, "run"); n != cells {
			t.Fatalf("Counts = %d records, want %d", n, cells)
		}
	})
}

// TestManyOpenAtOnce opens one fresh store from several goroutines at once, as workers started together do:
// exactly one creates the schema, and none fails.
func TestManyOpenAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for range 6 {
			wg.Go(func() {
				s, err := Open(context.Background(), dsn)
				if err != nil {
					errs <- err
					return
				}
				errs <- s.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
		}
	})
}

func TestPostgresSchemaVersion(t *testing.T) {
	dsn := pgTestDSN(t)
	ctx := context.Background()
	s, err := OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	var versions []int
	rows, err := s.pool.Query(ctx, "SELECT version FROM silico_schema_version ORDER BY version")
	if err == nil {
		versions, err = pgx.CollectRows(rows, pgx.RowTo[int])
	}
	if err != nil || len(versions) != len(pgMigrations) || versions[len(versions)-1] != len(pgMigrations) {
		t.Fatalf("schema versions %v, %v; want 1..%d", versions, err, len(pgMigrations))
	}
	_ = s.Close()
	// Opening again migrates nothing.
	s, err = OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatalf("OpenPostgres again: %v", err)
	}
	_ = s.Close()
	// A newer silico's schema is refused rather than written with an older layout.
	newer := len(pgMigrations) + 1
	pgExec(t, dsn, fmt.Sprintf("INSERT INTO silico_schema_version (version) VALUES (%d)", newer))
	if _, err := OpenPostgres(ctx, dsn); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("OpenPostgres of schema version %d: got %v, want a refusal", newer, err)
	}
}

func TestPostgresLocationHidesThePassword(t *testing.T) {
	u, err := url.Parse(pgTestDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	const pw = "unused-s3cret" // trust authentication ignores it; other set-ups give their own
	if _, has := u.User.Password(); !has {
		u.User = url.UserPassword(u.User.Username(), pw)
	}
	secret, _ := u.User.Password()
	s := openStore(t, u.String())
	if loc := s.Location(); strings.Contains(loc, secret) || !strings.Contains(loc, u.Host) {
		t.Fatalf("Location() = %q; want the host %s and not the password", loc, u.Host)
	}
}

// TestMain says once, not per test, when the PostgreSQL half of the suite cannot run.
func TestMain(m *testing.M) {
	if os.Getenv(postgresEnv) == "" {
		fmt.Fprintf(os.Stderr, "store: %s is not set: the PostgreSQL back end is not tested\n", postgresEnv)
	}
	// The tests fail when a goroutine one of them started (a writer's loop, a pool's) is still running after
	// they end.
	goleak.VerifyTestMain(m)
}

// TestWritersOnTwoHandles has two handles on one store (two processes' worth of connections) write through a
// Writer each, interleaved cells of one run.
func TestWritersOnTwoHandles(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		dsn := b.dsn(t)
		handles := []Store{openStore(t, dsn), openStore(t, dsn)}
		const perHandle = 2000
		errc := make(chan error, 2)
		for h, s := range handles {
			go func() {
				w := NewWriter(s, "run", WriterOptions{})
				for i := range perHandle {
					if err := w.Add(ctx, rec(2*i+h)); err != nil {
						_ = w.Close(ctx)
						errc <- err
						return
					}
				}
				errc <- w.Close(ctx)
			}()
		}
		for range 2 {
			if err := <-errc; err != nil {
				t.Fatalf("writer: %v", err)
			}
		}
		for h, s := range handles {
			if n := count(t, s, "run"); n != 2*perHandle {
				t.Fatalf("Counts via handle %d = %d records, want %d", h, n, 2*perHandle)
			}
		}
	})
}

// helperDSN names the store TestHelperProcessWriter writes to.
const helperDSN = "SILICO_STORE_HELPER_DSN"

// TestHelperProcessWriter is not a test: TestTwoProcessesOnOneStore runs the test binary again with this test
// selected, as a second process writing to the same store.
func TestHelperProcessWriter(t *testing.T) {
	dsn := os.Getenv(helperDSN)
	if dsn == "" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	s := openStore(t, dsn)
	w := NewWriter(s, "run", WriterOptions{})
	for i := range 1000 {
		if err := w.Add(ctx, rec(2*i+1)); err != nil {
			t.Fatalf("helper Add: %v", err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("helper Close: %v", err)
	}
}

func TestTwoProcessesOnOneStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		dsn := b.dsn(t)
		s := openStore(t, dsn)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperDSN+"="+dsn)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start helper: %v", err)
		}
		w := NewWriter(s, "run", WriterOptions{})
		for i := range 1000 {
			if err := w.Add(ctx, rec(2*i)); err != nil {
				t.Fatalf("Add: %v", err)
			}
		}
		werr := w.Close(ctx)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper process: %v\n%s", err, out.String())
		}
		if werr != nil {
			t.Fatalf("Close: %v", werr)
		}
		if n := count(t, s, "run"); n != 2000 {
			t.Fatalf("%d records stored by two processes, want 2000", n)
		}
	})
}

// TestEveryRecordFieldRoundTrips fills every field of Record, whatever fields it has, and reads it back: a field
// added to Record without its column in a back end fails here rather than vanishing silently.
func TestEveryRecordFieldRoundTrips(t *testing.T) {
	var in Record
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("value of " + v.Type().Field(i).Name)
		case reflect.Int:
			f.SetInt(int64(100 + i))
		case reflect.Int64: // usage.USD: picodollars, every one of the 12 decimals of a dollar set
			f.SetInt(123_456_789_012 + int64(i))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.25)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			if f.Type().Elem().Kind() != reflect.Float64 {
				t.Fatalf("Record.%s is a slice of %s: teach this test to fill it", v.Type().Field(i).Name, f.Type().Elem().Kind())
			}
			f.Set(reflect.ValueOf([]float64{0.1, 1.0 / 3, float64(i) / 7}))
		default:
			t.Fatalf("Record.%s has kind %s: teach this test to fill it", v.Type().Field(i).Name, f.Kind())
		}
	}
	in.Status = StatusUnparsed
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		if err := s.Put(ctx, "run", []Record{in}); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := s.Records(ctx, "run", in.Index, in.Index+1)
		if err != nil || len(got) != 1 {
			t.Fatalf("Records = %+v, %v", got, err)
		}
		if !reflect.DeepEqual(got[0], in) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got[0], in)
		}
	})
}

func TestPostgresElapsed(t *testing.T) {
	ctx := context.Background()
	p, err := OpenPostgres(ctx, pgTestDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Elapsed(ctx, "nope", time.Now()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Elapsed of a missing run: %v, want ErrNotFound", err)
	}
	if err := p.SaveRun(ctx, "r", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	// Not exported yet: the time since the run was created.
	if d, err := p.Elapsed(ctx, "r", time.Now().Add(time.Hour)); err != nil || d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("Elapsed an hour after creation = %v, %v", d, err)
	}
	if err := p.SetElapsed(ctx, "r", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d, err := p.Elapsed(ctx, "r", time.Now()); err != nil || d != 1500*time.Millisecond {
		t.Fatalf("Elapsed after SetElapsed = %v, %v; want 1.5s", d, err)
	}
	// A run that only ever had its time set exists, with no spec.
	if err := p.SetElapsed(ctx, "other", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := p.LoadRun(ctx, "other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LoadRun of a run without a spec: %v", err)
	}
}

// TestCountsAddCostsExactly: Counts' cost and saved sums are the exact sums of the records' costs, which have all
// 12 decimals of a picodollar, where a sum of their float64 dollars drifts.
func TestCountsAddCostsExactly(t *testing.T) {
	const n = 20_000
	recs := make([]Record, n)
	var cost, saved usage.USD
	for i := range recs {
		recs[i] = Record{Index: i, Status: StatusOK, OptionID: "1", CostUSD: usage.Picodollars(int64(123_456_789 + 7_919*i)), Cached: i%3 == 0}
		if recs[i].Cached {
			saved += recs[i].CostUSD
		} else {
			cost += recs[i].CostUSD
		}
	}
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := openStore(t, b.dsn(t))
		if err := s.Put(ctx, "run", recs); err != nil {
			t.Fatalf("Put: %v", err)
		}
		c, err := s.Counts(ctx, "run")
		if err != nil {
			t.Fatal(err)
		}
		if c.Records != n || c.CostUSD != cost || c.SavedUSD != saved {
			t.Fatalf("Counts: %d records, cost %v, saved %v; want %d, %v, %v", c.Records, c.CostUSD, c.SavedUSD, n, cost, saved)
		}
	})
}
