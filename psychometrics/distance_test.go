package psychometrics

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// pmfOf parses probabilities joined with ";" (distances.csv).
func pmfOf(t *testing.T, s string) []float64 {
	t.Helper()
	var p []float64
	for _, f := range strings.Split(s, ";") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("pmf %q: %v", s, err)
		}
		p = append(p, v)
	}
	return p
}

// TestDistancesAgainstR compares W1, JSD, entropy, total variation, SimBench's score and OpinionQA's alignment
// with R's on every case of testdata/distances.csv (see testdata/make_distances.R): random pairs over 2 to 7
// options, pairs with zero probabilities, equal pairs, disjoint ones and one whose q is uniform (no SimBench
// score).
func TestDistancesAgainstR(t *testing.T) {
	recs := readCSV(t, "distances.csv")
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	if len(recs) < 30 {
		t.Fatalf("distances.csv has %d cases, want the ~37 make_distances.R writes", len(recs)-1)
	}
	var w worst
	uniform := 0
	for _, r := range recs[1:] {
		name := r[col["case"]]
		p, q := pmfOf(t, r[col["p"]]), pmfOf(t, r[col["q"]])
		if r[col["simbench"]] == "" {
			uniform++
			if _, err := SimBench(p, q); !errors.Is(err, ErrUniformReference) {
				t.Errorf("%s: SimBench against a uniform q: err %v, want ErrUniformReference", name, err)
			}
		} else {
			got, err := SimBench(p, q)
			want, perr := strconv.ParseFloat(r[col["simbench"]], 64)
			// The score is on a 0–100 scale: 1e-9 relative to it.
			if err != nil || perr != nil || math.Abs(got-want) > 100*tolerance {
				t.Errorf("%s simbench = %.17g (%v), R %s", name, got, err, r[col["simbench"]])
			}
		}
		want := func(c string) float64 {
			v, err := strconv.ParseFloat(r[col[c]], 64)
			if err != nil {
				t.Fatalf("%s %s: %v", name, c, err)
			}
			return v
		}
		for _, c := range []struct {
			stat string
			f    func() (float64, error)
		}{
			{"w1", func() (float64, error) { return Wasserstein1(p, q) }},
			{"jsd", func() (float64, error) { return JensenShannon(p, q) }},
			{"entropy_p", func() (float64, error) { return Entropy(p) }},
			{"entropy_q", func() (float64, error) { return Entropy(q) }},
			{"tvd", func() (float64, error) { return TotalVariation(p, q) }},
			{"alignment", func() (float64, error) {
				d, err := Wasserstein1(p, q)
				if err != nil {
					return d, err
				}
				return Alignment(d, float64(len(p)-1))
			}},
		} {
			got, err := c.f()
			if err != nil {
				t.Errorf("%s %s: %v", name, c.stat, err)
				continue
			}
			if !w.near(got, want(c.stat)) {
				t.Errorf("%s %s = %.17g, R %.17g", name, c.stat, got, want(c.stat))
			}
		}
		// Symmetry: both distances are metrics (JSD a squared one) and must not depend on the order.
		w1pq, _ := Wasserstein1(p, q)
		w1qp, _ := Wasserstein1(q, p)
		jpq, _ := JensenShannon(p, q)
		jqp, _ := JensenShannon(q, p)
		tpq, _ := TotalVariation(p, q)
		tqp, _ := TotalVariation(q, p)
		if !near(w1pq, w1qp) || !near(jpq, jqp) || tpq != tqp {
			t.Errorf("%s: not symmetric: W1 %v/%v, JSD %v/%v, TV %v/%v", name, w1pq, w1qp, jpq, jqp, tpq, tqp)
		}
	}
	if uniform != 1 {
		t.Errorf("%d cases with a uniform q, want 1", uniform)
	}
	t.Logf("largest difference to R: %.3g", w.d)
}

// TestDistanceHandCases: the values the definitions fix without any computation.
func TestDistanceHandCases(t *testing.T) {
	for k := 2; k <= 7; k++ {
		first, last, uniform := make([]float64, k), make([]float64, k), make([]float64, k)
		first[0], last[k-1] = 1, 1
		for i := range uniform {
			uniform[i] = 1 / float64(k)
		}
		if d, err := Wasserstein1(first, last); err != nil || d != float64(k-1) {
			t.Errorf("K=%d: W1 of point masses at 1 and K = %v (%v), want %d", k, d, err, k-1)
		}
		if d, err := JensenShannon(first, last); err != nil || d != 1 {
			t.Errorf("K=%d: JSD of disjoint point masses = %v (%v), want 1", k, d, err)
		}
		for _, p := range [][]float64{first, uniform} {
			if d, _ := Wasserstein1(p, p); d != 0 {
				t.Errorf("K=%d: W1(p, p) = %v, want 0", k, d)
			}
			if d, _ := JensenShannon(p, p); d != 0 {
				t.Errorf("K=%d: JSD(p, p) = %v, want 0", k, d)
			}
		}
		if h, _ := Entropy(first); h != 0 {
			t.Errorf("K=%d: entropy of a point mass = %v, want 0", k, h)
		}
		if h, _ := Entropy(uniform); !near(h, math.Log2(float64(k))) {
			t.Errorf("K=%d: entropy of the uniform = %v, want log2 K = %v", k, h, math.Log2(float64(k)))
		}
	}
	// Moving all mass one option along costs 1.
	if d, _ := Wasserstein1([]float64{0, 1, 0, 0}, []float64{0, 0, 1, 0}); d != 1 {
		t.Errorf("W1 of neighbouring point masses = %v, want 1", d)
	}
	// Total variation: disjoint supports are 1 apart, moving 0.3 of the mass costs 0.3.
	if d, _ := TotalVariation([]float64{0.5, 0.5, 0, 0}, []float64{0, 0, 0.3, 0.7}); d != 1 {
		t.Errorf("TV of disjoint supports = %v, want 1", d)
	}
	if d, _ := TotalVariation([]float64{0.5, 0.5}, []float64{0.8, 0.2}); !near(d, 0.3) {
		t.Errorf("TV((.5,.5), (.8,.2)) = %v, want 0.3", d)
	}
	// SimBench: 100 at p = q, 0 for the uniform answer itself, negative further away than it.
	q := []float64{0.7, 0.2, 0.1}
	u := []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}
	if s, err := SimBench(q, q); err != nil || s != 100 {
		t.Errorf("SimBench(q, q) = %v (%v), want 100", s, err)
	}
	if s, err := SimBench(u, q); err != nil || !near(s, 0) {
		t.Errorf("SimBench(u, q) = %v (%v), want 0", s, err)
	}
	if s, err := SimBench([]float64{0, 0, 1}, q); err != nil || !(s < 0) {
		t.Errorf("SimBench of the option q likes least = %v (%v), want < 0", s, err)
	}
	if _, err := SimBench(q, u); !errors.Is(err, ErrUniformReference) {
		t.Errorf("SimBench against a uniform reference: err %v, want ErrUniformReference", err)
	}
	// Alignment: 1 for no distance, 0 at the full span.
	if a, err := Alignment(0, 4); err != nil || a != 1 {
		t.Errorf("Alignment(0, 4) = %v (%v), want 1", a, err)
	}
	if a, err := Alignment(4, 4); err != nil || a != 0 {
		t.Errorf("Alignment(4, 4) = %v (%v), want 0", a, err)
	}
	for _, c := range [][2]float64{{1, 0}, {1, -1}, {1, math.Inf(1)}, {1, math.NaN()}, {-0.5, 4}, {math.NaN(), 4}} {
		if _, err := Alignment(c[0], c[1]); !errors.Is(err, ErrSpan) {
			t.Errorf("Alignment(%v, %v): err %v, want ErrSpan", c[0], c[1], err)
		}
	}
	// Disjoint but spread: JSD is still exactly its bound.
	if d, _ := JensenShannon([]float64{0.5, 0.5, 0, 0}, []float64{0, 0, 0.3, 0.7}); !near(d, 1) {
		t.Errorf("JSD of disjoint supports = %v, want 1", d)
	}
}

// TestDistanceRejects: what is not a pair of distributions over the same options is an error, not a number.
func TestDistanceRejects(t *testing.T) {
	for name, pq := range map[string][2][]float64{
		"lengths":  {{0.5, 0.5}, {0.2, 0.3, 0.5}},
		"empty":    {{}, {}},
		"negative": {{1.5, -0.5}, {0.5, 0.5}},
		"sum":      {{0.5, 0.4}, {0.5, 0.5}},
		"nan":      {{math.NaN(), 1}, {0.5, 0.5}},
	} {
		if _, err := Wasserstein1(pq[0], pq[1]); !errors.Is(err, ErrDistribution) {
			t.Errorf("%s: W1 err %v, want ErrDistribution", name, err)
		}
		if _, err := JensenShannon(pq[0], pq[1]); !errors.Is(err, ErrDistribution) {
			t.Errorf("%s: JSD err %v, want ErrDistribution", name, err)
		}
		if _, err := TotalVariation(pq[0], pq[1]); !errors.Is(err, ErrDistribution) {
			t.Errorf("%s: TV err %v, want ErrDistribution", name, err)
		}
		if _, err := SimBench(pq[0], pq[1]); !errors.Is(err, ErrDistribution) {
			t.Errorf("%s: SimBench err %v, want ErrDistribution", name, err)
		}
	}
	if _, err := Entropy([]float64{0.2, 0.2}); !errors.Is(err, ErrDistribution) {
		t.Errorf("entropy of a pmf summing to 0.4: err %v, want ErrDistribution", err)
	}
}

// TestNonIntegerMatrix: alpha and omega take a matrix of expected scores (Σ p · weight, not whole numbers)
// and equal psych's on it (testdata/expected_A.csv, made by make_distances.R).
func TestNonIntegerMatrix(t *testing.T) {
	names, x := matrix(t, "expected_A.csv")
	whole := 0
	for _, row := range x {
		for _, v := range row {
			if !IsMissing(v) && v == math.Trunc(v) {
				whole++
			}
		}
	}
	if whole > len(x) {
		t.Fatalf("%d whole numbers in the matrix: it does not test non-integer scores", whole)
	}
	c := readReferenceFile(t, "reference_expected.csv")["expected_A"]
	if c == nil {
		t.Fatal("no reference for expected_A")
	}
	check(t, c, names, x)
}
