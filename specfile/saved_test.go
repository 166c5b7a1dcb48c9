package specfile

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestParseSavedReadsBackWhatWasSaved holds that a spec saved as its JSON (as the results store keeps it) reads
// back as the same spec, and that a saved spec that does not decode names its run.
func TestParseSavedReadsBackWhatWasSaved(t *testing.T) {
	for _, path := range []string{"../examples/quickstart/experiment.yaml", "../examples/bfi/experiment.yaml",
		"../examples/embed/experiment.yaml"} {
		spec, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		saved, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseSaved(saved, "run-1")
		if err != nil {
			t.Fatalf("%s: ParseSaved: %v", path, err)
		}
		again, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, saved) {
			t.Errorf("%s: the spec read back encodes to %d bytes unlike the %d saved", path, len(again), len(saved))
		}
		if spec.Hash() != back.Hash() {
			t.Errorf("%s: hash %s read back as %s", path, spec.Hash(), back.Hash())
		}
	}
	if _, err := ParseSaved([]byte(`{"name": 3}`), "run-2"); err == nil || !strings.Contains(err.Error(), "run-2") {
		t.Errorf("a saved spec that does not decode: err %v, want one naming run-2", err)
	}
}
