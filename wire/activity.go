package wire

import "go.temporal.io/sdk/workflow"

// Activity is the handle of a registered activity: its name, and the types of its input I and its output O. The
// workflow schedules activities through their handles and the worker registers each under its handle's Name
// (activities.Register, which also holds at compile time that each method takes I and returns O), so a name
// lives in one place and a workflow cannot pass an activity another input type.
type Activity[I, O any] struct {
	// Name is the activity type recorded in histories; it never changes.
	Name string
}

// Execute schedules the activity with input in, under the activity options of ctx. Its future's Get takes a *O.
func (a Activity[I, O]) Execute(ctx workflow.Context, in I) workflow.Future {
	return workflow.ExecuteActivity(ctx, a.Name, in)
}

// Get waits for f, an Execute of a, and returns its result.
func (a Activity[I, O]) Get(ctx workflow.Context, f workflow.Future) (O, error) {
	var out O
	err := f.Get(ctx, &out)
	return out, err
}

// Each registered activity, under the name it has always had (the method's name on activities.Activities).
var (
	// PrepareRun decodes, validates, saves and plans the run's spec.
	PrepareRun = Activity[PrepareInput, Plan]{Name: "PrepareRun"}
	// RunSeedPass calls the cells of one pass.
	RunSeedPass = Activity[PassInput, PassResult]{Name: "RunSeedPass"}
	// FailUnfinished records the cells of a range that have no result as failed.
	FailUnfinished = Activity[FailInput, FailOutput]{Name: "FailUnfinished"}
	// ExportResults writes the run's outputs.
	ExportResults = Activity[ExportInput, ExportOutput]{Name: "ExportResults"}
	// CheckOutput refuses an output directory ExportResults would refuse. It returns nothing but its error (O is
	// struct{}: its completion carries no result); no workflow of this release schedules it.
	CheckOutput = Activity[ExportInput, struct{}]{Name: "CheckOutput"}
	// PlanBatchPass plans the chunks of a batch pass.
	PlanBatchPass = Activity[BatchPassInput, BatchPlan]{Name: "PlanBatchPass"}
	// SubmitBatch creates a chunk's batch of one round at its provider.
	SubmitBatch = Activity[BatchChunkInput, BatchInfo]{Name: "SubmitBatch"}
	// PollBatch asks the provider where a batch stands.
	PollBatch = Activity[BatchRef, BatchInfo]{Name: "PollBatch"}
	// AwaitBatch polls a batch until its status changes, heartbeating where it stands (one activity for hours
	// of polls, where PollBatch is one poll).
	AwaitBatch = Activity[BatchAwaitInput, BatchWatch]{Name: "AwaitBatch"}
	// CancelBatch cancels a batch.
	CancelBatch = Activity[BatchRef, BatchInfo]{Name: "CancelBatch"}
	// CollectBatch records the results of a terminal batch.
	CollectBatch = Activity[BatchCollectInput, BatchCollected]{Name: "CollectBatch"}
	// CollectCandidates records the results of those terminal batches an Anthropic submission could not tell
	// apart whose every result is a request of the chunk.
	CollectCandidates = Activity[BatchCandidatesInput, BatchCollected]{Name: "CollectCandidates"}
	// CleanupBatch deletes what a collected batch leaves at its provider. It returns nothing but its error.
	CleanupBatch = Activity[BatchCleanupInput, struct{}]{Name: "CleanupBatch"}
)
