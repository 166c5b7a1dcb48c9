package activities

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/silicolab/silico/wire"
)

// Register registers a's activities with r, each under its handle's name in package wire. register takes the
// handle and the method together, so the compiler holds that each method takes the handle's input and returns
// its output: a method whose signature drifts from what the workflow sends and reads does not build.
func Register(r worker.ActivityRegistry, a *Activities) {
	register(r, wire.PrepareRun, a.PrepareRun)
	register(r, wire.RunSeedPass, a.RunSeedPass)
	register(r, wire.FailUnfinished, a.FailUnfinished)
	register(r, wire.ExportResults, a.ExportResults)
	registerNoResult(r, wire.CheckOutput, a.CheckOutput)
	register(r, wire.PlanBatchPass, a.PlanBatchPass)
	register(r, wire.SubmitBatch, a.SubmitBatch)
	register(r, wire.PollBatch, a.PollBatch)
	register(r, wire.AwaitBatch, a.AwaitBatch)
	register(r, wire.CancelBatch, a.CancelBatch)
	register(r, wire.CollectBatch, a.CollectBatch)
	register(r, wire.CollectCandidates, a.CollectCandidates)
	registerNoResult(r, wire.CleanupBatch, a.CleanupBatch)
}

// RegisterWaits registers AwaitBatch, the one activity of wire.WaitQueue, on r (that queue's worker).
func RegisterWaits(r worker.ActivityRegistry, a *Activities) {
	register(r, wire.AwaitBatch, a.AwaitBatch)
}

func register[I, O any](r worker.ActivityRegistry, h wire.Activity[I, O], fn func(context.Context, I) (O, error)) {
	r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: h.Name})
}

// registerNoResult registers an activity that returns nothing but its error, whose handle's output is struct{}:
// it completes with no result payload, as it always has.
func registerNoResult[I any](r worker.ActivityRegistry, h wire.Activity[I, struct{}], fn func(context.Context, I) error) {
	r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: h.Name})
}
