package compare

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/compare/comparetest"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

const quickstartSpec = "../examples/quickstart/experiment.yaml"

type sliceSource []store.Record

func (s sliceSource) Scan(_ context.Context, _ string, fn func(store.Record) error) error {
	for _, r := range s {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// testSpec is the quickstart (50 items, reverse-keyed ones among them, 10 personas, 2 seeds) with a second
// model, "probs", whose cells record option probabilities.
func testSpec(t *testing.T) *experiment.Spec {
	t.Helper()
	spec, err := specfile.Load(quickstartSpec)
	if err != nil {
		t.Fatal(err)
	}
	m := spec.Models[0]
	m.ID, m.Name = "probs", "probs-model"
	m.Answer = &experiment.AnswerSettings{Logprobs: true}
	spec.Models = append(spec.Models, m)
	return spec
}

// fakeRun is a run of spec answered by a generator seeded with seed: each persona leans to one option per item,
// most answers follow the lean, some are unparsed or failed, and a few cells have no record. The "probs"
// model's cells carry option probabilities, but one in five, which have none (a mixed run).
func fakeRun(spec *experiment.Spec, seed uint64) sliceSource {
	rng := rand.New(rand.NewPCG(seed, 99))
	var out sliceSource
	for i := range spec.NumCells() {
		c := spec.Cell(i)
		if rng.Float64() < 0.03 {
			continue
		}
		opts := spec.OptionsFor(c.Item).Options
		lean := (c.Persona*7 + c.Item*3) % len(opts)
		k := lean
		if rng.Float64() < 0.35 {
			k = rng.IntN(len(opts))
		}
		r := store.Record{Index: i, Status: store.StatusOK, OptionID: opts[k].ID, Raw: opts[k].Text, Attempts: 1,
			ServedModel: "served-" + spec.Models[c.Model].ID, SystemFingerprint: "fp_" + strconv.Itoa(int(seed)+i%int(seed+1))}
		switch u := rng.Float64(); {
		case u < 0.04:
			r = store.Record{Index: i, Status: store.StatusFailed, ErrorClass: "Server", ErrorMessage: "boom", Attempts: 3}
		case u < 0.08:
			r = store.Record{Index: i, Status: store.StatusUnparsed, Raw: "hmm", Attempts: 1}
		}
		if spec.Models[c.Model].ID == "probs" && r.Status != store.StatusFailed && rng.IntN(5) > 0 {
			p := make([]float64, len(opts))
			var s float64
			for j := range p {
				p[j] = rng.Float64() * rng.Float64()
				if j == k {
					p[j] += 1.5
				}
				s += p[j]
			}
			for j := range p {
				p[j] /= s
			}
			r.Probs, r.Coverage = p, 0.9
		}
		out = append(out, r)
	}
	return out
}

func side(t *testing.T, spec *experiment.Spec, id string, src sliceSource) *Side {
	t.Helper()
	s, err := Load(context.Background(), src, spec, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCompareWithItself(t *testing.T) {
	spec := testSpec(t)
	recs := fakeRun(spec, 1)
	a := side(t, spec, "run-a", recs)
	c, err := Compare(a, a, Options{Samples: 200, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 2*(50+1) {
		t.Fatalf("%d rows, want 2 models × (50 items + all)", len(c.Rows))
	}
	matched := 0
	for _, r := range c.Rows {
		name := r.Model + "/" + r.Item
		if r.OnlyA != 0 || r.OnlyB != 0 {
			t.Errorf("%s: only in A %d, only in B %d; want 0", name, r.OnlyA, r.OnlyB)
		}
		for what, v := range map[string]*float64{"w1": r.W1, "jsd": r.JSD, "shift": r.Shift, "shift_lo": r.ShiftLo, "shift_hi": r.ShiftHi} {
			if v == nil || *v != 0 {
				t.Errorf("%s: %s = %v, want 0", name, what, show(v))
			}
		}
		for what, v := range map[string]*float64{"agreement": r.Agreement, "kappa": r.Kappa, "icc": r.ICC} {
			if v == nil || *v != 1 {
				t.Errorf("%s: %s = %v, want 1", name, what, show(v))
			}
		}
		if r.Scope == ScopeModel {
			matched += r.Matched
		}
	}
	if matched != len(recs) {
		t.Errorf("%d cells matched, want every one of the %d records", matched, len(recs))
	}
}

// TestCompareNoVariance: a run whose every answer is the same option has no variance: κ and the ICC are
// undefined (empty in compare.csv, — on the page), while agreement is 1 and the distances 0.
func TestCompareNoVariance(t *testing.T) {
	spec := testSpec(t)
	var recs sliceSource
	for i := range spec.NumCells() {
		recs = append(recs, store.Record{Index: i, Status: store.StatusOK, OptionID: "3", Attempts: 1})
	}
	a := side(t, spec, "a", recs)
	c, err := Compare(a, a, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		if r.Kappa != nil || r.ICC != nil || r.Agreement == nil || *r.Agreement != 1 || r.W1 == nil || *r.W1 != 0 {
			t.Fatalf("%s/%s: κ %v, ICC %v, agreement %v, W1 %v; want undefined, undefined, 1, 0",
				r.Model, r.Item, show(r.Kappa), show(r.ICC), show(r.Agreement), show(r.W1))
		}
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, c); err != nil {
		t.Fatal(err)
	}
	row, _ := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	h := slices.Index(row[0], "kappa")
	if got := row[1][h]; got != "" {
		t.Errorf("kappa column %q, want empty for undefined", got)
	}
}

func TestCompareNoCommonCells(t *testing.T) {
	spec := testSpec(t)
	recs := fakeRun(spec, 1)
	half := len(recs) / 2
	_, err := Compare(side(t, spec, "a", recs[:half]), side(t, spec, "b", recs[half:]), Options{})
	if !errors.Is(err, ErrNoCommonCells) {
		t.Errorf("err = %v, want ErrNoCommonCells", err)
	}
}

func TestCompareOtherOptions(t *testing.T) {
	spec := testSpec(t)
	other := testSpec(t)
	other.Questionnaire.Options.Options = other.Questionnaire.Options.Options[:4]
	a, b := side(t, spec, "a", fakeRun(spec, 1)), side(t, other, "b", fakeRun(other, 1))
	if _, err := Compare(a, b, Options{}); err == nil || !strings.Contains(err.Error(), "options") {
		t.Errorf("err = %v, want one naming the item's options", err)
	}
}

// TestCompareMatchesIndependentFigures compares two runs of the same spec answered differently (generators
// seeded 1 and 2) and recomputes every figure from the two runs' results.csv, with code of its own.
func TestCompareMatchesIndependentFigures(t *testing.T) {
	spec := testSpec(t)
	ctx := context.Background()
	ra, rb := fakeRun(spec, 1), fakeRun(spec, 2)
	dir := t.TempDir()
	for id, recs := range map[string]sliceSource{"run-a": ra, "run-b": rb} {
		if _, err := results.Export(ctx, recs, spec, id, filepath.Join(dir, id), 0); err != nil {
			t.Fatal(err)
		}
	}
	opt := Options{Samples: 500, Seed: 7}
	c, err := Compare(side(t, spec, "run-a", ra), side(t, spec, "run-b", rb), opt)
	if err != nil {
		t.Fatal(err)
	}
	want := comparetest.Independent(t, filepath.Join(dir, "run-a", results.CSVFile), filepath.Join(dir, "run-b", results.CSVFile),
		opt.Samples, opt.Seed, nil, nil)
	if len(want) != len(c.Rows) {
		t.Fatalf("%d rows, independently %d", len(c.Rows), len(want))
	}
	cols := Header()
	for i, r := range c.Rows {
		got := r.Values()
		for j, name := range cols {
			w := want[i][name]
			if got[j] == w {
				continue
			}
			g, err1 := strconv.ParseFloat(got[j], 64)
			f, err2 := strconv.ParseFloat(w, 64)
			if err1 != nil || err2 != nil || math.Abs(g-f) > 1e-12 {
				t.Errorf("%s/%s %s = %q, independently %q", r.Model, r.Item, name, got[j], w)
			}
		}
	}
	// A rerun gives the same intervals; another seed others.
	again, _ := Compare(side(t, spec, "run-a", ra), side(t, spec, "run-b", rb), opt)
	other, _ := Compare(side(t, spec, "run-a", ra), side(t, spec, "run-b", rb), Options{Samples: 500, Seed: 8})
	differ := false
	for i := range c.Rows {
		if !slices.Equal(c.Rows[i].Values(), again.Rows[i].Values()) {
			t.Errorf("row %d differs on a rerun", i)
		}
		differ = differ || show(c.Rows[i].ShiftLo) != show(other.Rows[i].ShiftLo)
	}
	if !differ {
		t.Error("seed 8 gave the intervals of seed 7")
	}
}

func show(v *float64) string {
	if v == nil {
		return "nil"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// TestWriteHTML: the page carries the report's policy and style, no script and nothing it would load, every
// model's table, and — for an undefined statistic.
func TestWriteHTML(t *testing.T) {
	spec := testSpec(t)
	var recs sliceSource
	for i := range spec.NumCells() {
		recs = append(recs, store.Record{Index: i, Status: store.StatusOK, OptionID: "3", Attempts: 1})
	}
	a := side(t, spec, "run-a", recs)
	c, err := Compare(a, a, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, c, Describe(a), Describe(a)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`content="default-src 'none'`, "<style>", `<h2 id="model-sim">`, `<h2 id="model-probs">`,
		`data-key="sim/all/kappa">—<`, `data-key="probs/7/agreement">1.000<`, `data-key="sim/all/matched">1,000<`} {
		if !strings.Contains(page, want) {
			t.Errorf("compare.html lacks %s", want)
		}
	}
	for _, bad := range []string{"<script", "src=", "http://", "https://", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("compare.html has %s", bad)
		}
	}
}

// TestReadmeListsTheColumns: README's list of compare.csv's columns is Header() after model, model_b, item and scope, in
// order, so the docs cannot drift from the table columns.
func TestReadmeListsTheColumns(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n### Comparing runs")
	if i < 0 {
		t.Fatal("README.md has no ### Comparing runs section")
	}
	s = s[i+1:]
	if j := strings.Index(s[1:], "\n#"); j >= 0 {
		s = s[:j+1]
	}
	var listed []string
	for line := range strings.Lines(s[strings.Index(s, "Columns:"):]) {
		if !strings.HasPrefix(line, "- `") {
			continue
		}
		names, _, _ := strings.Cut(line, ":")
		for _, f := range strings.Split(names, ",") {
			listed = append(listed, strings.Trim(strings.TrimSpace(strings.TrimPrefix(f, "- ")), "`"))
		}
	}
	if want := Header()[4:]; !slices.Equal(listed, want) {
		t.Errorf("README lists the columns\n%v\nwant\n%v", listed, want)
	}
}
