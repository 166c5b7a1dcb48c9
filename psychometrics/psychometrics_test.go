package psychometrics

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tolerance is how close every statistic must be to R psych's.
const tolerance = 1e-9

// refCase is one case of testdata/reference.csv (see testdata/make_reference.R).
type refCase struct {
	totals map[string]float64            // stat → value
	items  map[string]map[string]float64 // stat → item → value
}

// readCSV reads testdata/name, or name itself when it is an absolute path or already starts with testdata/
// (a file a test wrote into its own temporary directory, or one named by its directory).
func readCSV(t testing.TB, name string) [][]string {
	t.Helper()
	path := name
	if !filepath.IsAbs(name) && !strings.HasPrefix(name, "testdata"+string(filepath.Separator)) {
		path = filepath.Join("testdata", name)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return recs
}

func readReference(t *testing.T) map[string]*refCase { return readReferenceFile(t, "reference.csv") }

// readReferenceFile reads a file of psych's numbers in the format of reference.csv: case, stat, item, value.
func readReferenceFile(t *testing.T, name string) map[string]*refCase {
	t.Helper()
	out := map[string]*refCase{}
	for _, r := range readCSV(t, name)[1:] {
		c := out[r[0]]
		if c == nil {
			c = &refCase{totals: map[string]float64{}, items: map[string]map[string]float64{}}
			out[r[0]] = c
		}
		v := math.NaN()
		if r[3] != "" {
			var err error
			if v, err = strconv.ParseFloat(r[3], 64); err != nil {
				t.Fatalf("reference %v: %v", r, err)
			}
		}
		if r[2] == "" {
			c.totals[r[1]] = v
			continue
		}
		if c.items[r[1]] == nil {
			c.items[r[1]] = map[string]float64{}
		}
		c.items[r[1]][r[2]] = v
	}
	return out
}

// matrix reads a data matrix CSV (header of item names, empty = missing).
func matrix(t testing.TB, name string) ([]string, [][]float64) {
	t.Helper()
	recs := readCSV(t, name)
	x := make([][]float64, len(recs)-1)
	for i, r := range recs[1:] {
		x[i] = make([]float64, len(r))
		for j, s := range r {
			if s == "" || s == "NA" {
				x[i][j] = Missing
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s row %d: %v", name, i+2, err)
			}
			x[i][j] = v
		}
	}
	return recs[0], x
}

func near(a, b float64) bool { return math.Abs(a-b) <= tolerance }

// worst is the largest difference to psych a check saw, logged with -v.
type worst struct{ d float64 }

func (w *worst) near(a, b float64) bool {
	w.d = max(w.d, math.Abs(a-b))
	return near(a, b)
}

// check compares what this package computes on x (columns named names) with psych's numbers.
func check(t *testing.T, ref *refCase, names []string, x [][]float64) {
	t.Helper()
	var w worst
	defer func() { t.Logf("largest difference to psych: %.3g", w.d) }()
	a, err := ComputeAlpha(x)
	if err != nil {
		t.Fatalf("alpha: %v", err)
	}
	if got, want := float64(len(a.Items)), ref.totals["n_items"]; got != want {
		t.Fatalf("items used %v, psych kept %v", got, want)
	}
	for _, c := range []struct {
		stat string
		got  float64
	}{{"raw_alpha", a.Raw}, {"std_alpha", a.Std}, {"average_r", a.AverageR}} {
		if want := ref.totals[c.stat]; !w.near(c.got, want) {
			t.Errorf("%s = %.15g, psych %.15g (diff %.3g)", c.stat, c.got, want, c.got-want)
		}
	}
	for k, col := range a.Items {
		name := names[col]
		if want, ok := ref.items["r_drop"][name]; !ok || !w.near(a.ItemRest[k], want) {
			t.Errorf("item %s r.drop = %.15g, psych %.15g (present %v)", name, a.ItemRest[k], want, ok)
		}
		want, ok := ref.items["alpha_if_dropped"][name]
		switch {
		case len(a.Items) <= 2:
			if ok || !math.IsNaN(a.IfDropped[k]) {
				t.Errorf("item %s alpha if dropped with two items: got %v, psych row present %v", name, a.IfDropped[k], ok)
			}
		case !ok || !w.near(a.IfDropped[k], want):
			t.Errorf("item %s alpha if dropped = %.15g, psych %.15g (present %v)", name, a.IfDropped[k], want, ok)
		}
	}
	om, err := OmegaTotal(x, a.Items)
	if err != nil {
		t.Fatalf("omega: %v", err)
	}
	if want := ref.totals["omega_total"]; !w.near(om, want) {
		t.Errorf("omega total = %.15g, psych %.15g (diff %.3g)", om, want, om-want)
	}
}

// TestBFI compares with psych on its bfi data: 2800 respondents with missing answers, reverse-keyed items.
func TestBFI(t *testing.T) {
	ref := readReference(t)
	for _, name := range []string{"bfi_A", "bfi_C", "bfi_A_constant"} {
		t.Run(name, func(t *testing.T) {
			names, x := matrix(t, name+".csv")
			missing := 0
			for _, row := range x {
				for _, v := range row {
					if IsMissing(v) {
						missing++
					}
				}
			}
			if missing == 0 {
				t.Fatal("the bfi scale has no missing answers: the case does not test pairwise handling")
			}
			c := ref[name]
			if c == nil {
				t.Fatalf("no reference for %s", name)
			}
			check(t, c, names, x)
		})
	}
}

// TestQuickstart compares with psych on the quickstart's answers: every model × seed × scale, as given and with
// every cell whose index is a multiple of 7 missing.
func TestQuickstart(t *testing.T) {
	ref := readReference(t)
	recs := readCSV(t, "quickstart_cells.csv")
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	type key struct{ variant, model, seed, scale string }
	type part struct {
		items, personas []string
		score           map[[2]string]float64
	}
	parts := map[key]*part{}
	var order []key
	for _, r := range recs[1:] {
		if r[col["scale"]] == "" {
			continue
		}
		idx, err := strconv.Atoi(r[col["index"]])
		if err != nil {
			t.Fatal(err)
		}
		for _, variant := range []string{"quickstart", "quickstart-missing"} {
			k := key{variant, r[col["model"]], r[col["seed"]], r[col["scale"]]}
			p := parts[k]
			if p == nil {
				p = &part{score: map[[2]string]float64{}}
				parts[k] = p
				order = append(order, k)
			}
			item, persona := r[col["item_id"]], r[col["persona_id"]]
			if !slices.Contains(p.items, item) {
				p.items = append(p.items, item)
			}
			if !slices.Contains(p.personas, persona) {
				p.personas = append(p.personas, persona)
			}
			v := Missing
			if s := r[col["score"]]; s != "" && !(variant == "quickstart-missing" && idx%7 == 0) {
				if v, err = strconv.ParseFloat(s, 64); err != nil {
					t.Fatal(err)
				}
			}
			p.score[[2]string{persona, item}] = v
		}
	}
	if len(order) == 0 {
		t.Fatal("no quickstart cells")
	}
	for _, k := range order {
		name := strings.Join([]string{k.variant, k.model, k.seed, k.scale}, "/")
		t.Run(name, func(t *testing.T) {
			p := parts[k]
			x := make([][]float64, len(p.personas))
			for i, pe := range p.personas {
				x[i] = make([]float64, len(p.items))
				for j, it := range p.items {
					x[i][j] = p.score[[2]string{pe, it}]
				}
			}
			c := ref[name]
			if c == nil {
				t.Fatalf("no reference for %s", name)
			}
			check(t, c, p.items, x)
		})
	}
}

// TestMissingIsNotZero: a missing answer must leave the statistics as if the respondent had skipped the item;
// reading it as 0 would change them.
func TestMissingIsNotZero(t *testing.T) {
	x := [][]float64{{1, 2, 2}, {2, 3, 3}, {4, 4, 5}, {5, 5, 4}, {3, Missing, 3}}
	withMissing, err := ComputeAlpha(x)
	if err != nil {
		t.Fatal(err)
	}
	zero := [][]float64{{1, 2, 2}, {2, 3, 3}, {4, 4, 5}, {5, 5, 4}, {3, 0, 3}}
	asZero, err := ComputeAlpha(zero)
	if err != nil {
		t.Fatal(err)
	}
	if near(withMissing.Raw, asZero.Raw) {
		t.Fatalf("alpha with a missing answer equals alpha with a zero: %v", withMissing.Raw)
	}
	if withMissing.Respondents != 5 {
		t.Fatalf("respondents %d, want 5 (the row with a missing answer still answered two items)", withMissing.Respondents)
	}
}

// TestNoVariance: an item everyone answered alike is left out, as psych's alpha(delete = TRUE) does, and with
// fewer than two items left alpha is undefined.
func TestNoVariance(t *testing.T) {
	x := [][]float64{{1, 3, 2}, {2, 3, 3}, {4, 3, 5}, {5, 3, 4}}
	a, err := ComputeAlpha(x)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Items, []int{0, 2}) || !slices.Equal(a.Dropped, []int{1}) {
		t.Fatalf("items %v dropped %v, want [0 2] and [1]", a.Items, a.Dropped)
	}
	if _, err := ComputeAlpha([][]float64{{1, 3}, {2, 3}, {4, 3}}); err != ErrTooFewItems {
		t.Fatalf("one item with variance: err %v, want ErrTooFewItems", err)
	}
	if _, err := OmegaTotal(x, []int{0}); err != ErrTooFewItems {
		t.Fatalf("omega of one item: err %v, want ErrTooFewItems", err)
	}
}
