package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
		PromptTokens: 40 + i, CompletionTokens: 2, CostUSD: 0.0000125, LatencyMS: 12.5, Attempts: 1, Cached: i%2 == 0,
	}
}

func TestTwoHandlesOnOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	a, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("Open a: %v", err)
	}
	defer func() { _ = a.Close() }()
	b, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("Open b: %v", err)
	}
	defer func() { _ = b.Close() }()

	const perHandle = 2000
	errc := make(chan error, 2)
	for h, s := range []*SQLite{a, b} {
		go func() {
			w := s.NewWriter("run", WriterOptions{BatchSize: 50})
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
	for name, s := range map[string]*SQLite{"a": a, "b": b} {
		c, err := s.Counts(ctx, "run")
		if err != nil || c.Records != 2*perHandle {
			t.Fatalf("Counts via %s = %+v, %v; want %d records", name, c, err, 2*perHandle)
		}
	}
}

// TestHelperProcessWriter is not a test: TestTwoProcessesOnOneFile runs the test binary again with this test
// selected, as a second process writing to the same file.
func TestHelperProcessWriter(t *testing.T) {
	path := os.Getenv("SILICO_STORE_HELPER_DB")
	if path == "" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("helper Open: %v", err)
	}
	defer func() { _ = s.Close() }()
	w := s.NewWriter("run", WriterOptions{BatchSize: 25})
	for i := range 1000 {
		if err := w.Add(ctx, rec(2*i+1)); err != nil {
			t.Fatalf("helper Add: %v", err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("helper Close: %v", err)
	}
}

func TestTwoProcessesOnOneFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close() }()

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SILICO_STORE_HELPER_DB="+path)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	w := s.NewWriter("run", WriterOptions{BatchSize: 25})
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
	if n := stored(t, s, "run"); n != 2000 {
		t.Fatalf("%d records stored by two processes, want 2000", n)
	}
}
