package sim

import (
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TestOpenAIBatchEnqueuedTokenLimit: a create whose input tokens and those of the model's batches in progress
// exceed BatchConfig.EnqueuedTokens makes a batch that is failed at once with OpenAI's token_limit_exceeded (line
// and param null) and runs nothing; once the batch in progress ends, the same create succeeds. Another model's
// batches do not count.
func TestOpenAIBatchEnqueuedTokenLimit(t *testing.T) {
	clk := newFakeClock()
	bodies := chatBodies(t, "sim-chat", 10)
	probe, _ := newTestServer(t, Config{Batch: BatchConfig{}})
	one := probe.batches.inputTokens("/v1/chat/completions", []batchLine{{body: bodies[0]}})
	all := probe.batches.inputTokens("/v1/chat/completions", []batchLine{{body: bodies[0]}, {body: bodies[1]}, {body: bodies[2]},
		{body: bodies[3]}, {body: bodies[4]}})
	if one <= 0 || all < 5*one-10 {
		t.Fatalf("input tokens: one line %d, five %d", one, all)
	}
	// Room for one batch of five lines, not two.
	s, ts := newTestServer(t, Config{Now: clk.Now, Batch: BatchConfig{ProcessingTime: time.Hour, EnqueuedTokens: all + all/2}})
	c := newClient(ts)
	first := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(cellIDs(5), "/v1/chat/completions", bodies[:5]), nil)
	if first.Status != "validating" {
		t.Fatalf("first batch %s, want validating", first.Status)
	}
	second := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(cellIDs(10)[5:], "/v1/chat/completions", bodies[5:]), nil)
	if second.Status != "failed" || second.Errors == nil || len(second.Errors.Data) != 1 {
		t.Fatalf("second batch %s, errors %+v; want failed with one error", second.Status, second.Errors)
	}
	e := second.Errors.Data[0]
	if e.Code != "token_limit_exceeded" || e.Line != nil || e.Param != nil ||
		!strings.HasPrefix(e.Message, "Enqueued token limit reached for sim-chat in organization") ||
		!strings.Contains(e.Message, "Please try again once some in_progress batches have been completed.") {
		t.Errorf("error %+v, want OpenAI's token_limit_exceeded", e)
	}
	// Another model has its own limit.
	other := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(cellIDs(3), "/v1/chat/completions", chatBodies(t, "gpt-4o-mini", 3)), nil)
	if other.Status != "validating" {
		t.Errorf("another model's batch %s, want validating", other.Status)
	}
	clk.Advance(time.Hour) // the first batch ends
	third := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(cellIDs(10)[5:], "/v1/chat/completions", bodies[5:]), nil)
	if third.Status != "validating" {
		t.Errorf("after the first batch ended: %s %+v, want validating", third.Status, third.Errors)
	}
	bs := s.Batches()
	if len(bs) != 4 || len(bs[1].Ran) != 0 || len(bs[1].Errors) != 1 || bs[1].Errors[0] != "token_limit_exceeded" {
		t.Errorf("batches %+v: want the refused one to have run nothing", bs)
	}
}

// TestOpenAIBatchRejectLines: a batch holding a line of BatchConfig.RejectLines fails at its validation, naming
// the line (counted from 1 in the input file), and runs nothing.
func TestOpenAIBatchRejectLines(t *testing.T) {
	ids := cellIDs(4)
	s, ts := newTestServer(t, Config{Batch: BatchConfig{RejectLines: []string{ids[2]}}})
	c := newClient(ts)
	b := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(ids, "/v1/chat/completions", chatBodies(t, "sim-chat", 4)), nil)
	if b.Status != "failed" || b.Errors == nil || len(b.Errors.Data) != 1 {
		t.Fatalf("batch %s, errors %+v; want failed naming one line", b.Status, b.Errors)
	}
	if e := b.Errors.Data[0]; e.Line == nil || *e.Line != 3 || e.Code != "invalid_request" || e.Param == nil {
		t.Errorf("error %+v, want line 3", e)
	}
	if bs := s.Batches(); len(bs[0].Ran) != 0 {
		t.Errorf("a failed batch ran %d requests", len(bs[0].Ran))
	}
	ok := submit(t, c, openai.BatchEndpointChatCompletions, inputFile([]string{ids[0], ids[1], ids[3]}, "/v1/chat/completions", chatBodies(t, "sim-chat", 3)), nil)
	if ok.Status == "failed" {
		t.Errorf("a batch without the line: failed %+v", ok.Errors)
	}
}
