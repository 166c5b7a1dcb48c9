package results

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
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

// TestSummaryCoverage: a model's coverage is the mean over its answered logprob cells, a cell without a
// distribution counting 0, failed and content-filtered cells and other sources left out; a mean below
// wire.LowCoverage is warned, one at it is not, and a model that reads no logprobs has none.
func TestSummaryCoverage(t *testing.T) {
	spec := testSpec()
	spec.Models[0].Answer = &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs}
	z := newSummarizer(spec, "run", 0)
	c := func(v float64) *float64 { return &v }
	L := experiment.ProbsFromLogprobs
	for _, r := range []Row{
		{Model: "m1", Status: "ok", ProbsSource: L, Coverage: c(0.6)},
		{Model: "m1", Status: "ok", ProbsSource: L, Coverage: c(0.5)},
		{Model: "m1", Status: "unparsed", ProbsSource: L}, // no label found: 0
		{Model: "m1", Status: "failed", ProbsSource: L},
		{Model: "m1", Status: "unparsed", ProbsSource: L, ErrorClass: errclass.ContentFiltered},
		{Model: "m1", Status: "ok", ProbsSource: experiment.ProbsFromVerbalized, Coverage: c(1)},
		{Model: "m2", Status: "ok"},
	} {
		z.add(&r)
	}
	s := z.summary()
	if m := s.Models[0]; m.Coverage == nil || math.Abs(*m.Coverage-1.1/3) > 1e-15 || m.CoverageCells != 3 {
		t.Fatalf("m1 coverage %v over %d cells, want %v over 3", m.Coverage, m.CoverageCells, 1.1/3)
	}
	if s.Models[1].Coverage != nil {
		t.Errorf("m2 reads no logprobs, coverage %v", *s.Models[1].Coverage)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "model m1 put on average 0.37 of the label token's probability on the labels the prompt showed (coverage, over 3 cells; below 0.5)") {
		t.Errorf("warnings %q, want one for m1", s.Warnings)
	}
	at := wire.ModelSummary{Model: "m", Coverage: c(wire.LowCoverage), CoverageCells: 1}
	if w := wire.CoverageWarning(at); w != "" {
		t.Errorf("coverage at %v warned: %s", wire.LowCoverage, w)
	}
}
