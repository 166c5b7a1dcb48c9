package activities

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/store"
)

// TestPrepareRunRefusesBatchMode: until the batch pass runs, a spec in batch mode fails before any call instead
// of running its cells synchronously at the full price.
func TestPrepareRunRefusesBatchMode(t *testing.T) {
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
	_, err = a.PrepareRun(ctx, PrepareInput{RunID: "batch", Spec: spec(`,"batch":{"mode":"batch"}`)})
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ClassInvalidSpec || !ae.NonRetryable() || !strings.Contains(err.Error(), "models[0].batch.mode") {
		t.Errorf("batch mode: %v, want a non-retryable %s naming models[0].batch.mode", err, ClassInvalidSpec)
	}
	if _, err := a.PrepareRun(ctx, PrepareInput{RunID: "sync", Spec: spec(`,"batch":{"mode":"sync"}`)}); err != nil {
		t.Errorf("sync mode: %v", err)
	}
}
