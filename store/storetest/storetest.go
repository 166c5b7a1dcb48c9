// Package storetest gives tests a PostgreSQL results store of their own. The DSN of the server comes from
// SILICO_TEST_POSTGRES (CI sets it); without it the tests that need PostgreSQL skip.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvPostgres names the variable holding the DSN of a PostgreSQL database for tests.
const EnvPostgres = "SILICO_TEST_POSTGRES"

// PostgresDSN makes a schema of the test's own in the database SILICO_TEST_POSTGRES names (tests of parallel
// packages and runs share that database) and returns a DSN whose search_path is that schema. The schema is
// dropped when the test ends. Without the variable the test is skipped.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		t.Skipf("%s is not set: PostgreSQL store tests skipped", EnvPostgres)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "silico_test_" + hex.EncodeToString(b)
	Exec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { Exec(t, base, "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvPostgres, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Exec runs one statement on a connection of its own.
func Exec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer func() { _ = c.Close(ctx) }()
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
