package psychometrics

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readWeights reads a weights.csv: a header and one weight a line.
func readWeights(t *testing.T, dir string) []float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "weights.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))[1:]
	w := make([]float64, len(lines))
	for i, s := range lines {
		if w[i], err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// weightedCase is a matrix of the weighted reference with its weights (nil for the unit cases).
type weightedCase struct {
	name  string
	names []string
	x     [][]float64
	w     []float64
}

func weightedCases(t *testing.T, dir string) []weightedCase {
	t.Helper()
	w := readWeights(t, dir)
	var out []weightedCase
	for _, v := range []string{"weighted", "unit"} {
		for _, m := range []string{"bfi_A", "bfi_C", "expected_A", "bfi_A_complete"} {
			file := m
			if m == "bfi_A_complete" {
				file = "bfi_A"
			}
			names, x := matrix(t, file+".csv")
			wx := w[:len(x)]
			if m == "bfi_A_complete" {
				var cx [][]float64
				var cw []float64
				for r, row := range x {
					if !slices.ContainsFunc(row, IsMissing) {
						cx = append(cx, row)
						cw = append(cw, wx[r])
					}
				}
				x, wx = cx, cw
			}
			if v == "unit" {
				wx = nil
			}
			out = append(out, weightedCase{v + "/" + m, names, x, wx})
		}
	}
	return out
}

// TestWeightedAgainstR compares the weighted pairwise covariances and correlations, α and ω from them and the
// one-factor loadings with R's (testdata/reference_weighted.csv, see make_weighted.R): psych's bfi scales and a
// non-integer matrix, weighted (40 respondents weigh 0) and unweighted, with pairwise missing answers and on
// the complete rows only (where one cov.wt call must agree too).
func TestWeightedAgainstR(t *testing.T) { checkWeighted(t, "testdata") }

// TestWeightedAgainstRLive runs make_weighted.R afresh, when R is installed, and compares with what it writes.
func TestWeightedAgainstRLive(t *testing.T) {
	if _, err := exec.LookPath("Rscript"); err != nil {
		t.Skip("Rscript not installed; TestWeightedAgainstR compares with the committed reference")
	}
	dir := t.TempDir()
	cmd := exec.Command("Rscript", "psychometrics/testdata/make_weighted.R", dir)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("there is no package")) {
			t.Skipf("R psych is not installed: %s", out)
		}
		t.Fatalf("make_weighted.R: %v\n%s", err, out)
	}
	for _, name := range []string{"weights.csv", "grouping.csv"} {
		got, _ := os.ReadFile(filepath.Join(dir, name))
		want, _ := os.ReadFile(filepath.Join("testdata", name))
		if !bytes.Equal(got, want) {
			t.Fatalf("make_weighted.R wrote another %s than the committed one", name)
		}
	}
	checkWeighted(t, dir)
}

func checkWeighted(t *testing.T, dir string) {
	ref := readReferenceFile(t, filepath.Join(dir, "reference_weighted.csv"))
	var w worst
	for _, c := range weightedCases(t, dir) {
		rc := ref[c.name]
		if rc == nil {
			t.Errorf("no reference for %s", c.name)
			continue
		}
		cov, err := Covariances(c.x, c.w)
		if err != nil {
			t.Fatal(err)
		}
		cor, err := Correlations(c.x, c.w)
		if err != nil {
			t.Fatal(err)
		}
		entries := 0
		for i := range c.names {
			for j := i; j < len(c.names); j++ {
				key := c.names[i] + "|" + c.names[j]
				for _, m := range []struct {
					stat string
					got  float64
				}{{"cov", cov[i][j]}, {"cor", cor[i][j]}, {"cov_wt", cov[i][j]}, {"cor_wt", cor[i][j]}} {
					want, ok := rc.items[m.stat][key]
					if !ok {
						if !strings.HasSuffix(m.stat, "_wt") {
							t.Errorf("%s: no %s %s in the reference", c.name, m.stat, key)
						}
						continue
					}
					entries++
					if !w.near(m.got, want) {
						t.Errorf("%s %s %s = %.17g, R %.17g", c.name, m.stat, key, m.got, want)
					}
				}
			}
		}
		if want := len(c.names) * (len(c.names) + 1); entries < want {
			t.Errorf("%s: %d matrix entries checked, want at least %d", c.name, entries, want)
		}
		r := ScaleReliabilityWeighted(c.x, c.w)
		if r.Err != nil || r.OmegaErr != nil {
			t.Fatalf("%s: %v / %v", c.name, r.Err, r.OmegaErr)
		}
		if got := float64(len(r.Items)); got != rc.totals["n_items"] {
			t.Fatalf("%s: %v items, psych kept %v", c.name, got, rc.totals["n_items"])
		}
		for _, s := range []struct {
			stat string
			got  float64
		}{{"raw_alpha", r.Raw}, {"std_alpha", r.Std}, {"average_r", r.AverageR}, {"omega_total", r.Omega}} {
			if want := rc.totals[s.stat]; !w.near(s.got, want) {
				t.Errorf("%s %s = %.17g, psych %.17g", c.name, s.stat, s.got, want)
			}
		}
		l, err := OneFactorLoadings(sub(cor, r.Items))
		if err != nil {
			t.Fatalf("%s loadings: %v", c.name, err)
		}
		for k, col := range r.Items {
			name := c.names[col]
			for _, s := range []struct {
				stat string
				got  float64
			}{{"r_drop", r.ItemRest[k]}, {"alpha_if_dropped", r.IfDropped[k]}, {"loading", l[k]}} {
				want, ok := rc.items[s.stat][name]
				if !ok || !w.near(s.got, want) {
					t.Errorf("%s %s %s = %.17g, psych %.17g (present %v)", c.name, s.stat, name, s.got, want, ok)
				}
			}
		}
	}
	// Congruence of loading vectors R computed, so this checks Congruence alone.
	congruences := 0
	for name, rc := range ref {
		pair, ok := strings.CutPrefix(name, "congruence/")
		if !ok {
			continue
		}
		a, b, _ := strings.Cut(pair, "~")
		vec := func(c string) []float64 {
			var v []float64
			for _, item := range slices.Sorted(maps.Keys(ref[c].items["loading"])) {
				v = append(v, ref[c].items["loading"][item])
			}
			return v
		}
		got, err := Congruence(vec(a), vec(b))
		if err != nil || !w.near(got, rc.totals["congruence"]) {
			t.Errorf("%s = %.17g (%v), psych %.17g", name, got, err, rc.totals["congruence"])
		}
		congruences++
	}
	if congruences != 4 {
		t.Errorf("%d congruence cases, want 4", congruences)
	}
	t.Logf("largest difference to R: %.3g", w.d)
}

// TestGroupingAgainstR compares VarianceExplained, WeightedMean and WeightedSD with R's lm, weighted.mean and
// cov.wt on the bfi respondents' Agreeableness means (testdata/grouping.csv): gender, education (missing for
// some), age band and gender × band, weighted and not.
func TestGroupingAgainstR(t *testing.T) {
	ref := readReferenceFile(t, "reference_weighted.csv")
	recs := readCSV(t, "grouping.csv")
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	y := make([]float64, len(recs)-1)
	w := make([]float64, len(recs)-1)
	missingY := 0
	for i, r := range recs[1:] {
		y[i] = Missing
		if s := r[col["y"]]; s != "" {
			y[i], _ = strconv.ParseFloat(s, 64)
		} else {
			missingY++
		}
		w[i], _ = strconv.ParseFloat(r[col["w"]], 64)
	}
	if missingY == 0 {
		t.Fatal("no missing value: the case does not test that they are left out")
	}
	var wst worst
	for _, f := range []string{"gender", "education", "band", "gender_band"} {
		// Rows without a group label are left out, as R's lm leaves out an NA factor.
		var ys, ws []float64
		var gs []string
		for i, r := range recs[1:] {
			g := ""
			if f == "gender_band" {
				g = r[col["gender"]] + " " + r[col["band"]]
			} else {
				g = r[col[f]]
			}
			if g == "" {
				continue
			}
			ys, ws, gs = append(ys, y[i]), append(ws, w[i]), append(gs, g)
		}
		for name, wv := range map[string][]float64{"grouping/" + f: nil, "grouping/" + f + "/weighted": ws} {
			got, err := VarianceExplained(ys, gs, wv)
			want := ref[name].totals["r2"]
			if err != nil || !wst.near(got, want) {
				t.Errorf("%s R² = %.17g (%v), R %.17g", name, got, err, want)
			}
		}
	}
	for name, wv := range map[string][]float64{"moments": nil, "moments/weighted": w} {
		m, err := WeightedMean(y, wv)
		if err != nil || !wst.near(m, ref[name].totals["mean"]) {
			t.Errorf("%s mean = %.17g (%v), R %.17g", name, m, err, ref[name].totals["mean"])
		}
		sd, err := WeightedSD(y, wv)
		if err != nil || !wst.near(sd, ref[name].totals["sd"]) {
			t.Errorf("%s sd = %.17g (%v), R %.17g", name, sd, err, ref[name].totals["sd"])
		}
	}
	t.Logf("largest difference to R: %.3g", wst.d)
}

// TestUnitWeights: weighting every respondent 1 is the unweighted computation itself, bit for bit, on every
// matrix of testdata and on small leading parts of them (where omega is refused or alpha undefined).
func TestUnitWeights(t *testing.T) {
	for _, name := range []string{"bfi_A", "bfi_C", "bfi_A_constant", "expected_A"} {
		_, x := matrix(t, name+".csv")
		for _, n := range []int{len(x), 30, 7, 3, 2} {
			ones := make([]float64, n)
			for i := range ones {
				ones[i] = 1
			}
			want := fmt.Sprintf("%v", ScaleReliability(x[:n]))
			if got := fmt.Sprintf("%v", ScaleReliabilityWeighted(x[:n], ones)); got != want {
				t.Errorf("%s[:%d]: unit weights give\n%s\nunweighted\n%s", name, n, got, want)
			}
		}
	}
}

// TestWeightProperties: what weights mean, each a property the definition fixes. Scaling every weight alike
// changes nothing; a weight of 0 is the row left out; on complete data a weight of 2 is α and ω of the row
// twice; and invalid weights are refused.
func TestWeightProperties(t *testing.T) {
	_, x := matrix(t, "bfi_C.csv")
	x = x[:300]
	w := readWeights(t, "testdata")[:300]
	base := ScaleReliabilityWeighted(x, w)
	scaled := make([]float64, len(w))
	for i, v := range w {
		scaled[i] = v * 3.75
	}
	s := ScaleReliabilityWeighted(x, scaled)
	if math.Abs(s.Raw-base.Raw) > 1e-12 || math.Abs(s.Omega-base.Omega) > 1e-12 || math.Abs(s.Std-base.Std) > 1e-12 {
		t.Errorf("weights × 3.75: α %v ω %v, weights: α %v ω %v", s.Raw, s.Omega, base.Raw, base.Omega)
	}

	zeros := 0
	var kept [][]float64
	var keptW []float64
	for r, v := range w {
		if v == 0 {
			zeros++
			continue
		}
		kept, keptW = append(kept, x[r]), append(keptW, v)
	}
	if zeros == 0 {
		t.Fatal("no zero weight among the first 300: the case tests nothing")
	}
	if got, want := fmt.Sprintf("%v", base), fmt.Sprintf("%v", ScaleReliabilityWeighted(kept, keptW)); got != want {
		t.Errorf("zero weights: %s\nrows left out: %s", got, want)
	}

	var complete, twice [][]float64
	var cw []float64
	for r, row := range x {
		if slices.ContainsFunc(row, IsMissing) {
			continue
		}
		complete = append(complete, row)
		cw = append(cw, float64(1+r%2))
		twice = append(twice, row)
		if r%2 == 1 {
			twice = append(twice, row)
		}
	}
	a, b := ScaleReliabilityWeighted(complete, cw), ScaleReliability(twice)
	if math.Abs(a.Raw-b.Raw) > 1e-12 || math.Abs(a.Omega-b.Omega) > 1e-12 || math.Abs(a.Std-b.Std) > 1e-12 {
		t.Errorf("complete data, weight 2: α %v ω %v; row twice: α %v ω %v", a.Raw, a.Omega, b.Raw, b.Omega)
	}
	if near(a.Raw, ScaleReliability(complete).Raw) {
		t.Error("weights 1 and 2 give the unweighted alpha: the case tests nothing")
	}

	for name, bad := range map[string][]float64{
		"length":   w[:10],
		"negative": append(slices.Clone(w[:299]), -1),
		"nan":      append(slices.Clone(w[:299]), math.NaN()),
		"inf":      append(slices.Clone(w[:299]), math.Inf(1)),
	} {
		r := ScaleReliabilityWeighted(x, bad)
		if !errors.Is(r.Err, ErrWeights) || !errors.Is(r.OmegaErr, ErrWeights) || !math.IsNaN(r.Omega) {
			t.Errorf("%s: errors %v / %v, omega %v; want ErrWeights and NaN", name, r.Err, r.OmegaErr, r.Omega)
		}
		if _, err := Covariances(x, bad); !errors.Is(err, ErrWeights) {
			t.Errorf("%s: Covariances err %v", name, err)
		}
		if _, err := WeightedMean(x[0], bad); !errors.Is(err, ErrWeights) {
			t.Errorf("%s: WeightedMean err %v", name, err)
		}
	}
}

// TestCongruenceHandCases: the values the definition fixes.
func TestCongruenceHandCases(t *testing.T) {
	for _, c := range []struct {
		x, y []float64
		want float64
	}{
		{[]float64{0.5, 0.6, 0.7}, []float64{1, 1.2, 1.4}, 1},
		{[]float64{0.5, 0.6, 0.7}, []float64{-0.5, -0.6, -0.7}, -1},
		{[]float64{1, 0}, []float64{0, 1}, 0},
		// Not centred: a correlation of these is −1, their congruence is not.
		{[]float64{0.6, 0.5}, []float64{0.5, 0.6}, 0.6 / 0.61},
	} {
		if got, err := Congruence(c.x, c.y); err != nil || math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Congruence(%v, %v) = %v (%v), want %v", c.x, c.y, got, err, c.want)
		}
	}
	for name, xy := range map[string][2][]float64{
		"length": {{1, 2}, {1}},
		"empty":  {{}, {}},
		"zero":   {{0, 0}, {1, 1}},
		"nan":    {{math.NaN(), 1}, {1, 1}},
	} {
		if _, err := Congruence(xy[0], xy[1]); !errors.Is(err, ErrCongruence) {
			t.Errorf("%s: err %v, want ErrCongruence", name, err)
		}
	}
}

// TestLoadingsSign: the loadings are oriented to a non-negative sum whichever sign the eigenvector came with,
// and OneFactorLoadings refuses what it cannot fit.
func TestLoadingsSign(t *testing.T) {
	// Two items load negatively, three positively, the positive ones more strongly.
	r := [][]float64{
		{1, 0.5, 0.4, -0.3, -0.2},
		{0.5, 1, 0.45, -0.25, -0.2},
		{0.4, 0.45, 1, -0.3, -0.15},
		{-0.3, -0.25, -0.3, 1, 0.2},
		{-0.2, -0.2, -0.15, 0.2, 1},
	}
	l, err := OneFactorLoadings(r)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, v := range l {
		sum += v
	}
	if !(sum > 0) || !(l[0] > 0) || !(l[3] < 0) {
		t.Fatalf("loadings %v: want a positive sum, item 1 positive and item 4 negative", l)
	}
	if _, err := OneFactorLoadings([][]float64{{1}}); !errors.Is(err, ErrTooFewItems) {
		t.Errorf("one item: err %v", err)
	}
	if _, err := OneFactorLoadings([][]float64{{1, math.NaN()}, {math.NaN(), 1}}); !errors.Is(err, ErrTooFewCommon) {
		t.Errorf("NaN entry: err %v", err)
	}
}

// TestGroupingHandCases: R² is 0 when every group has the grand mean and 1 when values vary only between
// groups; a single value per group explains everything; no variance is an error.
func TestGroupingHandCases(t *testing.T) {
	if r2, err := VarianceExplained([]float64{1, 3, 1, 3}, []string{"a", "a", "b", "b"}, nil); err != nil || r2 != 0 {
		t.Errorf("equal group means: R² %v (%v), want 0", r2, err)
	}
	if r2, err := VarianceExplained([]float64{1, 1, 3, 3}, []int{0, 0, 1, 1}, nil); err != nil || r2 != 1 {
		t.Errorf("variance only between groups: R² %v (%v), want 1", r2, err)
	}
	// Weights move the groups' means: with weight 3 on the first value group a's mean is 1.5, not 2.
	r2w, _ := VarianceExplained([]float64{1, 3, 4, 4}, []string{"a", "a", "b", "b"}, []float64{3, 1, 1, 1})
	r2, _ := VarianceExplained([]float64{1, 3, 4, 4}, []string{"a", "a", "b", "b"}, nil)
	if near(r2, r2w) {
		t.Errorf("weights change nothing: %v", r2)
	}
	if _, err := VarianceExplained([]float64{2, 2, 2}, []string{"a", "b", "b"}, nil); !errors.Is(err, ErrNoVariance) {
		t.Errorf("constant values: err %v, want ErrNoVariance", err)
	}
	if _, err := VarianceExplained([]float64{1, 2}, []string{"a"}, nil); err == nil {
		t.Error("one label for two values: no error")
	}
	if _, err := WeightedSD([]float64{1, Missing}, nil); !errors.Is(err, ErrTooFewValues) {
		t.Errorf("SD of one value: err %v, want ErrTooFewValues", err)
	}
	if _, err := WeightedMean([]float64{1, 2}, []float64{0, 0}); !errors.Is(err, ErrTooFewValues) {
		t.Errorf("mean with every weight 0: err %v, want ErrTooFewValues", err)
	}
	if m, _ := WeightedMean([]float64{1, 2, Missing}, []float64{3, 1, 5}); m != 1.25 {
		t.Errorf("weighted mean %v, want 1.25", m)
	}
}

// sub returns the rows and columns idx of m.
func sub(m [][]float64, idx []int) [][]float64 {
	out := square(len(idx))
	for a, i := range idx {
		for b, j := range idx {
			out[a][b] = m[i][j]
		}
	}
	return out
}

// TestScaleReliabilityParts: ScaleReliabilityWeighted shares one table of pair sums between alpha and omega;
// it must give exactly what ComputeAlphaWeighted and OmegaTotalWeighted give on their own.
func TestScaleReliabilityParts(t *testing.T) {
	w := readWeights(t, "testdata")
	for _, name := range []string{"bfi_A", "bfi_C", "bfi_A_constant", "expected_A"} {
		_, x := matrix(t, name+".csv")
		for _, wv := range [][]float64{nil, w[:len(x)]} {
			r := ScaleReliabilityWeighted(x, wv)
			a, err := ComputeAlphaWeighted(x, wv)
			if err != nil {
				t.Fatal(err)
			}
			om, err := OmegaTotalWeighted(x, wv, a.Items)
			if fmt.Sprint(r.Alpha) != fmt.Sprint(a) || r.Omega != om || !errors.Is(r.OmegaErr, err) {
				t.Errorf("%s (weighted %v): %v ω %v, parts %v ω %v", name, wv != nil, r.Alpha, r.Omega, a, om)
			}
		}
	}
}
