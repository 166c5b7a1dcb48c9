package results

import (
	"reflect"
	"strings"
	"testing"

	"github.com/silicolab/silico/wire"
)

// TestSummaryServed: the summary counts each model's cells by served model and fingerprint (most first, cells
// without provenance not counted), and warns for a model answered by two served models, not for one answered
// by one model under two fingerprints.
func TestSummaryServed(t *testing.T) {
	z := newSummarizer(testSpec(), "run", 0)
	for _, r := range []Row{
		{Model: "m1", Status: "ok", ServedModel: "one-2026-01-01", SystemFingerprint: "fp_a"},
		{Model: "m1", Status: "ok", ServedModel: "one-2026-02-01", SystemFingerprint: "fp_b"},
		{Model: "m1", Status: "ok", ServedModel: "one-2026-02-01", SystemFingerprint: "fp_b", Cached: true},
		{Model: "m1", Status: "failed"},
		{Model: "m2", Status: "ok", ServedModel: "two-x", SystemFingerprint: "fp_a"},
		{Model: "m2", Status: "ok", ServedModel: "two-x", SystemFingerprint: "fp_b"},
	} {
		z.add(&r)
	}
	s := z.summary()
	want := []wire.Served{{ServedModel: "one-2026-02-01", SystemFingerprint: "fp_b", Cells: 2},
		{ServedModel: "one-2026-01-01", SystemFingerprint: "fp_a", Cells: 1}}
	if !reflect.DeepEqual(s.Models[0].Served, want) {
		t.Errorf("m1 served %+v, want %+v", s.Models[0].Served, want)
	}
	if len(s.Models[1].Served) != 2 {
		t.Errorf("m2 served %+v, want two fingerprints of one model", s.Models[1].Served)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "model m1 was answered by 2 served models (one-2026-02-01, one-2026-01-01)") {
		t.Errorf("warnings %q, want one for m1", s.Warnings)
	}
}

// TestSummaryGreedySeeds: a model at temperature 0 with several seeds gets the warning, in Remarks too; one
// above 0, or a spec of one seed, does not.
func TestSummaryGreedySeeds(t *testing.T) {
	spec := testSpec()
	zero, some := 0.0, 0.7
	spec.Models[0].Params.Temperature = &zero
	spec.Models[1].Params.Temperature = &some
	s := newSummarizer(spec, "run", 0).summary()
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "model m1 has 2 seeds at temperature 0") {
		t.Errorf("warnings %q, want one for m1", s.Warnings)
	}
	if r := spec.Remarks(); len(r) != 1 || !strings.HasPrefix(r[0], "models[0].params.temperature: model m1 has 2 seeds") {
		t.Errorf("remarks %q", r)
	}
	spec.Seeds = spec.Seeds[:1]
	if s := newSummarizer(spec, "run", 0).summary(); len(s.Warnings) != 0 {
		t.Errorf("one seed: warnings %q", s.Warnings)
	}
}
