package results_test

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/results"
)

// TestBFIReferenceScalesEqualR runs examples/bfi on the simulator and compares every line of its
// reference_scales.csv with R psych on the same personas × items matrix (psychometrics/testdata/
// reference_groups.csv, written by make_groups.R from such a run): where a group has fewer personas than the
// scale has items (the age bands, 2 or 4 personas for 5 items) both empty with a note; elsewhere model_alpha to
// 1e-9, model_omega_total empty with an "omega: " note exactly where psych's omega() stops, psych's number to
// 1e-9 otherwise. And reliability.csv's alpha_expected and
// omega_expected to 1e-9 of psych's on results.csv's expected scores (a float32 on the way missed by up to 7e-7).
func TestBFIReferenceScalesEqualR(t *testing.T) {
	ref := map[string]map[string]string{} // case → stat → value
	for _, r := range readAll(t, "../psychometrics/testdata/reference_groups.csv")[1:] {
		if ref[r[0]] == nil {
			ref[r[0]] = map[string]string{}
		}
		ref[r[0]][r[1]] = r[3]
	}
	dir := runExample(t, "../examples/bfi/experiment.yaml")
	recs := readAll(t, filepath.Join(dir, results.ReferenceScalesFile))
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	// The lines of scale "all" (every item, one per group) have no alpha or omega.
	recs = slices.DeleteFunc(recs, func(r []string) bool { return r[col["scale"]] == results.ScaleOverall })
	if len(recs) != 36 {
		t.Fatalf("reference_scales.csv has %d lines of a scale, want 35 scale × group lines", len(recs)-1)
	}
	refused, fewer := 0, 0
	for _, r := range recs[1:] {
		name := r[col["scale"]] + "/" + r[col["group"]]
		want := ref[name]
		if want == nil {
			t.Fatalf("no R reference for %s", name)
		}
		note := r[col["note"]]
		// Fewer personas than items: psych computes alpha (and now and then omega) on a singular matrix; silico
		// refuses both and says why.
		if n, _ := strconv.Atoi(r[col["n_personas"]]); n < int(mustFloat(t, want["n_items"])) {
			fewer++
			if r[col["model_alpha"]] != "" || r[col["model_omega_total"]] != "" || !strings.HasPrefix(note, "alpha and omega: fewer respondents than items") {
				t.Errorf("%s: %d personas for %s items: alpha %q, omega %q, note %q; want both empty, saying why", name, n, want["n_items"],
					r[col["model_alpha"]], r[col["model_omega_total"]], note)
			}
			continue
		}
		if !sameNumber(r[col["model_alpha"]], want["raw_alpha"]) {
			t.Errorf("%s: model_alpha %q, psych %s", name, r[col["model_alpha"]], want["raw_alpha"])
		}
		if want["omega_refused"] == "1" {
			refused++
			if r[col["model_omega_total"]] != "" || !strings.HasPrefix(note, "omega: ") {
				t.Errorf("%s: psych's omega() stops; the line has omega %q, note %q", name, r[col["model_omega_total"]], note)
			}
			continue
		}
		if !sameNumber(r[col["model_omega_total"]], want["omega_total"]) || note != "" {
			t.Errorf("%s: model_omega_total %q (note %q), psych %s", name, r[col["model_omega_total"]], note, want["omega_total"])
		}
	}
	// On bfi every matrix where omega() stops has fewer personas than items, refused before omega is tried;
	// psychometrics' TestOmegaWherePsychRefuses holds omega to psych's stops on the same matrices.
	if fewer == 0 || fewer+refused != 20 {
		t.Errorf("%d lines with fewer personas than items and %d more where psych refuses omega; want the 20 age-band lines", fewer, refused)
	}

	recs = readAll(t, filepath.Join(dir, results.ReliabilityFile))
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, r := range recs[1:] {
		name := strings.Join([]string{"expected", r[col["model"]], r[col["seed"]], r[col["scale"]]}, "/")
		want := ref[name]
		if want == nil {
			t.Fatalf("no R reference for %s", name)
		}
		for _, c := range [][2]string{{"alpha_expected", "raw_alpha"}, {"omega_expected", "omega_total"}} {
			if !sameNumber(r[col[c[0]]], want[c[1]]) {
				t.Errorf("%s: %s %q, psych %s", name, c[0], r[col[c[0]]], want[c[1]])
			}
		}
	}
}

// mustFloat parses a number of a reference file.
func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("reference value %q: %v", s, err)
	}
	return v
}

// sameNumber reports whether the CSV text got reads as a number within 1e-9 of the reference text want.
func sameNumber(got, want string) bool {
	g, err1 := strconv.ParseFloat(got, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && math.Abs(g-w) <= 1e-9
}

// runYAML writes spec to a file of its own and runs it as runExample does, returning the output directory.
func runYAML(t *testing.T, spec string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "experiment.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return runExample(t, path)
}

// columnOf returns the index of each named column of recs' header, failing the test for one it lacks.
func columnOf(t *testing.T, recs [][]string) func(name string) int {
	return func(name string) int {
		t.Helper()
		i := slices.Index(recs[0], name)
		if i < 0 {
			t.Fatalf("no column %s in %v", name, recs[0])
		}
		return i
	}
}

func readAll(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}
