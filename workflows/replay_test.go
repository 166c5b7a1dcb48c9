package workflows

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistories replays the histories of real runs, so a change that makes ExperimentWorkflow
// non-deterministic for runs already in flight fails here. Histories are added, never replaced (see "Changing
// workflow code" in docs/architecture.md): a new one is recorded into a new file. These were recorded on the
// embedded test server:
//
//	go test ./tests -run 'TestSameResultsForEveryConcurrency|TestUnhappyPathRuns|TestContinuedRunHistory|TestBatchRunOnTemporal|TestBatchTokenLimitOnTemporal|TestBatchBudgetOnTemporal|TestBatchLostOnTemporal|TestPausedRunHistory' \
//	    -record-history=$PWD/workflows/testdata/history.json -record-histories=$PWD/workflows/testdata
//
// history.json is a plain run; rate-limited.json has passes retried by Temporal after storms of 429s (recorded
// before the breaker, when storms ended attempts; recording it again now gives a run that waits them out);
// outage.json has a provider down for 3 s, with the passes' outage signals; raise.json stops at a failed cell
// under on_error=raise; budget.json stops at budget_usd; quota.json gives a model up after insufficient_quota;
// continued.json is the first run of a grid that continued as new; batch.json is a run of a model in batch mode
// (provider batches, polls on timers, collects) recorded before wire.ChangeBatchAwait; batch-await.json is the
// same run recorded after it (a version marker, AwaitBatch per status), written by -record-histories into another
// directory and copied, so that batch.json stays as it was. batch-token-limit.json is one whose
// batches the provider failed with token_limit_exceeded, waited out and resubmitted (wire.ChangeBatchFailures). batch-cleanup.json is
// the batch run recorded by TestBatchRunOnTemporal since batch-cleanup-2026-12-02 (a version marker, and
// CleanupBatch after each collect).
// batch-waitqueue.json and batch-token-limit-waitqueue.json are the two batch runs again, recorded with every
// batch change of that release together (AwaitBatch on wire.WaitQueue, the failed batches' tries, CleanupBatch).
// batch-budget.json is a batch run stopped by budget_usd, recorded since batch-budget-per-pass-2026-12-05 (a pass
// whose share runs out stops itself; the other runs on within its own). batch-lost.json is a batch run whose
// provider lost a batch (404 on every poll), taken as lost and its chunk submitted again, recorded since
// batch-lost-and-bounded-2026-12-07. paused.json is a run paused by its owner before its first pass and
// resumed (wire.ChangeRunPause), recorded by TestPausedRunHistory.
// batch-budget-exact.json is the budget run again, recorded since
// batch-budget-exact-usd-2026-12-07 (a version marker: its budget counted in whole picodollars), written by
// -record-histories into another directory and copied, so that batch-budget.json stays as it was.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 17 {
		t.Fatalf("%d recorded histories in testdata, want the 17 listed in this test's doc", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(ExperimentWorkflow)
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatal(err)
			}
		})
	}
}
