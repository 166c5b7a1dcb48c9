package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/wire"
)

// batchRun is what the batch passes of one workflow run share: the board of their provider batches, the chunks in
// flight (which a cancelled run waits for), the submissions under way per model, and the turn of Anthropic
// submissions. Its zero value is ready; the runner holds one.
type batchRun struct {
	board batchBoard
	// chunks counts the chunks of batch passes in flight.
	chunks int
	// submitting counts, per model id, the chunks' SubmitBatch activities under way: a batch one of them created
	// is not on the board until it returns (see chunk.batchFailed).
	submitting map[string]int
	anthropic  anthropicTurn
}

// submitted counts a submission of model under way (d = 1) or returned (d = -1).
func (b *batchRun) submitted(model string, d int) {
	if b.submitting == nil {
		b.submitting = map[string]int{}
	}
	b.submitting[model] += d
}

// batchBoard is the run's provider batches as the progress query and the Web UI show them, by chunk key
// ("pass/chunk"), and what a chunk waiting after a failed batch counts on: the batches in flight and those that
// ended, per model.
type batchBoard struct {
	progress map[string]wire.BatchProgress
	// keys are the keys of progress in order: workflow code iterates them, never the map.
	keys []string
	// ended counts, per model id, the batches seen to end.
	ended map[string]int
}

// seen keeps the latest state of batch info, of model (its id), under chunk key; the chunk's note stays.
func (b *batchBoard) seen(key, model string, info wire.BatchInfo) {
	if b.progress == nil {
		b.progress, b.ended = map[string]wire.BatchProgress{}, map[string]int{}
	}
	if i, found := slices.BinarySearch(b.keys, key); !found {
		b.keys = slices.Insert(b.keys, i, key)
	}
	before := b.progress[key]
	now := wire.BatchProgress{Key: key, Model: model, ID: info.ID, Status: info.Status, Total: info.Counts.Total,
		Done: info.Counts.Done(), ExpiresAt: info.ExpiresAt, State: info.State, Note: before.Note}
	if before.ID == now.ID && !before.Status.Terminal() && now.Status.Terminal() {
		b.ended[model]++
	}
	b.progress[key] = now
}

// edit changes the progress of batch key with fn; false when the run has not seen it.
func (b *batchBoard) edit(key string, fn func(*wire.BatchProgress)) bool {
	p, ok := b.progress[key]
	if ok {
		fn(&p)
		b.progress[key] = p
	}
	return ok
}

// list is the run's batches in key order.
func (b *batchBoard) list() []wire.BatchProgress {
	out := make([]wire.BatchProgress, len(b.keys))
	for i, k := range b.keys {
		out[i] = b.progress[k]
	}
	return out
}

// inFlight counts the run's batches of model (its id) the provider has not ended: those that hold enqueued
// tokens. A chunk waiting after a failed batch holds none (its batch is failed), so chunks that wait never wait
// for each other.
func (b *batchBoard) inFlight(model string) int {
	n := 0
	for _, k := range b.keys {
		if p := b.progress[k]; p.Model == model && !p.Status.Terminal() {
			n++
		}
	}
	return n
}

// anthropicTurn lets one Anthropic submission of the run run at a time, and keeps the batches the run adopted, in
// the order it did: see submit.
type anthropicTurn struct {
	busy    bool
	adopted []string
}

// submit submits an Anthropic chunk's round: once no other Anthropic submission of the run is under way, with the
// intent (now) and the batches the run adopted so far in its input, which Temporal records before the first
// attempt, so that every attempt finds a batch an earlier one created and adopts it (see
// wire.BatchChunkInput.Intent). The batches adopted before a continue-as-new are not carried over: they were all
// created before the passes that follow it started, so before any of their intents.
//
// It waits for its turn on ctx (a cancelled run submits nothing more) and submits on sctx, which the run's
// cancellation does not cut short.
func (t *anthropicTurn) submit(ctx, sctx workflow.Context, in wire.BatchChunkInput, what string) (wire.BatchInfo, error) {
	if err := workflow.Await(ctx, func() bool { return !t.busy }); err != nil {
		return wire.BatchInfo{}, err
	}
	t.busy = true
	defer func() { t.busy = false }()
	in.Intent = workflow.Now(sctx)
	in.Known = slices.Clone(t.adopted)
	var info wire.BatchInfo
	if err := wire.SubmitBatch.Execute(batchActivityCtx(sctx, "submit "+what), in).Get(sctx, &info); err != nil {
		if ids, ok := candidates(sctx, err); ok {
			// Whichever of them is this chunk's, none is another chunk's: they are known from now on.
			t.adopted = append(t.adopted, ids...)
			return wire.BatchInfo{}, &candidatesError{ids: ids, err: err}
		}
		return wire.BatchInfo{}, err
	}
	t.adopted = append(t.adopted, info.ID)
	return info, nil
}
