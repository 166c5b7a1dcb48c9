package activities

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// TestPrepareRunPlansBatchMode: a spec in batch mode is planned with its batch settings, which the workflow
// reads to run the model's passes through the provider's batch API; a sync one is planned without.
func TestPrepareRunPlansBatchMode(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := &Activities{Store: st, OutputRoot: t.TempDir()}
	spec := func(batch string) json.RawMessage {
		return json.RawMessage(`{"name":"x","models":[{"id":"m","name":"sim-model","provider":"sim"` + batch + `}],
"personas":[{"id":"p","attributes":{"name":"A"}}],
"questionnaire":{"options":[{"id":"1","text":"1. No","weight":1}],"items":[{"id":"1","text":"Q?"}]}}`)
	}
	plan, err := a.PrepareRun(ctx, wire.PrepareInput{RunID: "batch", Spec: spec(`,"batch":{"mode":"batch"}`)})
	if err != nil {
		t.Fatalf("batch mode: %v", err)
	}
	if b := plan.Models[0].Batch; b.Mode != experiment.BatchBatch || b.MaxRequests != 50_000 {
		t.Errorf("batch mode planned as %+v, want mode batch with the provider's limits", b)
	}
	plan, err = a.PrepareRun(ctx, wire.PrepareInput{RunID: "sync", Spec: spec(`,"batch":{"mode":"sync"}`)})
	if err != nil {
		t.Fatalf("sync mode: %v", err)
	}
	if b := plan.Models[0].Batch; b.Mode == experiment.BatchBatch {
		t.Errorf("sync mode planned as %+v", b)
	}
}
