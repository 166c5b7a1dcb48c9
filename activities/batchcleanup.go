package activities

import (
	"context"

	"github.com/silicolab/silico/wire"
)

// CleanupBatch deletes what a collected batch leaves at its provider: an OpenAI batch's input, output and error
// files, an ended Anthropic batch (its results with it). The workflow schedules it only after the batch's collect
// completed, so a collect attempted again still reads its results; what is already gone is no error, so it can
// run again, and a collect scheduled after it (there is none) would fail, never record less.
func (a *Activities) CleanupBatch(ctx context.Context, in wire.BatchCleanupInput) error {
	defer keepAlive(ctx, a.heartbeatEvery())()
	spec, err := a.spec(ctx, in.RunID)
	if err != nil {
		return err
	}
	api, err := a.batchAPIOf(spec.Models[in.Model])
	if err != nil {
		return err
	}
	b := in.Batch
	if in.KeepInput {
		b.InputFileID = "" // the next submission of the same lines reads it
	}
	return refused(api.driver.Cleanup(ctx, b))
}
