package bootstrap

import (
	"bytes"
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/units.csv and testdata/resamples.csv")

// tolerance is how close an interval must be to R's.
const tolerance = 1e-9

// group is one case of the R check: n units with a value x and a flag a, resampled under (seed, key).
type group struct {
	label, key string
	seed       int64
	samples    int
	x          []float64
	a          []bool
}

// groups builds the cases: a small group with two flagged units (some resamples draw neither, so mean_a is
// undefined there), a larger one, one with no flagged unit (mean_a never defined) and a group of one unit.
func groups() []group {
	r := rand.New(rand.NewPCG(1, 2))
	mk := func(label, key string, seed int64, n, samples int, flagged ...int) group {
		g := group{label: label, key: key, seed: seed, samples: samples, x: make([]float64, n), a: make([]bool, n)}
		for i := range g.x {
			g.x[i] = r.NormFloat64()*1.5 + 3
		}
		for _, i := range flagged {
			g.a[i] = true
		}
		return g
	}
	return []group{
		mk("pair", Key("m1", "a1"), 7, 12, 200, 0, 5),
		mk("large", "large", 7, 40, 1000, 3, 17, 30),
		mk("none", "none", -3, 5, 20),
		mk("one", "one", 7, 1, 10, 0),
	}
}

// statistics computes mean and mean_a on each resample of g from the draw counts, as a weighted sum over
// units would (the R script computes them on the drawn rows).
func statistics(g group) map[string][]float64 {
	rs := New(g.seed, g.key, len(g.x))
	counts := make([]int, len(g.x))
	out := map[string][]float64{}
	for range g.samples {
		rs.Counts(counts)
		var s, n, sa, na float64
		for i, c := range counts {
			s += float64(c) * g.x[i]
			n += float64(c)
			if g.a[i] {
				sa += float64(c) * g.x[i]
				na += float64(c)
			}
		}
		out["mean"] = append(out["mean"], s/n)
		out["mean_a"] = append(out["mean_a"], sa/na) // 0/0 = NaN when no flagged unit is drawn
	}
	return out
}

func writeUnits(gs []group) []byte {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	_ = cw.Write([]string{"label", "unit", "x", "a"})
	for _, g := range gs {
		for i, x := range g.x {
			a := "0"
			if g.a[i] {
				a = "1"
			}
			_ = cw.Write([]string{g.label, strconv.Itoa(i), strconv.FormatFloat(x, 'g', -1, 64), a})
		}
	}
	cw.Flush()
	return b.Bytes()
}

func writeResamples(t *testing.T, gs []group) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(IndicesHeader + "\n")
	for _, g := range gs {
		if err := WriteIndices(&b, g.label, g.seed, g.key, len(g.x), g.samples); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestWriteInputs writes the R check's inputs with -update; otherwise it checks that the committed files are
// still what the code writes, so that R replays exactly the resamples Go takes and the stream has not moved.
func TestWriteInputs(t *testing.T) {
	gs := groups()
	files := map[string][]byte{"units.csv": writeUnits(gs), "resamples.csv": writeResamples(t, gs)}
	for name, got := range files {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is no longer what the code writes: the resample stream or the units changed", name)
		}
	}
}

// TestAgainstR compares Interval on Go's resampled statistics with R's quantiles over the same resamples
// (testdata/intervals_ref.csv, written by make_bootstrap.R), to 1e-9.
func TestAgainstR(t *testing.T) { checkAgainst(t, "testdata") }

// TestAgainstRLive runs make_bootstrap.R afresh and compares with what it writes.
func TestAgainstRLive(t *testing.T) {
	if _, err := exec.LookPath("Rscript"); err != nil {
		t.Skip("Rscript not installed; TestAgainstR compares with the committed reference")
	}
	dir := t.TempDir()
	if out, err := exec.Command("Rscript", "testdata/make_bootstrap.R", "testdata", dir).CombinedOutput(); err != nil {
		t.Fatalf("make_bootstrap.R: %v\n%s", err, out)
	}
	checkAgainst(t, dir)
}

func checkAgainst(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "intervals_ref.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	ref := map[string][]string{}
	for _, r := range recs[1:] {
		ref[r[0]+"/"+r[1]] = r[2:]
	}
	var worst float64
	checked, nils := 0, 0
	for _, g := range groups() {
		for stat, v := range statistics(g) {
			name := g.label + "/" + stat
			want, ok := ref[name]
			if !ok {
				t.Errorf("%s: no R reference", name)
				continue
			}
			defined := 0
			for _, x := range v {
				if !math.IsNaN(x) {
					defined++
				}
			}
			if strconv.Itoa(defined) != want[2] {
				t.Errorf("%s: %d resamples define the statistic, R counts %s", name, defined, want[2])
			}
			lo, hi := Interval(v)
			for i, got := range []*float64{lo, hi} {
				if want[i] == "" {
					nils++
					if got != nil {
						t.Errorf("%s: bound %d = %v, R has none", name, i, *got)
					}
					continue
				}
				w, err := strconv.ParseFloat(want[i], 64)
				if err != nil {
					t.Fatal(err)
				}
				if got == nil {
					t.Errorf("%s: bound %d nil, R %v", name, i, w)
					continue
				}
				checked++
				worst = max(worst, math.Abs(*got-w))
				if math.Abs(*got-w) > tolerance {
					t.Errorf("%s: bound %d = %.17g, R %.17g", name, i, *got, w)
				}
			}
		}
	}
	// The cases must exercise both paths: numbers, and a statistic no resample defines.
	if checked < 10 || nils != 2 {
		t.Fatalf("checked %d bounds and %d nil ones; want at least 10 and exactly 2 (none/mean_a)", checked, nils)
	}
	t.Logf("%d bounds, largest difference to R %.3g", checked, worst)
}

// TestSomeUndefined: the pair case must have resamples where mean_a is undefined, or it tests no skipping.
func TestSomeUndefined(t *testing.T) {
	v := statistics(groups()[0])["mean_a"]
	nan := 0
	for _, x := range v {
		if math.IsNaN(x) {
			nan++
		}
	}
	if nan == 0 || nan == len(v) {
		t.Fatalf("%d of %d resamples leave mean_a undefined; want some, not all", nan, len(v))
	}
}

// TestPure: resample b depends only on (seed, key, n, b): the same arguments give the same resamples through
// every entry point, and a change of seed, key or n changes them.
func TestPure(t *testing.T) {
	const seed, n, samples = 42, 25, 50
	key := Key("model", "item")
	want := Indices(seed, key, n, samples)
	if !slices.EqualFunc(want, Indices(seed, key, n, samples), slices.Equal) {
		t.Fatal("Indices differs between two calls")
	}
	rs := New(seed, key, n)
	idx := make([]int, n)
	counts := make([]int, n)
	for b := range samples {
		if rs.Drawn() != b {
			t.Fatalf("Drawn = %d before resample %d", rs.Drawn(), b)
		}
		var got []int
		switch b % 3 {
		case 0:
			got = rs.Next()
		case 1:
			rs.Fill(idx)
			got = idx
		case 2:
			rs.Counts(counts)
			want := make([]int, n)
			for _, i := range Indices(seed, key, n, b+1)[b] {
				want[i]++
			}
			if !slices.Equal(counts, want) {
				t.Fatalf("resample %d: Counts %v, counts of the indices %v", b, counts, want)
			}
			continue
		}
		if !slices.Equal(got, want[b]) {
			t.Fatalf("resample %d: %v, Indices %v", b, got, want[b])
		}
		for _, i := range got {
			if i < 0 || i >= n {
				t.Fatalf("resample %d draws unit %d of %d", b, i, n)
			}
		}
	}
	for name, other := range map[string][][]int{
		"seed":  Indices(seed+1, key, n, samples),
		"key":   Indices(seed, Key("model", "item2"), n, samples),
		"split": Indices(seed, Key("mode", "litem"), n, samples),
		"n":     Indices(seed, key, n+1, samples),
	} {
		if slices.EqualFunc(want, other, func(a, b []int) bool { return slices.Equal(a[:n], b[:n]) }) {
			t.Errorf("changing the %s leaves the resamples as they were", name)
		}
	}
}

// TestStream pins the first draws of one stream, the ones the design package's order-bias intervals were
// first computed from (its testdata/resamples.csv, group m1 × a1 under seed 7): a change of generator, seeding
// or hashing would silently change every interval the outputs report.
func TestStream(t *testing.T) {
	got := fmt.Sprint(Indices(7, Key("m1", "a1"), 10, 2))
	const want = "[[4 9 8 3 8 6 5 1 8 6] [8 4 8 7 3 3 6 9 5 7]]"
	if got != want {
		t.Fatalf("Indices(7, m1/a1, 10, 2) = %s, want %s", got, want)
	}
}

// TestWriteIndicesFormat: WriteIndices writes one row per resample, b from 1, indices joined with ";", and
// the label quoted by CSV rules.
func TestWriteIndicesFormat(t *testing.T) {
	var b strings.Builder
	if err := WriteIndices(&b, `a,"b"`, 7, Key("m1", "a1"), 10, 2); err != nil {
		t.Fatal(err)
	}
	const want = "\"a,\"\"b\"\"\",1,4;9;8;3;8;6;5;1;8;6\n\"a,\"\"b\"\"\",2,8;4;8;7;3;3;6;9;5;7\n"
	if b.String() != want {
		t.Fatalf("WriteIndices wrote\n%s\nwant\n%s", b.String(), want)
	}
}

// TestInterval: hand cases of the percentile interval and of R's type-7 quantile.
func TestInterval(t *testing.T) {
	if lo, hi := Interval(nil); lo != nil || hi != nil {
		t.Error("Interval of no values is not nil")
	}
	if lo, hi := Interval([]float64{math.NaN(), math.NaN()}); lo != nil || hi != nil {
		t.Error("Interval of only NaN values is not nil")
	}
	if lo, hi := Interval([]float64{math.NaN(), 2.5}); lo == nil || *lo != 2.5 || *hi != 2.5 {
		t.Errorf("Interval of one defined value: %v %v, want 2.5 2.5", lo, hi)
	}
	// 0..100 in reverse with NaNs between: R's quantile(0:100, c(.025, .975)) is 2.5, 97.5.
	var v []float64
	for i := 100; i >= 0; i-- {
		v = append(v, float64(i), math.NaN())
	}
	orig := slices.Clone(v)
	lo, hi := Interval(v)
	if lo == nil || math.Abs(*lo-2.5) > 1e-12 || math.Abs(*hi-97.5) > 1e-12 {
		t.Errorf("Interval(0..100) = %v, %v; want 2.5, 97.5", lo, hi)
	}
	if !slices.EqualFunc(v, orig, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
		t.Error("Interval modified its argument")
	}
	for _, c := range []struct {
		x    []float64
		p, q float64
	}{
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4}, 0, 1},
		{[]float64{1, 2, 3, 4}, 1, 4},
		{[]float64{1, 2, 3, 4}, 0.25, 1.75},
		{[]float64{7}, 0.3, 7},
		{[]float64{1, math.Inf(1), math.Inf(1)}, 0.9, math.Inf(1)},
	} {
		if got := Quantile7(c.x, c.p); got != c.q {
			t.Errorf("Quantile7(%v, %v) = %v, want %v", c.x, c.p, got, c.q)
		}
	}
}
