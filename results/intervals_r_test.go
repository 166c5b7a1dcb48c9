package results_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
)

// TestBFIIntervalsEqualR runs examples/bfi on the simulator with 50 resamples, writes the resamples, splits and
// perfect-model draws it took beside the outputs (results.WriteReferenceResamples), and has
// examples/bfi/check_intervals.R recompute with base R and psych the alignment, tvd, simbench, uniform figures,
// split-half distance and perfect-model floors (means and intervals) of every line of reference.csv, every
// interval of reference.csv, the intervals of reference_scales.csv's means of w1, alignment and simbench and
// the floors of its means on every line, and its alpha and omega intervals for scale E in groups all and
// gender=2, each to 1e-9; then moves one bound of a scale's mean, one of an item's floor and one of a scale's
// floor by 1e-6 and requires the script to reject each. Skipped when Rscript with psych and GPArotation is not
// installed.
func TestBFIIntervalsEqualR(t *testing.T) {
	rscript := rscriptWith(t, "psych", "GPArotation")
	dir, _ := runBFIWithResamples(t, "resamples.csv", results.WriteReferenceResamples)
	out, err := exec.Command(rscript, "../examples/bfi/check_intervals.R", dir, "../examples/bfi", "all,gender=2", "E").CombinedOutput()
	t.Logf("check_intervals.R: %s", out)
	if err != nil {
		t.Fatalf("check_intervals.R: %v", err)
	}
	// Both sides empty counts as agreement in the script, so ask that it compared numbers: 175 lines × 35 item
	// figures, 42 scale lines × 18 mean and floor figures and 2 groups × 8 reliability bounds, less the few a
	// group without a model defines.
	var n int
	if _, err := fmt.Sscanf(string(out), "checked %d figures", &n); err != nil || n < 6500 {
		t.Errorf("check_intervals.R compared %d figures (%v), want over 6500", n, err)
	}

	// The same files with a scale mean's bound, an item's floor's bound and a scale's floor's bound each moved by
	// 1e-6 must fail, naming each.
	move := func(file, column string) {
		path := filepath.Join(dir, file)
		edit(t, path, path, func(recs [][]string, col func(string) int) {
			c := col(column)
			row := slices.IndexFunc(recs[1:], func(r []string) bool { return r[c] != "" }) + 1
			if row < 1 {
				t.Fatalf("%s has no %s to change", file, column)
			}
			v, err := strconv.ParseFloat(recs[row][c], 64)
			if err != nil {
				t.Fatal(err)
			}
			recs[row][c] = strconv.FormatFloat(v+1e-6, 'g', -1, 64)
		})
	}
	move(results.ReferenceScalesFile, "alignment_lo")
	move(results.ReferenceFile, "perfect_w1_hi")
	move(results.ReferenceScalesFile, "perfect_tvd_lo")
	out, err = exec.Command(rscript, "../examples/bfi/check_intervals.R", dir, "../examples/bfi", "all", "E").CombinedOutput()
	for _, want := range []string{"mean alignment lo", "perfect w1 hi", "perfect tvd lo"} {
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("check_intervals.R accepted a bound moved by 1e-6 (%v; %q not named): %s", err, want, out)
		}
	}
}

// runBFIWithResamples runs examples/bfi on the simulator with 50 bootstrap resamples and writes, beside its
// outputs, the file name that write makes of the resamples the export drew (from the run analyzed again), for
// an R script to replay. It returns the output directory and the file's path.
func runBFIWithResamples(t *testing.T, name string, write func(io.Writer, *results.Analysis) error) (dir, path string) {
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
	dir, src, input := runInputStore(t, canonical, h)
	a, err := results.Analyze(context.Background(), src, input, "run", 0)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f, a); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, path
}
