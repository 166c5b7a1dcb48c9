package specfile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

const analysisBase = `name: x
models: [{id: a, name: m, provider: sim}]
personas: [{id: p}]
questionnaire:
  options: ["1", "2"]
  items: [{id: "1", text: Q}]
`

// TestAnalysisBootstrap reads analysis.bootstrap: unset takes the defaults, samples 0 turns intervals off, and
// a spec that sets nothing keeps its JSON form free of the key.
func TestAnalysisBootstrap(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		samples int
		seed    int64
	}{
		{"", experiment.DefaultBootstrapSamples, experiment.DefaultBootstrapSeed},
		{"analysis: {bootstrap: {samples: 0}}\n", 0, experiment.DefaultBootstrapSeed},
		{"analysis: {bootstrap: {samples: 250, seed: 9007199254740993}}\n", 250, 9007199254740993},
		{"analysis: {bootstrap: {seed: 0}}\n", experiment.DefaultBootstrapSamples, 0},
	} {
		s, err := Parse([]byte(analysisBase+tc.doc), "x.yaml", ".")
		if err != nil {
			t.Fatalf("%q: %v", tc.doc, err)
		}
		if n, seed := s.Analysis.Bootstrap.Resolve(); n != tc.samples || seed != tc.seed {
			t.Errorf("%q: samples %d, seed %d; want %d, %d", tc.doc, n, seed, tc.samples, tc.seed)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if tc.doc == "" && strings.Contains(string(b), `"analysis"`) {
			t.Errorf("a spec without analysis writes it: %s", b)
		}
		back, err := Parse(b, "x.json", ".")
		if err != nil {
			t.Fatalf("%q: its JSON form does not read back: %v", tc.doc, err)
		}
		if n, seed := back.Analysis.Bootstrap.Resolve(); n != tc.samples || seed != tc.seed {
			t.Errorf("%q: JSON form reads back samples %d, seed %d", tc.doc, n, seed)
		}
	}
}

// TestAnalysisBootstrapErrors: every mistake names the file, line, field and what would be accepted.
func TestAnalysisBootstrapErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"analysis: {bootstrap: {samples: -1}}\n", "x.yaml:7:33: analysis.bootstrap.samples: -1 is out of range; want a number of resamples from 0 (no intervals) to 100000 (unset: 1000)"},
		{"analysis: {bootstrap: {samples: 100001}}\n", "x.yaml:7:33: analysis.bootstrap.samples: 100001 is out of range"},
		{"analysis: {bootstrap: {samples: many}}\n", "x.yaml:7:33: analysis.bootstrap.samples: want a whole number, got the string \"many\""},
		{"analysis: {bootstrap: {seed: 1.5}}\n", "x.yaml:7:30: analysis.bootstrap.seed: want a whole number, got the number 1.5"},
		{"analysis: {bootstrap: {sample: 10}}\n", "x.yaml:7:24: analysis.bootstrap.sample: unknown key \"sample\" (did you mean \"samples\"?); accepted keys: samples, seed"},
		{"analysis: {boot: {samples: 10}}\n", "x.yaml:7:12: analysis.boot: unknown key"},
	} {
		_, err := Parse([]byte(analysisBase+tc.doc), "x.yaml", ".")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v; want %q", tc.doc, err, tc.want)
		}
	}
}
