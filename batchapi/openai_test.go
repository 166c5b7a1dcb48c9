package batchapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/wire"
)

const testKey = "sk-test-SECRETSECRETSECRET1234"

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type fixture struct {
	sim *sim.Server
	clk *clock
	c   *llm.Client
	o   *OpenAI
}

func newFixture(t *testing.T, cfg sim.BatchConfig) *fixture {
	t.Helper()
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s, err := sim.New(sim.Config{Now: clk.Now, Batch: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c := llm.NewClient(ts.URL+"/v1", testKey, ts.Client())
	o := NewOpenAI(c)
	o.pageSize = 2 // every listing pages
	return &fixture{sim: s, clk: clk, c: c, o: o}
}

// chunk is the input of n cells of pass "sim/1", built as a batch pass builds it.
func chunk(t *testing.T, from, n int) ([]byte, []string) {
	t.Helper()
	var lines [][]byte
	var ids []string
	for i := from; i < from+n; i++ {
		id := fmt.Sprintf("sim/1/%d/p", i)
		body, err := llm.ChatBody(llm.Request{Model: "sim-chat", Seed: 1, Params: experiment.Params{MaxTokens: 8},
			Messages: []experiment.Message{{Role: "system", Content: fmt.Sprintf("You are persona %d.", i)},
				{Role: "user", Content: "I like batches.\n1. No\n2. Yes\nAnswer:"}}})
		if err != nil {
			t.Fatal(err)
		}
		l, err := batchformat.Line(wire.FormatOpenAI, batchformat.EndpointChat, id, body)
		if err != nil {
			t.Fatal(err)
		}
		lines, ids = append(lines, l), append(ids, id)
	}
	return batchformat.Encode(wire.FormatOpenAI, lines), ids
}

func sub(key batchformat.Key, input []byte) Submission {
	return Submission{Key: key, Endpoint: batchformat.EndpointChat, Input: input}
}

// TestSubmitOncePerChunk: an attempt that runs again after creating (it died before the workflow learnt the id)
// adopts the batch it created; one that died after uploading reuses the file. Other chunks get their own.
func TestSubmitOncePerChunk(t *testing.T) {
	f := newFixture(t, sim.BatchConfig{ProcessingTime: time.Hour})
	ctx := context.Background()
	k0 := batchformat.Key{Run: "run-1", Pass: "sim/1", Chunk: 0}
	in0, _ := chunk(t, 0, 5)

	// Died after uploading: the file is there, no batch.
	if _, err := f.c.UploadBatchFile(ctx, fileName(k0, batchformat.Digest(in0)), in0); err != nil {
		t.Fatal(err)
	}
	first, err := f.o.Submit(ctx, sub(k0, in0))
	if err != nil {
		t.Fatal(err)
	}
	// Died after creating: the next attempt submits again.
	again, err := f.o.Submit(ctx, sub(k0, in0))
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID {
		t.Errorf("second submit created %s, want the first's %s", again.ID, first.ID)
	}
	in1, _ := chunk(t, 5, 3)
	other, err := f.o.Submit(ctx, sub(batchformat.Key{Run: "run-1", Pass: "sim/1", Chunk: 1}, in1))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // more batches than a page, so Find pages
		in, _ := chunk(t, 100+i, 1)
		if _, err := f.o.Submit(ctx, sub(batchformat.Key{Run: "run-2", Pass: "sim/1", Chunk: i}, in)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.o.Submit(ctx, sub(k0, in0)); err != nil {
		t.Fatal(err)
	}
	bs := f.sim.Batches()
	if len(bs) != 5 || other.ID == first.ID {
		t.Errorf("%d batches, want 5: one per chunk", len(bs))
	}
	files, err := f.c.ListFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Errorf("%d files uploaded, want 5 (the upload of the attempt that died is reused)", len(files))
	}
	// A resubmission round is another batch of the same chunk.
	r1, err := f.o.Submit(ctx, sub(batchformat.Key{Run: "run-1", Pass: "sim/1", Chunk: 0, Round: 1}, in0))
	if err != nil || r1.ID == first.ID {
		t.Errorf("round 1: %v, %v; want a new batch", r1.ID, err)
	}
}

// TestSubmitConverges: two attempts that both created a batch of one chunk end with one running: every later
// submit keeps the one created first and cancels the other.
func TestSubmitConverges(t *testing.T) {
	f := newFixture(t, sim.BatchConfig{ProcessingTime: time.Hour})
	ctx := context.Background()
	k := batchformat.Key{Run: "run-1", Pass: "sim/1", Chunk: 0}
	in, _ := chunk(t, 0, 4)
	file, err := f.c.UploadBatchFile(ctx, "a.jsonl", in)
	if err != nil {
		t.Fatal(err)
	}
	// A stale attempt and a fresh one each created a batch.
	older, err := f.c.CreateBatch(ctx, file.ID, string(batchformat.EndpointChat), k.Metadata(batchformat.Digest(in)))
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Second)
	if _, err := f.c.CreateBatch(ctx, file.ID, string(batchformat.EndpointChat), k.Metadata(batchformat.Digest(in))); err != nil {
		t.Fatal(err)
	}
	got, err := f.o.Submit(ctx, sub(k, in))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != older.ID {
		t.Errorf("kept %s, want the older %s", got.ID, older.ID)
	}
	var running []string
	for _, b := range f.sim.Batches() {
		if b.Status == "in_progress" || b.Status == "validating" {
			running = append(running, b.ID)
		}
	}
	if len(running) != 1 || running[0] != older.ID {
		t.Errorf("running batches %v, want only %s", running, older.ID)
	}
	if n := len(f.sim.Batches()); n != 2 {
		t.Errorf("%d batches, want the 2 that existed (none created)", n)
	}
}

func TestSubmitChangedChunk(t *testing.T) {
	f := newFixture(t, sim.BatchConfig{})
	ctx := context.Background()
	k := batchformat.Key{Run: "run-1", Pass: "sim/1"}
	a, _ := chunk(t, 0, 2)
	b, _ := chunk(t, 0, 3)
	if _, err := f.o.Submit(ctx, sub(k, a)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.o.Submit(ctx, sub(k, b)); !errors.Is(err, ErrChunkChanged) {
		t.Errorf("another input under the same key: %v, want ErrChunkChanged", err)
	}
	if n := len(f.sim.Batches()); n != 1 {
		t.Errorf("%d batches, want 1", n)
	}
}

func TestSubmitSince(t *testing.T) {
	f := newFixture(t, sim.BatchConfig{})
	ctx := context.Background()
	k := batchformat.Key{Run: "run-1", Pass: "sim/1"}
	in, _ := chunk(t, 0, 2)
	old, err := f.o.Submit(ctx, sub(k, in))
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Hour)
	s := sub(k, in)
	s.Since = f.clk.Now()
	fresh, err := f.o.Submit(ctx, s)
	if err != nil || fresh.ID == old.ID {
		t.Errorf("a batch older than Since was adopted: %s (old %s), %v", fresh.ID, old.ID, err)
	}
}

// TestCollect: an expired batch's results arrive once each: answers for what ran (the status_code trap among
// them classified), never-run lines for the rest; a collect can run again with the same result.
func TestCollect(t *testing.T) {
	in, ids := chunk(t, 0, 10)
	f := newFixture(t, sim.BatchConfig{ProcessingTime: 10 * time.Hour, Window: 6 * time.Hour,
		FailLines: map[string]int{ids[1]: 400, ids[2]: 500}})
	ctx := context.Background()
	info, err := f.o.Submit(ctx, sub(batchformat.Key{Run: "r", Pass: "sim/1"}, in))
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(3 * time.Hour)
	mid, err := f.o.Poll(ctx, info.ID)
	if err != nil || mid.Status != wire.BatchStatusInProgress || mid.Counts.Done() != 3 {
		t.Fatalf("at 3h: %+v, %v; want in progress with 3 done", mid, err)
	}
	f.clk.Advance(3 * time.Hour)
	end, err := f.o.Poll(ctx, info.ID)
	if err != nil || end.Status != wire.BatchStatusExpired {
		t.Fatalf("at 6h: %+v, %v; want expired", end, err)
	}
	collect := func() map[string]batchformat.Result {
		got := map[string]batchformat.Result{}
		err := f.o.Collect(ctx, end, func(r batchformat.Result) error {
			if _, dup := got[r.CustomID]; dup {
				return fmt.Errorf("%s twice", r.CustomID)
			}
			got[r.CustomID] = r
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := collect()
	if len(got) != 10 {
		t.Fatalf("%d results, want 10", len(got))
	}
	var outcomes []string
	for _, id := range ids {
		r := got[id]
		o := string(r.Outcome)
		if r.Err != nil {
			o += ":" + string(r.Err.Class)
		}
		outcomes = append(outcomes, o)
	}
	want := []string{"succeeded", "errored:InvalidRequest", "errored:ServerError", "succeeded", "succeeded", "succeeded",
		"not_run", "not_run", "not_run", "not_run"}
	if fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Errorf("outcomes %v\nwant     %v", outcomes, want)
	}
	if a, err := llm.ChatAnswer(got[ids[0]].Body); err != nil || a.Text == "" || a.PromptTokens == 0 {
		t.Errorf("answer %+v, %v", a, err)
	}
	if again := collect(); len(again) != len(got) {
		t.Errorf("a second collect gave %d results, want %d", len(again), len(got))
	}
}

func TestCancel(t *testing.T) {
	f := newFixture(t, sim.BatchConfig{ProcessingTime: 10 * time.Hour})
	ctx := context.Background()
	in, _ := chunk(t, 0, 10)
	info, err := f.o.Submit(ctx, sub(batchformat.Key{Run: "r", Pass: "sim/1"}, in))
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(5 * time.Hour)
	c, err := f.o.Cancel(ctx, info.ID)
	if err != nil || c.Status != wire.BatchStatusCancelled || c.Counts.Done() != 5 {
		t.Fatalf("cancel: %+v, %v; want cancelled with 5 done", c, err)
	}
	n := map[batchformat.Outcome]int{}
	if err := f.o.Collect(ctx, c, func(r batchformat.Result) error { n[r.Outcome]++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n[batchformat.Succeeded] != 5 || n[batchformat.NotRun] != 5 {
		t.Errorf("results %v, want 5 answers and 5 never run", n)
	}
	// Cancelling what already ended returns it.
	if again, err := f.o.Cancel(ctx, info.ID); err != nil || again.Status != wire.BatchStatusCancelled {
		t.Errorf("second cancel: %+v, %v", again, err)
	}
	done, _ := chunk(t, 20, 1)
	d, _ := f.o.Submit(ctx, sub(batchformat.Key{Run: "r", Pass: "sim/2"}, done))
	f.clk.Advance(11 * time.Hour)
	if got, err := f.o.Cancel(ctx, d.ID); err != nil || got.Status != wire.BatchStatusCompleted {
		t.Errorf("cancel of a completed batch: %+v, %v; want it as it is", got, err)
	}
}

// TestErrorsRedacted: what the provider says back about a batch call (here it echoes the id asked for) reaches
// the caller without the key, through the whole Unwrap chain of the provider's error.
func TestErrorsRedacted(t *testing.T) {
	f := newFixture(t, sim.BatchConfig{})
	_, err := f.o.Poll(context.Background(), "batch_"+testKey)
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("retrieving an unknown batch: %v, want an *llm.Error", err)
	}
	if !strings.Contains(le.Message, "[REDACTED]") {
		t.Errorf("message %q: want the echoed key redacted", le.Message)
	}
	for e := error(le); e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testKey) {
			t.Fatalf("the provider's error carries the key: %v", e)
		}
	}
}

// TestSubmitWithoutMetadata: through a gateway that drops metadata, an attempt that runs again after creating
// adopts the batch by its input file, and another chunk (or round) still gets its own.
func TestSubmitWithoutMetadata(t *testing.T) {
	f := newFixture(t, sim.BatchConfig{ProcessingTime: time.Hour, DropMetadata: true})
	ctx := context.Background()
	k0 := batchformat.Key{Run: "run-1", Pass: "sim/1", Chunk: 0}
	in0, _ := chunk(t, 0, 5)
	first, err := f.o.Submit(ctx, sub(k0, in0))
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Metadata) != 0 {
		t.Fatalf("metadata %v kept: the gateway did not drop it", first.Metadata)
	}
	again, err := f.o.Submit(ctx, sub(k0, in0))
	if err != nil || again.ID != first.ID {
		t.Errorf("second submit: %s, %v; want the first's %s", again.ID, err, first.ID)
	}
	in1, _ := chunk(t, 5, 3)
	other, err := f.o.Submit(ctx, sub(batchformat.Key{Run: "run-1", Pass: "sim/1", Chunk: 1}, in1))
	if err != nil || other.ID == first.ID {
		t.Errorf("chunk 1: %s, %v; want a batch of its own", other.ID, err)
	}
	// Another run of the same requests has another file, so it never adopts this run's batch.
	run2, err := f.o.Submit(ctx, sub(batchformat.Key{Run: "run-2", Pass: "sim/1", Chunk: 0}, in0))
	if err != nil || run2.ID == first.ID {
		t.Errorf("run 2: %s, %v; want a batch of its own", run2.ID, err)
	}
	if n := len(f.sim.Batches()); n != 3 {
		t.Errorf("%d batches, want 3", n)
	}
}

// TestSubmitRefusesUnlistedUploads: an endpoint that does not list the file just uploaded is refused before the
// create, since a batch of it could not be found again.
func TestSubmitRefusesUnlistedUploads(t *testing.T) {
	s, err := sim.New(sim.Config{Batch: sim.BatchConfig{DropMetadata: true}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/files" {
			_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	o := NewOpenAI(llm.NewClient(ts.URL+"/v1", "", ts.Client()))
	in, _ := chunk(t, 0, 2)
	_, err = o.Submit(context.Background(), sub(batchformat.Key{Run: "r", Pass: "sim/1"}, in))
	if !errors.Is(err, ErrNotFindable) {
		t.Errorf("submit: %v, want ErrNotFindable", err)
	}
	if n := len(s.Batches()); n != 0 {
		t.Errorf("%d batches created, want none", n)
	}
}

// TestOpenAICleanup: Cleanup deletes a collected batch's input and output files; running again is no error.
func TestOpenAICleanup(t *testing.T) {
	f := newFixture(t, sim.BatchConfig{})
	ctx := context.Background()
	in, _ := chunk(t, 0, 3)
	info, err := f.o.Submit(ctx, sub(batchformat.Key{Run: "r", Pass: "sim/1"}, in))
	if err != nil {
		t.Fatal(err)
	}
	if info, err = f.o.Poll(ctx, info.ID); err != nil || info.OutputFileID == "" || info.InputFileID == "" {
		t.Fatalf("poll: %+v, %v; want input and output files", info, err)
	}
	for range 2 {
		if err := f.o.Cleanup(ctx, info); err != nil {
			t.Fatal(err)
		}
	}
	if files := f.sim.Files(); len(files) != 0 {
		t.Errorf("files left: %v", files)
	}
	if d := f.sim.Deletions(); !slices.Equal(d, []string{info.InputFileID, info.OutputFileID}) {
		t.Errorf("deletions %v, want the input and the output file once each", d)
	}
}
