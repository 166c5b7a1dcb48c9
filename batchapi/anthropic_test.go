package batchapi

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/wire"
)

type antFixture struct {
	sim *sim.Server
	clk *clock
	c   *llm.AnthropicClient
	a   *Anthropic
	oai *llm.Client
}

func newAntFixture(t *testing.T, cfg sim.BatchConfig) *antFixture {
	t.Helper()
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s, err := sim.New(sim.Config{Now: clk.Now, Batch: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c := llm.NewAnthropicClient(ts.URL+"/v1", "sk-ant-test", ts.Client())
	a := NewAnthropic(c)
	a.pageSize = 2
	return &antFixture{sim: s, clk: clk, c: c, a: a, oai: llm.NewClient(ts.URL+"/v1", "", ts.Client())}
}

func antRequest(i int) llm.Request {
	return llm.Request{Model: "sim-chat", Params: experiment.Params{MaxTokens: 8},
		Messages: []experiment.Message{{Role: "system", Content: fmt.Sprintf("You are persona %d.", i)},
			{Role: "user", Content: "I like batches.\n1. No\n2. Yes\nAnswer:"}}}
}

// antChunk is the create body of n requests, custom ids mapped from cell ids.
func antChunk(t *testing.T, from, n int) ([]byte, []string) {
	t.Helper()
	var lines [][]byte
	var ids []string
	for i := from; i < from+n; i++ {
		body, err := llm.AnthropicBody(antRequest(i))
		if err != nil {
			t.Fatal(err)
		}
		id := batchformat.SafeID(fmt.Sprintf("ant/1/%d/p", i))
		l, err := batchformat.Line(wire.FormatAnthropic, batchformat.EndpointChat, id, body)
		if err != nil {
			t.Fatal(err)
		}
		lines, ids = append(lines, l), append(ids, id)
	}
	return batchformat.Encode(wire.FormatAnthropic, lines), ids
}

// TestAnthropicChatAgainstSimulator: the Messages API client gets from the simulator what its chat endpoint
// answers the same messages.
func TestAnthropicChatAgainstSimulator(t *testing.T) {
	f := newAntFixture(t, sim.BatchConfig{})
	ctx := context.Background()
	got, err := f.c.Chat(ctx, antRequest(3))
	if err != nil {
		t.Fatal(err)
	}
	req := antRequest(3) // Seed 0: Anthropic sends none
	want, err := f.oai.Chat(ctx, llm.Request{Model: req.Model, Messages: req.Messages, Params: req.Params})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != want.Text || got.PromptTokens != want.PromptTokens || got.CompletionTokens != want.CompletionTokens {
		t.Errorf("messages %+v, chat %+v", got, want)
	}
}

func TestAnthropicSubmitAdoptsAfterIntent(t *testing.T) {
	f := newAntFixture(t, sim.BatchConfig{ProcessingTime: time.Hour})
	ctx := context.Background()
	in, _ := antChunk(t, 0, 4)
	// An older batch of the same size, from before the intent, is not this chunk's.
	if _, err := f.a.Submit(ctx, AnthropicSubmission{Input: in, Requests: 4}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Minute)
	intent := f.clk.Now()
	// The attempt recorded its intent, created, and died before the workflow learnt the id.
	created, err := f.a.Submit(ctx, AnthropicSubmission{Input: in, Requests: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Another chunk of another size was created since, and one of the same size the run already knows.
	other, _ := antChunk(t, 10, 3)
	if _, err := f.a.Submit(ctx, AnthropicSubmission{Input: other, Requests: 3}); err != nil {
		t.Fatal(err)
	}
	known, err := f.a.Submit(ctx, AnthropicSubmission{Input: in, Requests: 4})
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.sim.Batches())
	got, err := f.a.Submit(ctx, AnthropicSubmission{Input: in, Requests: 4, Intent: intent, Known: []string{known.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != created.ID || len(f.sim.Batches()) != before {
		t.Errorf("retry adopted %s (batches %d → %d), want %s and no new batch", got.ID, before, len(f.sim.Batches()), created.ID)
	}
	// Without knowing the other one, two batches fit: stop rather than guess.
	_, err = f.a.Submit(ctx, AnthropicSubmission{Input: in, Requests: 4, Intent: intent})
	var amb *AmbiguousError
	if !errors.Is(err, ErrAmbiguous) || !errors.As(err, &amb) {
		t.Errorf("two candidates: %v, want an AmbiguousError", err)
	} else if want := []string{created.ID, known.ID}; !slices.Equal(amb.Candidates, want) && !slices.Equal(amb.Candidates, []string{known.ID, created.ID}) {
		t.Errorf("candidates %v, want %v", amb.Candidates, want)
	} else if !slices.IsSorted(amb.Candidates) {
		t.Errorf("candidates %v not in id order", amb.Candidates)
	}
	// An intent after which nothing was created: create.
	f.clk.Advance(time.Minute)
	fresh, err := f.a.Submit(ctx, AnthropicSubmission{Input: in, Requests: 4, Intent: f.clk.Now()})
	if err != nil || fresh.ID == created.ID || len(f.sim.Batches()) != before+1 {
		t.Errorf("nothing since the intent: %s, %v; want a new batch", fresh.ID, err)
	}
}

func TestAnthropicCollectAndCancel(t *testing.T) {
	in, ids := antChunk(t, 0, 10)
	f := newAntFixture(t, sim.BatchConfig{ProcessingTime: 10 * time.Hour, FailLines: map[string]int{ids[0]: 400}})
	ctx := context.Background()
	info, err := f.a.Submit(ctx, AnthropicSubmission{Input: in, Requests: 10})
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != wire.BatchStatusInProgress || info.Counts.Total != 10 {
		t.Fatalf("created %+v", info)
	}
	f.clk.Advance(4 * time.Hour)
	c, err := f.a.Cancel(ctx, info.ID)
	if err != nil || c.Status != wire.BatchStatusCancelled || c.Counts.Done() != 4 {
		t.Fatalf("cancel: %+v, %v; want cancelled with 4 done", c, err)
	}
	p, err := f.a.Poll(ctx, info.ID)
	if err != nil || p.ResultsURL == "" {
		t.Fatalf("poll %+v, %v", p, err)
	}
	got := map[string]batchformat.Result{}
	if err := f.a.Collect(ctx, p, func(r batchformat.Result) error { got[r.CustomID] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[ids[0]].Outcome != batchformat.Errored || got[ids[0]].Err.Class != errclass.InvalidRequest ||
		got[ids[1]].Outcome != batchformat.Succeeded || got[ids[9]].Outcome != batchformat.NotRun || got[ids[9]].Reason != "canceled" {
		t.Errorf("results %+v", got)
	}
	a, err := llm.AnthropicAnswer(got[ids[1]].Body)
	want, _ := f.c.Chat(ctx, antRequest(1))
	if err != nil || a.Text != want.Text || a.PromptTokens != want.PromptTokens {
		t.Errorf("batch answer %+v, %v; sync %+v", a, err, want)
	}
}

// TestAnthropicCleanup: Cleanup deletes an ended batch, after which the API has it no more; a cleanup that runs
// again finds it gone, which is no error.
func TestAnthropicCleanup(t *testing.T) {
	f := newAntFixture(t, sim.BatchConfig{})
	ctx := context.Background()
	in, _ := antChunk(t, 0, 2)
	info, err := f.a.Submit(ctx, AnthropicSubmission{Input: in, Requests: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := f.a.Cleanup(ctx, info); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.a.Poll(ctx, info.ID); err == nil {
		t.Errorf("batch %s still there after its cleanup", info.ID)
	}
	if d := f.sim.Deletions(); !slices.Equal(d, []string{info.ID}) {
		t.Errorf("deletions %v, want the batch once", d)
	}
}
