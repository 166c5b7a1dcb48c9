package results_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/results"
)

// TestBFICheckR runs examples/bfi on the simulator and then examples/bfi/check.R on its outputs: R recomputes
// every figure of reference.csv, reference_scales.csv and distributions.csv, and order_bias.csv's point values,
// from results.csv, bfi.csv and the spec with base R and psych, and exits non-zero when one differs by more than
// 1e-9 or is empty on one side only. The same script run on a copy with four figures changed must fail and name
// each, so a check.R that stopped comparing would fail here too. Skips when Rscript, psych, GPArotation or yaml is missing.
func TestBFICheckR(t *testing.T) {
	rscript := rscriptWith(t, "psych", "GPArotation", "yaml")
	dir := runExample(t, "../examples/bfi/experiment.yaml")
	out, err := runCheckR(rscript, dir)
	if err != nil {
		t.Fatalf("check.R: %v\n%s", err, out)
	}
	t.Logf("check.R:\n%s", out)
	for _, want := range []string{"ok: every figure agrees with R", "reference.csv          w1 ",
		"reference_scales.csv   model_omega_total ", "distributions.csv      p ", "order_bias.csv         first_effect ",
		"order_bias.csv         marginal_p "} {
		if !strings.Contains(out, want) {
			t.Errorf("check.R's output lacks %q", want)
		}
	}

	// A copy with a w1 off by 1e-6, a human alpha emptied, a number where psych's omega stops and a first_effect
	// off by 1e-6.
	bad := t.TempDir()
	for _, name := range []string{"results.csv", results.DistributionsFile} {
		copyFile(t, filepath.Join(dir, name), filepath.Join(bad, name))
	}
	// nudge adds 1e-6 to column name of the first line.
	nudge := func(name string) func(recs [][]string, col func(string) int) {
		return func(recs [][]string, col func(string) int) {
			v, err := strconv.ParseFloat(recs[1][col(name)], 64)
			if err != nil {
				t.Fatal(err)
			}
			recs[1][col(name)] = strconv.FormatFloat(v+1e-6, 'g', -1, 64)
		}
	}
	edit(t, filepath.Join(dir, results.ReferenceFile), filepath.Join(bad, results.ReferenceFile), nudge("w1"))
	edit(t, filepath.Join(dir, results.ReferenceScalesFile), filepath.Join(bad, results.ReferenceScalesFile),
		func(recs [][]string, col func(string) int) {
			recs[1][col("human_alpha")] = ""
			for _, r := range recs[1:] {
				if r[col("model_omega_total")] == "" {
					r[col("model_omega_total")] = "0.5"
					return
				}
			}
			t.Fatal("no line of reference_scales.csv where psych's omega stops")
		})
	edit(t, filepath.Join(dir, results.OrderBiasFile), filepath.Join(bad, results.OrderBiasFile), nudge("first_effect"))
	out, err = runCheckR(rscript, bad)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("check.R on changed outputs: %v, want a non-zero exit\n%s", err, out)
	}
	for _, want := range []string{"reference.csv w1 ", "reference_scales.csv human_alpha ",
		"reference_scales.csv model_omega_total ", "order_bias.csv first_effect ", "FAIL: 4 disagreements"} {
		if !strings.Contains(out, want) {
			t.Errorf("check.R on changed outputs does not report %q:\n%s", want, out)
		}
	}
}

// runCheckR runs examples/bfi/check.R on the run directory dir from the repository root, returning its output.
func runCheckR(rscript, dir string) (string, error) {
	cmd := exec.Command(rscript, "examples/bfi/check.R", dir, "examples/bfi/experiment.yaml")
	cmd.Dir = ".."
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit writes the CSV file from, changed by change, to to.
func edit(t *testing.T, from, to string, change func(recs [][]string, col func(string) int)) {
	t.Helper()
	recs := readAll(t, from)
	change(recs, columnOf(t, recs))
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(recs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
