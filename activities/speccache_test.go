package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
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
	if _, err := own.PrepareRun(ctx, wire.PrepareInput{RunID: "inline", Spec: raw}); err != nil {
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

// savedBytes is a SpecSaver that keeps what it is given.
type savedBytes map[string][]byte

func (s savedBytes) SaveRun(_ context.Context, run string, spec []byte) error {
	s[run] = spec
	return nil
}

// TestCanonicalIsWhatSaveSpecSaves holds SaveCanonical's promise: a spec's canonical JSON is what SaveSpec saves
// for it (decoding it with the spec files' decoder and encoding the result gives the same bytes), so a run whose
// spec the starter saved with SaveCanonical has the digest PrepareRun gives it from an inline input.
func TestCanonicalIsWhatSaveSpecSaves(t *testing.T) {
	paths, err := filepath.Glob("../examples/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 3 {
		t.Fatalf("found %d example specs, want the quickstart, bfi and embed", len(paths))
	}
	ctx := context.Background()
	// encoding/json writes 1e-7 and 1e+21 with an exponent and no decimal point, which YAML reads as a string
	// unless the decoder knows better: a spec with such numbers must save and read back like any other.
	paths = append(paths, "tiny floats")
	for _, path := range paths {
		var spec *experiment.Spec
		var err error
		if path == "tiny floats" {
			spec, err = specfile.Load("../examples/quickstart/experiment.yaml")
			if err == nil {
				tiny, huge := 1e-7, 1e21
				spec.Models[0].Params.Temperature = &tiny
				spec.Models[0].Price = &experiment.Price{InputPerMTok: huge, OutputPerMTok: 5e-8}
			}
		} else {
			spec, err = specfile.Load(path)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		c, canonical, err := spec.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: the canonical copy does not validate: %v", path, err)
		}
		saved := savedBytes{}
		_, digest, err := SaveSpec(ctx, saved, "r", canonical)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !bytes.Equal(saved["r"], canonical) {
			t.Errorf("%s: SaveSpec saved %d bytes that differ from the %d of the canonical JSON", path, len(saved["r"]), len(canonical))
		}
		d2, err := SaveCanonical(ctx, saved, "r2", canonical)
		if err != nil {
			t.Fatal(err)
		}
		if d2 != digest {
			t.Errorf("%s: SaveCanonical's digest %s, SaveSpec's %s", path, d2, digest)
		}
		if h := spec.Hash(); h != experiment.HashOf(canonical) {
			t.Errorf("%s: Hash %s, HashOf(canonical) %s", path, h, experiment.HashOf(canonical))
		}
	}
}
