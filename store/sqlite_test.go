package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/silicolab/silico/usage"
)

func openTemp(t testing.TB) *SQLite {
	t.Helper()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "sub", "results.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func rec(i int) Record {
	return Record{
		Index: i, Status: StatusOK, OptionID: "3", Raw: fmt.Sprintf("answer %d, \"quoted\"\nline", i),
		PromptTokens: 40 + i, CompletionTokens: 2, CostUSD: usage.Dollars(0.0000125), LatencyMS: 12.5, Attempts: 1, Cached: i%2 == 0,
	}
}
