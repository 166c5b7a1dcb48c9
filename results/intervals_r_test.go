package results_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
)

// TestBFIIntervalsEqualR runs examples/bfi on the simulator with 50 resamples, writes the resamples and splits
// it took beside the outputs (results.WriteReferenceResamples), and has examples/bfi/check_intervals.R recompute
// with base R and psych the alignment, tvd, simbench, uniform figures and split-half ceiling of every line of
// reference.csv, every interval of reference.csv, the intervals of reference_scales.csv's means of w1,
// alignment and simbench on every line, and its alpha and omega intervals for scale E in groups all and gender=2,
// each to 1e-9; then changes one bound of a scale's mean by 1e-6 and requires the script to reject it. Skipped
// when Rscript with psych and GPArotation is not installed.
func TestBFIIntervalsEqualR(t *testing.T) {
	rscript := rscriptWith(t, "psych", "GPArotation")
	dir, _ := runBFIWithResamples(t, "resamples.csv", results.WriteReferenceResamples)
	out, err := exec.Command(rscript, "../examples/bfi/check_intervals.R", dir, "../examples/bfi", "all,gender=2", "E").CombinedOutput()
	t.Logf("check_intervals.R: %s", out)
	if err != nil {
		t.Fatalf("check_intervals.R: %v", err)
	}
	// Both sides empty counts as agreement in the script, so ask that it compared numbers: 175 lines × 20 item
	// figures, 42 scale lines × 6 mean bounds and 2 groups × 8 reliability bounds, less the few a group without
	// a model defines.
	var n int
	if _, err := fmt.Sscanf(string(out), "checked %d figures", &n); err != nil || n < 3700 {
		t.Errorf("check_intervals.R compared %d figures (%v), want over 3700", n, err)
	}

	// The same files with one scale mean's bound moved by 1e-6 must fail.
	path := filepath.Join(dir, results.ReferenceScalesFile)
	edit(t, path, path, func(recs [][]string, col func(string) int) {
		c := col("alignment_lo")
		row := slices.IndexFunc(recs[1:], func(r []string) bool { return r[c] != "" }) + 1
		if row < 1 {
			t.Fatal("reference_scales.csv has no alignment_lo to change")
		}
		v, err := strconv.ParseFloat(recs[row][c], 64)
		if err != nil {
			t.Fatal(err)
		}
		recs[row][c] = strconv.FormatFloat(v+1e-6, 'g', -1, 64)
	})
	out, err = exec.Command(rscript, "../examples/bfi/check_intervals.R", dir, "../examples/bfi", "all", "E").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "mean alignment lo") {
		t.Errorf("check_intervals.R accepted a scale mean's bound moved by 1e-6 (%v): %s", err, out)
	}
}

// runBFIWithResamples runs examples/bfi on the simulator with 50 bootstrap resamples and writes, beside its
// outputs, the file name that write makes of the resamples the export drew, for an R script to replay. It
// returns the output directory and the file's path.
func runBFIWithResamples(t *testing.T, name string, write func(io.Writer, *experiment.Spec) error) (dir, path string) {
	t.Helper()
	spec, err := specfile.Load("../examples/bfi/experiment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	samples := 50
	spec.Analysis.Bootstrap.Samples = &samples
	_, canonical, err := spec.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	h, err := sim.New(sim.Config{Forget: true})
	if err != nil {
		t.Fatal(err)
	}
	dir = runInput(t, canonical, h)
	path = filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f, spec); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, path
}
