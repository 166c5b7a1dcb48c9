package results_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/silicolab/silico/results"
)

// rscriptWith returns the path of Rscript when it is installed with every one of pkgs, skipping the test
// (saying which is missing) otherwise.
func rscriptWith(t *testing.T, pkgs ...string) string {
	t.Helper()
	rscript, err := exec.LookPath("Rscript")
	if err != nil {
		t.Skip("Rscript not installed (apt-get install r-base-core r-cran-psych r-cran-gparotation r-cran-yaml)")
	}
	for _, p := range pkgs {
		if err := exec.Command(rscript, "-e", fmt.Sprintf("quit(status = !requireNamespace(%q, quietly = TRUE))", p)).Run(); err != nil {
			t.Skipf("R package %s not installed", p)
		}
	}
	return rscript
}

// checkValidityR runs examples/bfi/check_validity.R on the run directory dir and the spec (and a file of
// resamples to replay, when given), returning its output and whether it passed.
func checkValidityR(t *testing.T, rscript, dir, spec string, resamples ...string) (string, bool) {
	t.Helper()
	args := append([]string{"../examples/bfi/check_validity.R", dir, spec}, resamples...)
	out, err := exec.Command(rscript, args...).CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatal(err)
	}
	return string(out), err == nil
}

// TestBFIValidityEqualR runs examples/bfi on the simulator and has check_validity.R recompute every point value
// of its validity.csv with base R and psych (to 1e-9, empty exactly where R has nothing); then the same with a
// survey weight per respondent, whose figures R computes with lm(weights =), cov.wt and weighted.mean; and last
// on a validity.csv with one number changed, which the script must reject.
func TestBFIValidityEqualR(t *testing.T) {
	rscript := rscriptWith(t, "psych", "GPArotation", "yaml")
	dir := runExample(t, "../examples/bfi/experiment.yaml")
	out, ok := checkValidityR(t, rscript, dir, "../examples/bfi/experiment.yaml")
	t.Logf("unweighted:\n%s", out)
	if !ok || !strings.Contains(out, "every figure agrees") {
		t.Fatalf("check_validity.R failed on the bfi run:\n%s", out)
	}

	// The weighted copy: bfi.csv with a column w, a weight that varies with the respondent's line.
	wdir := t.TempDir()
	raw, err := os.ReadFile("../examples/bfi/bfi.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] += ",w"
			continue
		}
		lines[i] += fmt.Sprintf(",%g", 0.5+float64(i%7)/4)
	}
	spec, err := os.ReadFile("../examples/bfi/experiment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	weighted := strings.Replace(string(spec), "reference: {file: bfi.csv, groups: [gender, age_band]}",
		"reference: {file: bfi.csv, groups: [gender, age_band], weight: w}\nanalysis: {bootstrap: {samples: 0}}", 1)
	if weighted == string(spec) {
		t.Fatal("examples/bfi/experiment.yaml no longer has the reference line this test rewrites")
	}
	items, err := os.ReadFile("../examples/bfi/items.csv")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"bfi.csv": []byte(strings.Join(lines, "\n") + "\n"),
		"experiment.yaml": []byte(weighted), "items.csv": items} {
		if err := os.WriteFile(filepath.Join(wdir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wrun := runExample(t, filepath.Join(wdir, "experiment.yaml"))
	out, ok = checkValidityR(t, rscript, wrun, filepath.Join(wdir, "experiment.yaml"))
	t.Logf("weighted:\n%s", out)
	if !ok {
		t.Fatalf("check_validity.R failed on the weighted bfi run:\n%s", out)
	}
	plain, wtd := readAll(t, filepath.Join(dir, results.ValidityFile)), readAll(t, filepath.Join(wrun, results.ValidityFile))
	col := columnOf(t, plain)
	if len(plain) != len(wtd) {
		t.Fatalf("%d lines unweighted, %d weighted", len(plain), len(wtd))
	}
	changed := 0
	for i := 1; i < len(plain); i++ {
		if plain[i][col("human_value")] != wtd[i][col("human_value")] {
			changed++
		}
		if wtd[i][col("human_lo")] != "" {
			t.Errorf("line %d: an interval with bootstrap samples 0", i)
		}
	}
	if changed == 0 {
		t.Error("the weights changed no human figure: the weighted path is not tested")
	}

	// One number off by 1e-6: the script must say so.
	bad := t.TempDir()
	for _, name := range []string{"distributions.csv", "results.csv", results.ValidityFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == results.ValidityFile {
			recs := readAll(t, filepath.Join(dir, name))
			v := recs[1][col("model_value")]
			if v == "" {
				t.Fatal("the first line of validity.csv has no model_value to corrupt")
			}
			b = []byte(strings.Replace(string(b), ","+v+",", fmt.Sprintf(",%s1234,", strings.TrimSuffix(v[:min(len(v), 8)], ".")), 1))
		}
		if err := os.WriteFile(filepath.Join(bad, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, ok := checkValidityR(t, rscript, bad, "../examples/bfi/experiment.yaml"); ok {
		t.Errorf("check_validity.R passed a validity.csv with a changed number:\n%s", out)
	}
}
