package main

import (
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/wire"
)

func TestBatchLines(t *testing.T) {
	exp := time.Date(2026, 3, 1, 14, 3, 0, 0, time.Local)
	s := snapshot{batches: []wire.BatchProgress{
		{Key: "0/0", Model: "sim", ID: "b1", Status: wire.BatchStatusCompleted, Total: 50000, Done: 50000, ExpiresAt: exp},
		{Key: "0/1", Model: "sim", ID: "b2", Status: wire.BatchStatusInProgress, Total: 50000, Done: 31204, ExpiresAt: exp},
		{Key: "0/2", Model: "sim", ID: "b3", Status: wire.BatchStatusValidating, Total: 20000, ExpiresAt: exp},
		{Key: "1/0", Model: "gpt", ID: "b4", Status: wire.BatchStatusInProgress, Total: 10, Done: 1, ExpiresAt: exp},
	}}
	got := s.batchLines(true)
	want := []string{
		"sim: batch 2 of 3 in_progress, 31,204 of 50,000 done, expires Mar 1 14:03",
		"sim: batch 3 of 3 validating, 0 of 20,000 done, expires Mar 1 14:03",
		"gpt: batch 1 of 1 in_progress, 1 of 10 done, expires Mar 1 14:03",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("running batches:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if all := s.batchLines(false); len(all) != 4 || all[0] != "sim: batch 1 of 3 completed, 50,000 of 50,000 done" {
		t.Errorf("every batch: %q", all)
	}
}

// TestBatchLinesShowAWaitingChunk: a batch the provider failed as a whole is terminal, but its chunk waits to
// resubmit: the running lines show it, with the provider's reason, and the run still has batches open.
func TestBatchLinesShowAWaitingChunk(t *testing.T) {
	reason := "token_limit_exceeded: Enqueued token limit reached for gpt-4o in organization org-x. Limit: 90,000 enqueued tokens. · waiting for 1 other batch(es) of gpt to end, then resubmitting"
	s := snapshot{batches: []wire.BatchProgress{
		{Key: "0/0", Model: "gpt", ID: "b1", Status: wire.BatchStatusCompleted, Total: 10, Done: 10},
		{Key: "0/1", Model: "gpt", ID: "b2", Status: wire.BatchStatusFailed, Reason: reason},
	}}
	got := s.batchLines(true)
	if len(got) != 1 || got[0] != "gpt: batch 2 of 2 failed, 0 of 0 done: "+reason {
		t.Errorf("running batches %q, want the waiting one with its reason", got)
	}
	if !s.openBatches() {
		t.Error("a chunk waiting to resubmit: no batch open")
	}
	s.batches[1].Reason = ""
	if got := s.batchLines(true); len(got) != 0 || s.openBatches() {
		t.Errorf("a failed batch nothing waits on: running %q, open %v", got, s.openBatches())
	}
}

// TestWatchedBatchCounts: an AwaitBatch heartbeat's counts replace those the workflow last recorded of that
// batch (at its last status change), and touch no other batch.
func TestWatchedBatchCounts(t *testing.T) {
	s := snapshot{batches: []wire.BatchProgress{
		{Key: "0/0", Model: "sim", ID: "b1", Status: wire.BatchStatusInProgress, Total: 50000, Done: 10},
		{Key: "0/1", Model: "sim", ID: "b2", Status: wire.BatchStatusInProgress, Total: 50000, Done: 20},
	}}
	s.watchedBatch(wire.BatchWatch{Batch: wire.BatchInfo{ID: "b2", Status: wire.BatchStatusInProgress,
		Counts: wire.BatchCounts{Total: 50000, Succeeded: 31000, Errored: 204}}})
	got := s.batchLines(true)
	want := []string{"sim: batch 1 of 2 in_progress, 10 of 50,000 done", "sim: batch 2 of 2 in_progress, 31,204 of 50,000 done"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("batches:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBatchLinesSayWhatTheProviderForgot: an AwaitBatch heartbeat whose polls the provider answered 404 shows on
// its batch's line with the failure and the bound after which the batch is lost; a state silico does not know is
// shown by the provider's word; the note of a chunk whose batch was lost stays on its next batch.
func TestBatchLinesSayWhatTheProviderForgot(t *testing.T) {
	s := snapshot{batches: []wire.BatchProgress{
		{Key: "0/0", Model: "sim", ID: "b1", Status: wire.BatchStatusInProgress, Total: 500, Done: 83},
		{Key: "0/1", Model: "sim", ID: "b2", Status: wire.BatchStatusInProgress, Total: 500, Done: 0,
			Note: "batch b0 lost: the provider answered 5 polls in a row over 2m0s that it does not know it; its cells were submitted again"},
		{Key: "1/0", Model: "gem", ID: "b3", Status: wire.BatchStatusUnknown, State: "JOB_STATE_PONDERING", Total: 9},
	}}
	s.watchedBatch(wire.BatchWatch{Batch: wire.BatchInfo{ID: "b1", Status: wire.BatchStatusInProgress,
		Counts: wire.BatchCounts{Total: 500, Succeeded: 83}}, Missing: 3, Failure: "retrieve batch b1: 404 No such batch: b1"})
	got := s.batchLines(true)
	want := []string{
		"sim: batch 1 of 2 in_progress, 83 of 500 done · the provider answered 3 poll(s) in a row that it does not know this " +
			"batch (retrieve batch b1: 404 No such batch: b1); it is taken as lost, and its cells submitted again, after 5 over 2m0s",
		"sim: batch 2 of 2 in_progress, 0 of 500 done · batch b0 lost: the provider answered 5 polls in a row over 2m0s that it " +
			"does not know it; its cells were submitted again",
		"gem: batch 1 of 1 in state JOB_STATE_PONDERING (unknown to silico), 0 of 9 done",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("batches:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
