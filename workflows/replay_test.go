package workflows

import (
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistory replays the history of a real run (recorded by the e2e test with
// `go test ./tests -run TestSameResults -record-history=$PWD/workflows/testdata/history.json`): a change that makes
// ExperimentWorkflow non-deterministic for runs already in flight fails here.
func TestReplayRecordedHistory(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(ExperimentWorkflow)
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/history.json"); err != nil {
		t.Fatal(err)
	}
}
