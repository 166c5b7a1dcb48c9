package results_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

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
	rscript, err := exec.LookPath("Rscript")
	if err != nil {
		t.Skip("Rscript not installed: the reference intervals are not replayed in R")
	}
	if err := exec.Command(rscript, "-e", "library(psych); library(GPArotation)").Run(); err != nil {
		t.Skipf("R lacks psych or GPArotation (%v): the reference intervals are not replayed in R", err)
	}
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
	dir := runInput(t, canonical, h)
	f, err := os.Create(filepath.Join(dir, "resamples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteReferenceResamples(f, spec); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
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
