package results_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/silicolab/silico/results"
)

// TestBFIValidityIntervalsEqualR runs examples/bfi on the simulator with 50 resamples, writes the persona and
// respondent resamples validity.csv's intervals come from (results.WriteValidityResamples), and has
// check_validity.R recompute every line on each resample with base R and psych and compare every model, human
// and value interval (type-7 quantiles of the defined resampled values) to 1e-9; then the same on a copy with one
// interval bound changed, which the script must reject. Skipped without Rscript, psych, GPArotation and yaml.
func TestBFIValidityIntervalsEqualR(t *testing.T) {
	rscript := rscriptWith(t, "psych", "GPArotation", "yaml")
	const specPath = "../examples/bfi/experiment.yaml"
	dir, resamples := runBFIWithResamples(t, "validity_resamples.csv", func(w io.Writer, a *results.Analysis) error {
		return results.WriteValidityResamples(w, a.Spec)
	})
	run := func(d string) (string, bool) { return checkValidityR(t, rscript, d, specPath, resamples) }
	out, ok := run(dir)
	t.Logf("check_validity.R:\n%s", out)
	if !ok || !strings.Contains(out, "every figure agrees") {
		t.Fatalf("check_validity.R failed on the bfi intervals:\n%s", out)
	}
	// Both sides empty counts as agreement, so ask that numbers were compared: 5 scales × (2 r2, 4 differences,
	// 6 sd_ratio, acquiescence, contradiction) lines with a model and a human interval, sd_ratio's and
	// congruence's value intervals; a few are empty where too few resamples define the statistic.
	var n int
	i := strings.Index(out, "checked ")
	if i < 0 {
		t.Fatalf("check_validity.R did not say how many interval figures it compared:\n%s", out)
	}
	if _, err := fmt.Sscanf(out[i:], "checked %d interval figures", &n); err != nil || n < 300 {
		t.Errorf("check_validity.R compared %d interval figures (%v), want at least 300", n, err)
	}

	// One interval bound changed: the script must say so.
	bad := t.TempDir()
	recs := readAll(t, filepath.Join(dir, results.ValidityFile))
	col := columnOf(t, recs)
	lo := recs[1][col("model_lo")]
	if lo == "" {
		t.Fatal("the first line of validity.csv has no model_lo to corrupt")
	}
	for _, name := range []string{"distributions.csv", "results.csv", results.ValidityFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == results.ValidityFile {
			s := strings.Replace(string(b), ","+lo+",", fmt.Sprintf(",%s1234,", strings.TrimSuffix(lo[:min(len(lo), 8)], ".")), 1)
			if s == string(b) {
				t.Fatal("the corruption changed nothing")
			}
			b = []byte(s)
		}
		if err := os.WriteFile(filepath.Join(bad, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, ok := run(bad); ok || !strings.Contains(out, "model_lo") {
		t.Errorf("check_validity.R passed a validity.csv with a changed interval bound:\n%s", out)
	}
}
