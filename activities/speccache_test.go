package activities

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/silicolab/silico/store"
)

// TestSharedSpecCache holds that a worker whose Specs a saver shares uses the spec the saver decoded, not a
// second copy decoded from the store, and that a spec PrepareRun saves from an inline input is the one its passes
// get.
func TestSharedSpecCache(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	raw, err := json.Marshal(testSpec("http://127.0.0.1:1", 2, 2))
	if err != nil {
		t.Fatal(err)
	}

	cache := &SpecCache{}
	s, digest, err := SaveSpec(ctx, st, "by-ref", raw)
	if err != nil {
		t.Fatal(err)
	}
	cache.Put("by-ref", s)
	acts := &Activities{Store: st, Specs: cache}
	got, err := acts.savedSpec(ctx, "by-ref", digest)
	if err != nil {
		t.Fatal(err)
	}
	if got != s {
		t.Errorf("the worker decoded the saved spec again instead of using the one in its shared cache")
	}

	own := &Activities{Store: st}
	if _, err := own.PrepareRun(ctx, PrepareInput{RunID: "inline", Spec: raw}); err != nil {
		t.Fatal(err)
	}
	first, ok := own.specCache().Get("inline")
	if !ok {
		t.Fatal("PrepareRun did not keep the spec it saved")
	}
	again, err := own.spec(ctx, "inline")
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("a pass decoded the spec PrepareRun had saved again")
	}
}
