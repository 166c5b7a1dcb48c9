package results_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
)

// TestBFIIntervalsEqualR runs examples/bfi on the simulator with 50 resamples, writes the resamples and splits
// it took beside the outputs (results.WriteReferenceResamples), and has examples/bfi/check_intervals.R recompute
// with base R and psych the alignment, tvd, simbench, uniform figures and split-half ceiling of every line of
// reference.csv, every interval of reference.csv, and the alpha and omega intervals of reference_scales.csv
// for scale E in groups all and gender=2, each to 1e-9. Skipped when Rscript with psych and GPArotation is not
// installed.
func TestBFIIntervalsEqualR(t *testing.T) {
	rscript := rscriptWith(t, "psych", "GPArotation")
	dir, _ := runBFIWithResamples(t, "resamples.csv", results.WriteReferenceResamples)
	out, err := exec.Command(rscript, "../examples/bfi/check_intervals.R", dir, "../examples/bfi", "all,gender=2", "E").CombinedOutput()
	t.Logf("check_intervals.R: %s", out)
	if err != nil {
		t.Fatalf("check_intervals.R: %v", err)
	}
	// Both sides empty counts as agreement in the script, so ask that it compared numbers: 175 lines × 20 item
	// figures and 2 groups × 8 interval bounds, less the few a group without a model defines.
	var n int
	if _, err := fmt.Sscanf(string(out), "checked %d figures", &n); err != nil || n < 3000 {
		t.Errorf("check_intervals.R compared %d figures (%v), want over 3000", n, err)
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
