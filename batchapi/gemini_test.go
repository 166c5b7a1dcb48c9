package batchapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/wire"
)

type gemFixture struct {
	sim *sim.Server
	clk *clock
	c   *llm.GeminiClient
	g   *Gemini
	// compat is the client of the simulator's Gemini OpenAI-compatible endpoint (the synchronous calls).
	compat *llm.Client
}

func newGemFixture(t *testing.T, cfg sim.BatchConfig) *gemFixture {
	t.Helper()
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s, err := sim.New(sim.Config{Now: clk.Now, Batch: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c := llm.NewGeminiClient(ts.URL+"/v1beta", "gem-test-key", ts.Client())
	g := NewGemini(c)
	g.pageSize = 2
	// The listing's lag passes on the simulator's clock.
	g.sleep = func(_ context.Context, d time.Duration) error { clk.Advance(d); return nil }
	return &gemFixture{sim: s, clk: clk, c: c, g: g,
		compat: llm.NewClient(ts.URL+"/v1beta"+llm.GeminiOpenAIPath, "gem-test-key", ts.Client())}
}

func gemRequest(i int) llm.Request {
	return llm.Request{Model: "sim-chat", Seed: int64(i), Params: experiment.Params{MaxTokens: 8},
		Messages: []experiment.Message{{Role: "system", Content: "You are a persona."},
			{Role: "user", Content: "I like batches.\n1. Never\n2. Rarely\n3. Sometimes\n4. Often\n5. Always\nAnswer:"}}}
}

// gemChunk is the JSONL input of n requests and their keys.
func gemChunk(t *testing.T, from, n int) ([]byte, []string) {
	t.Helper()
	var lines [][]byte
	var ids []string
	for i := from; i < from+n; i++ {
		body, err := llm.GeminiBody(gemRequest(i))
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("gem/1/%d/p", i)
		l, err := batchformat.Line(wire.FormatGemini, batchformat.EndpointChat, id, body)
		if err != nil {
			t.Fatal(err)
		}
		lines, ids = append(lines, l), append(ids, id)
	}
	return batchformat.Encode(wire.FormatGemini, lines), ids
}

var gemKey = batchformat.Key{Run: "run-g", Pass: "sim/1/0", Chunk: 0, Round: 0}

// TestGeminiBatchAnswersAsSync: a batch's answers, inline or from a responses file, are what the OpenAI-compatible
// endpoint answers the same requests synchronously; errors keep their classes, and what a cancel stopped never ran.
// The same whether the provider writes a result's failure under "error", under "status" or at the top level of the
// line, and names its states BATCH_STATE_* or JOB_STATE_*.
func TestGeminiBatchAnswersAsSync(t *testing.T) {
	type variant struct {
		file  bool
		shape string
		job   bool
	}
	var variants []variant
	for _, file := range []bool{false, true} {
		for _, shape := range []string{sim.GeminiStatusError, sim.GeminiStatusField, sim.GeminiStatusTop} {
			variants = append(variants, variant{file, shape, shape == sim.GeminiStatusField})
		}
	}
	for _, v := range variants {
		file := v.file
		t.Run(fmt.Sprintf("file=%v/status=%s/job=%v", file, v.shape, v.job), func(t *testing.T) {
			in, ids := gemChunk(t, 0, 10)
			f := newGemFixture(t, sim.BatchConfig{ProcessingTime: 10 * time.Hour, FailLines: map[string]int{ids[0]: 400, ids[2]: 503},
				GeminiStatusShape: v.shape, GeminiJobStates: v.job})
			if file {
				f.g.inlineMax = 100 // every batch goes through the Files API
			}
			ctx := context.Background()
			info, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in})
			if err != nil {
				t.Fatal(err)
			}
			if info.Status != wire.BatchStatusInProgress || info.Counts.Total != 10 || info.Metadata[batchformat.MetaDisplayName] != gemKey.DisplayName(batchformat.Digest(in)) {
				t.Fatalf("created %+v", info)
			}
			f.clk.Advance(8 * time.Hour)
			c, err := f.g.Cancel(ctx, info.ID)
			if err != nil || c.Status != wire.BatchStatusCancelled || c.Counts.Done() != 8 {
				t.Fatalf("cancel: %+v, %v; want cancelled with 8 done", c, err)
			}
			if file != (c.ResponsesFile != "") {
				t.Fatalf("responses file %q of a batch sent by file %v", c.ResponsesFile, file)
			}
			got := map[string]batchformat.Result{}
			if err := f.g.Collect(ctx, c, func(r batchformat.Result) error { got[r.CustomID] = r; return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != 10 || got[ids[0]].Outcome != batchformat.Errored || got[ids[0]].Err.Class != errclass.InvalidRequest ||
				got[ids[2]].Outcome != batchformat.Errored || got[ids[2]].Err.Class != errclass.ServerError ||
				got[ids[1]].Outcome != batchformat.Succeeded || got[ids[9]].Outcome != batchformat.NotRun || got[ids[9]].Reason != "cancelled" {
				t.Errorf("results %+v", got)
			}
			// The seeds differ, so answers taken from the wrong request or without the seed would differ too.
			for _, i := range []int{1, 3, 4, 5, 6, 7} {
				a, err := llm.GeminiAnswer(got[ids[i]].Body)
				want, werr := f.compat.Chat(ctx, gemRequest(i))
				if err != nil || werr != nil || a.Text != want.Text || a.PromptTokens != want.PromptTokens ||
					a.CompletionTokens != want.CompletionTokens || a.FinishReason != want.FinishReason || a.Text == "" {
					t.Errorf("request %d: batch answer %+v, %v; sync %+v, %v", i, a, err, want, werr)
				}
			}
		})
	}
}

// TestGeminiSubmitAdoptsByDisplayName: a second submission of a key finds the first's batch by its display name
// and creates none; the same key with other requests is ErrChunkChanged; another chunk gets its own batch.
func TestGeminiSubmitAdoptsByDisplayName(t *testing.T) {
	f := newGemFixture(t, sim.BatchConfig{ProcessingTime: time.Hour})
	ctx := context.Background()
	in, _ := gemChunk(t, 0, 4)
	// Other batches of the account, before and after, on more than one page of the listing.
	for i := range 3 {
		other, _ := gemChunk(t, 20+i, 2)
		if _, err := f.g.Submit(ctx, GeminiSubmission{Key: batchformat.Key{Run: "other", Pass: "p", Chunk: i}, Model: "sim-chat", Input: other}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.sim.Batches())
	again, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in})
	if err != nil || again.ID != first.ID || len(f.sim.Batches()) != before {
		t.Errorf("second submission: %s, %v (batches %d → %d); want %s and no new batch", again.ID, err, before, len(f.sim.Batches()), first.ID)
	}
	changed, _ := gemChunk(t, 1, 4)
	if _, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: changed}); !errors.Is(err, ErrChunkChanged) {
		t.Errorf("other requests under the key: %v, want ErrChunkChanged", err)
	}
	next := gemKey
	next.Round = 1
	if b, err := f.g.Submit(ctx, GeminiSubmission{Key: next, Model: "sim-chat", Input: in}); err != nil || b.ID == first.ID {
		t.Errorf("next round: %s, %v; want a batch of its own", b.ID, err)
	}
}

// TestGeminiSubmitWaitsOutTheListingsLag: the listing shows a batch only some time after its create. The create
// itself keeps its batch though the listing after it does not show it, and a resumed submission (whose earlier
// attempt created the batch and died before it learnt so) lists again until DefaultGeminiListLag has passed, and
// adopts it as soon as it shows: with a lag of 8 s, 40 s (which made a second batch when the bound was 10 s) and
// 2 minutes, the bound.
func TestGeminiSubmitWaitsOutTheListingsLag(t *testing.T) {
	if DefaultGeminiListLag < 2*time.Minute {
		t.Fatalf("DefaultGeminiListLag %v, want 2 minutes or more", DefaultGeminiListLag)
	}
	for _, lag := range []time.Duration{8 * time.Second, 40 * time.Second, 2 * time.Minute} {
		t.Run(lag.String(), func(t *testing.T) {
			f := newGemFixture(t, sim.BatchConfig{ProcessingTime: time.Hour, ListLag: lag})
			ctx := context.Background()
			in, _ := gemChunk(t, 0, 4)
			lost, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in})
			if err != nil || lost.ID == "" {
				t.Fatalf("first submission: %+v, %v", lost, err)
			}
			f.clk.Advance(time.Second) // the retry comes before the listing shows the batch
			start := f.clk.Now()
			got, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in, Resumed: true})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.sim.Batches()); got.ID != lost.ID || n != 1 {
				t.Errorf("resumed submission: %s with %d batches at the provider, want %s alone", got.ID, n, lost.ID)
			}
			// Adopted as soon as the listing shows it, not after the whole bound.
			if waited := f.clk.Now().Sub(start); waited > lag-time.Second+geminiRelist {
				t.Errorf("waited %s for a batch that showed after %s", waited, lag-time.Second)
			}
		})
	}
	// A resumed submission of a chunk no attempt created waits out the bound, then creates.
	f := newGemFixture(t, sim.BatchConfig{ProcessingTime: time.Hour})
	in, _ := gemChunk(t, 0, 4)
	start := f.clk.Now()
	if _, err := f.g.Submit(context.Background(), GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in, Resumed: true}); err != nil {
		t.Fatal(err)
	}
	if waited := f.clk.Now().Sub(start); waited != DefaultGeminiListLag || len(f.sim.Batches()) != 1 {
		t.Errorf("waited %s and made %d batches, want %s and one", waited, len(f.sim.Batches()), DefaultGeminiListLag)
	}
}

// TestGeminiBatchExpires: a batch whose window ends first is expired, with what ran answered and the rest never
// run (to be submitted again).
func TestGeminiBatchExpires(t *testing.T) {
	in, ids := gemChunk(t, 0, 10)
	f := newGemFixture(t, sim.BatchConfig{ProcessingTime: 10 * time.Hour, Window: 3 * time.Hour})
	ctx := context.Background()
	info, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(5 * time.Hour)
	p, err := f.g.Poll(ctx, info.ID)
	if err != nil || p.Status != wire.BatchStatusExpired || p.Counts.Done() != 3 {
		t.Fatalf("poll: %+v, %v; want expired with 3 done", p, err)
	}
	got := map[string]batchformat.Result{}
	if err := f.g.Collect(ctx, p, func(r batchformat.Result) error { got[r.CustomID] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		want := batchformat.NotRun
		if i < 3 {
			want = batchformat.Succeeded
		}
		if got[id].Outcome != want {
			t.Errorf("request %d: %+v, want %s", i, got[id], want)
		}
	}
	if got[ids[9]].Reason != "deadline_exceeded" {
		t.Errorf("never ran: reason %q", got[ids[9]].Reason)
	}
}

// failCreate fails the first create before it reaches the server.
type failCreate struct {
	next   http.RoundTripper
	failed atomic.Bool
}

func (f *failCreate) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, ":batchGenerateContent") && f.failed.CompareAndSwap(false, true) {
		return nil, errors.New("connection refused (before the create)")
	}
	return f.next.RoundTrip(r)
}

// TestGeminiUploadReused: a submission by file whose create never happened reuses, on its next attempt, the file
// the first uploaded.
func TestGeminiUploadReused(t *testing.T) {
	f := newGemFixture(t, sim.BatchConfig{ProcessingTime: time.Hour})
	fc := &failCreate{next: http.DefaultTransport}
	f.g.c = llm.NewGeminiClient(f.c.BaseURL(), "gem-test-key", &http.Client{Transport: fc})
	f.g.inlineMax = 100
	ctx := context.Background()
	in, _ := gemChunk(t, 0, 4)
	if _, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in}); err == nil {
		t.Fatal("the first create failed and Submit did not say so")
	}
	if _, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in, Resumed: true}); err != nil {
		t.Fatal(err)
	}
	raw, err := f.c.ListFiles(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), `"name":"files/`); n != 1 || len(f.sim.Batches()) != 1 {
		t.Errorf("%d files uploaded and %d batches, want one of each: %s", n, len(f.sim.Batches()), raw)
	}
}

// TestGeminiCleanupDeletesTheUpload: the batch of an uploaded input names the file, and its cleanup deletes it
// with the batch; with the input kept (the same lines go again) only the batch goes.
func TestGeminiCleanupDeletesTheUpload(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			f := newGemFixture(t, sim.BatchConfig{ProcessingTime: time.Hour})
			f.g.inlineMax = 100
			ctx := context.Background()
			in, _ := gemChunk(t, 0, 4)
			info, err := f.g.Submit(ctx, GeminiSubmission{Key: gemKey, Model: "sim-chat", Input: in})
			if err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(2 * time.Hour)
			if info, err = f.g.Poll(ctx, info.ID); err != nil || info.Status != wire.BatchStatusCompleted {
				t.Fatalf("poll: %+v, %v", info, err)
			}
			if info.InputFileID == "" || len(f.sim.Files()) != 1 || f.sim.Files()[0].ID != info.InputFileID {
				t.Fatalf("the batch names input %q, the provider holds %+v", info.InputFileID, f.sim.Files())
			}
			if keep {
				info.InputFileID = "" // as CleanupBatch clears it
			}
			if err := f.g.Cleanup(ctx, info); err != nil {
				t.Fatal(err)
			}
			if left := len(f.sim.Files()); left != map[bool]int{false: 0, true: 1}[keep] {
				t.Errorf("%d files left at the provider", left)
			}
			if _, err := f.g.Poll(ctx, info.ID); err == nil {
				t.Error("the batch is still there")
			}
		})
	}
}
