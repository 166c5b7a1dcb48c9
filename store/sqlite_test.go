package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func openTemp(t testing.TB) *SQLite {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sub", "results.db"))
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

func TestRunRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
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
	if err := s.SaveRun(ctx, "r1", []byte(`{"name":"y"}`)); err == nil {
		t.Fatal("SaveRun with different bytes: got nil error")
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
}

func TestPutRecordsRoundTripAndUpsert(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
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
	if err != nil || len(got) != 1 || got[0] != up[2] {
		t.Fatalf("Records after upsert = %+v, %v; want [%+v]", got, err, up[2])
	}
	c, err := s.Counts(ctx, "run")
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	if c.Records != 11 || c.OK != 8 || c.Unparsed != 2 || c.Failed != 1 {
		t.Fatalf("Counts = %+v; want 11 records: 8 ok, 2 unparsed, 1 failed", c)
	}
	if want := 7 * 2; c.CompletionTokens != want {
		t.Fatalf("Counts.CompletionTokens = %d, want %d", c.CompletionTokens, want)
	}
}

func TestRecordsRange(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
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
}

func TestScanStreamsAllPagesInOrder(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
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
}

func TestPutRejectsBadRecordsAtomically(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	bad := []Record{rec(0), {Index: 1, Status: "done"}}
	if err := s.Put(ctx, "run", bad); err == nil {
		t.Fatal("Put with an unknown status: got nil error")
	}
	if err := s.Put(ctx, "run", []Record{{Index: -1, Status: StatusOK}}); err == nil {
		t.Fatal("Put with a negative index: got nil error")
	}
	if c, _ := s.Counts(ctx, "run"); c.Records != 0 {
		t.Fatalf("after rejected Puts, %d records stored; want 0", c.Records)
	}
}

func TestTwoHandlesOnOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	a, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open a: %v", err)
	}
	defer func() { _ = a.Close() }()
	b, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open b: %v", err)
	}
	defer func() { _ = b.Close() }()

	const perHandle = 2000
	errc := make(chan error, 2)
	for h, s := range []*SQLite{a, b} {
		go func() {
			w := s.NewWriter("run", WriterOptions{})
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
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("helper Open: %v", err)
	}
	defer func() { _ = s.Close() }()
	w := s.NewWriter("run", WriterOptions{})
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
	s, err := Open(ctx, path)
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
	w := s.NewWriter("run", WriterOptions{})
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

func TestFailedRecordNeverReplacesAnAnswer(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	failed := func(i int, msg string) Record {
		return Record{Index: i, Status: StatusFailed, ErrorClass: "ServerError", ErrorMessage: msg, Attempts: 3}
	}
	// Cell 0 is answered, then a late give-up arrives; cell 1 fails twice; cell 2 fails, then is answered.
	for _, batch := range [][]Record{
		{rec(0), failed(1, "first"), failed(2, "first")},
		{failed(0, "late give-up"), failed(1, "second"), rec(2)},
	} {
		if err := s.Put(ctx, "run", batch); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	got, err := s.Records(ctx, "run", 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{rec(0), failed(1, "second"), rec(2)}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cell %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
