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
	"github.com/silicolab/silico/experiment/experimenttest"
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

// fakeRun is a run of spec answered by a generator seeded with seed: each persona leans to one option per item
// and way of asking it (wording, prompt, probe and option order), most answers follow the lean, some are unparsed
// or failed, and a few cells have no record. The cells of the "probs" model and of every answer mode that records
// probabilities carry option probabilities, but one in five, which have none (a mixed run).
func fakeRun(spec *experiment.Spec, seed uint64) sliceSource {
	rng := rand.New(rand.NewPCG(seed, 99))
	var out sliceSource
	for i := range spec.NumCells() {
		c := spec.Cell(i)
		if rng.Float64() < 0.03 {
			continue
		}
		opts := spec.OptionsFor(c.Item).Options
		lean := (c.Persona*7 + c.Item*3 + c.Variant*2 + c.PromptVariant*5 + c.Probe*4 + c.Order*3) % len(opts)
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
		probs := spec.Models[c.Model].ID == "probs" || spec.CellAnswer(c).ProbsSource() != ""
		if probs && r.Status != store.StatusFailed && rng.IntN(5) > 0 {
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
	ra, rb := fakeRun(spec, 1), fakeRun(spec, 2)
	opt := Options{Samples: 500, Seed: 7}
	c := compareIndependently(t, spec, ra, rb, opt)
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

// compareIndependently compares runs ra and rb of spec ("run-a" and "run-b") with opt, and checks every figure
// against what comparetest computes from the two runs' results.csv.
func compareIndependently(t *testing.T, spec *experiment.Spec, ra, rb sliceSource, opt Options) *Comparison {
	t.Helper()
	dir := t.TempDir()
	for id, recs := range map[string]sliceSource{"run-a": ra, "run-b": rb} {
		if _, err := results.Export(context.Background(), recs, spec, id, filepath.Join(dir, id), 0); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Compare(side(t, spec, "run-a", ra), side(t, spec, "run-b", rb), opt)
	if err != nil {
		t.Fatal(err)
	}
	sameFigures(t, c, comparetest.Independent(t, filepath.Join(dir, "run-a", results.CSVFile),
		filepath.Join(dir, "run-b", results.CSVFile), opt.Samples, opt.Seed, nil, nil))
	return c
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

// reseed is spec with other seeds and, when model is not "", its first model renamed: a spec whose cell ids
// share nothing with spec's.
func reseed(t *testing.T, seeds []int64, model string) *experiment.Spec {
	spec := testSpec(t)
	spec.Seeds = seeds
	if model != "" {
		spec.Models[0].ID = model
	}
	return spec
}

// TestCompareOtherSeeds: runs whose seeds (and a model id) differ pair by position. The same records under other
// seeds compare as a run with itself does, and two different runs give the figures computed independently from
// their results.csv with the cell ids rebuilt under that pairing.
func TestCompareOtherSeeds(t *testing.T) {
	spec := testSpec(t)
	other := reseed(t, []int64{11, 12}, "llama")
	recs := fakeRun(spec, 1)
	c, err := Compare(side(t, spec, "a", recs), side(t, other, "b", recs), Options{Samples: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Pairing.String(), "models by position (sim=llama), seeds by position (1=11, 2=12)"; got != want {
		t.Errorf("pairing %q, want %q", got, want)
	}
	for _, r := range c.Rows {
		if r.OnlyA != 0 || r.OnlyB != 0 || r.Shift == nil || *r.Shift != 0 || r.Agreement == nil || *r.Agreement != 1 || r.Kappa == nil || *r.Kappa != 1 {
			t.Fatalf("%s/%s: only %d/%d, shift %s, agreement %s, κ %s; want a run beside itself",
				r.Label(), r.Item, r.OnlyA, r.OnlyB, show(r.Shift), show(r.Agreement), show(r.Kappa))
		}
	}
	if r := c.Rows[0]; r.Model != "sim" || r.ModelB != "llama" || r.seeds != "1=11 2=12" {
		t.Errorf("first row pairs %s with %s, seeds %q", r.Model, r.ModelB, r.seeds)
	}

	ctx := context.Background()
	ra, rb := fakeRun(spec, 1), fakeRun(other, 2)
	dir := t.TempDir()
	if _, err := results.Export(ctx, ra, spec, "a", filepath.Join(dir, "a"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := results.Export(ctx, rb, other, "b", filepath.Join(dir, "b"), 0); err != nil {
		t.Fatal(err)
	}
	opt := Options{Samples: 300, Seed: 5}
	c, err = Compare(side(t, spec, "a", ra), side(t, other, "b", rb), opt)
	if err != nil {
		t.Fatal(err)
	}
	want := comparetest.Independent(t, filepath.Join(dir, "a", results.CSVFile), filepath.Join(dir, "b", results.CSVFile),
		opt.Samples, opt.Seed, map[string]string{"sim": "llama"}, map[string]string{"1": "11", "2": "12"})
	sameFigures(t, c, want)

	// The fingerprints differ between the two runs (fakeRun's depend on its seed): the summary and the page say so.
	var sum, page bytes.Buffer
	if err := WriteSummary(&sum, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, c, Describe(side(t, spec, "a", ra)), Describe(side(t, other, "b", rb))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.String(), "system fingerprint A fp_1 fp_2 · B fp_2 fp_3 fp_4 — CHANGED") ||
		!strings.Contains(sum.String(), "served model A served-sim · B served-llama — CHANGED") ||
		!strings.Contains(sum.String(), "cells paired: models by position (sim=llama), seeds by position (1=11, 2=12)") {
		t.Errorf("summary lacks the pairing or the changed provenance:\n%s", sum.String())
	}
	for _, want := range []string{`data-key="sim=llama/all/fingerprint_changed"`, `data-key="sim=llama/all/served_changed"`, `seeds by position (1=11, 2=12)`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("compare.html lacks %s", want)
		}
	}
}

// sameFigures checks c's rows against rows computed independently, numbers to 1e-12.
func sameFigures(t *testing.T, c *Comparison, want []map[string]string) {
	t.Helper()
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
				t.Errorf("%s/%s %s = %q, independently %q", r.Label(), r.Item, name, got[j], w)
			}
		}
	}
}

// TestCompareNoIntervals: samples 0 (analysis.bootstrap.samples: 0) leaves the intervals empty, the rest as it is.
func TestCompareNoIntervals(t *testing.T) {
	spec := testSpec(t)
	a, b := side(t, spec, "a", fakeRun(spec, 1)), side(t, spec, "b", fakeRun(spec, 2))
	zero := 0
	spec.Analysis.Bootstrap.Samples = &zero
	c, err := Compare(a, b, SpecOptions(spec))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		if r.ShiftLo != nil || r.ShiftHi != nil || r.Shift == nil {
			t.Fatalf("%s/%s: interval [%s, %s], shift %s; want no interval and a shift", r.Label(), r.Item, show(r.ShiftLo), show(r.ShiftHi), show(r.Shift))
		}
	}
	var b2 bytes.Buffer
	if err := WriteSummary(&b2, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b2.String(), "no bootstrap intervals") {
		t.Errorf("summary does not say the intervals are off:\n%s", b2.String())
	}
	if n, seed := SpecOptions(testSpec(t)).Samples, SpecOptions(testSpec(t)).Seed; n != experiment.DefaultBootstrapSamples || seed != experiment.DefaultBootstrapSeed {
		t.Errorf("a spec without analysis: %d samples, seed %d; want experiment's defaults", n, seed)
	}
}

func TestPairModels(t *testing.T) {
	for _, tc := range []struct {
		a, b  []string
		named string
		want  []ModelPair
		by    string
		err   string
	}{
		{a: []string{"x", "y"}, b: []string{"y", "x"}, want: []ModelPair{{"x", "x"}, {"y", "y"}}, by: ByID},
		{a: []string{"x", "y"}, b: []string{"p", "q"}, want: []ModelPair{{"x", "p"}, {"y", "q"}}, by: ByPosition},
		{a: []string{"x"}, b: []string{"x", "q"}, err: "--models A_MODEL=B_MODEL"},
		{a: []string{"x", "w"}, b: []string{"y", "x"}, named: "x=y", want: []ModelPair{{"x", "y"}, {"w", ""}, {"", "x"}}, by: ByHand},
		{a: []string{"x", "w"}, b: []string{"w", "q", "z"}, named: "x=q", want: []ModelPair{{"x", "q"}, {"w", "w"}, {"", "z"}}, by: ByHand},
		{a: []string{"x"}, b: []string{"y"}, named: "z=y", err: `run A has no model "z"`},
		{a: []string{"x", "w"}, b: []string{"y"}, named: "x=y,w=y", err: `model "y" of run B is named in two pairs`},
	} {
		var named []ModelPair
		if tc.named != "" {
			var err error
			if named, err = ParseModelPairs(tc.named); err != nil {
				t.Fatal(err)
			}
		}
		got, by, err := PairModels(tc.a, tc.b, named)
		if tc.err != "" {
			if !errors.Is(err, ErrUnpaired) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %v %q: err %v, want ErrUnpaired saying %q", tc.a, tc.b, tc.named, err, tc.err)
			}
			continue
		}
		if err != nil || by != tc.by || !slices.Equal(got, tc.want) {
			t.Errorf("%v %v %q: %v by %s (%v), want %v by %s", tc.a, tc.b, tc.named, got, by, err, tc.want, tc.by)
		}
	}
	if _, err := ParseModelPairs("x=y,z"); err == nil || !strings.Contains(err.Error(), "A_MODEL=B_MODEL") {
		t.Errorf("ParseModelPairs(x=y,z): err %v", err)
	}
	if _, err := Pair(testSpec(t), reseed(t, []int64{1, 2, 3}, ""), nil); !errors.Is(err, ErrUnpaired) || !strings.Contains(err.Error(), "seeds") {
		t.Errorf("seeds [1 2] vs [1 2 3]: err %v, want ErrUnpaired about seeds", err)
	}
}

// identity checks that c, a run compared with itself or with a rerun that answered every cell alike, is the
// identity: nothing only in one run, every record matched, distances and shift 0, agreement, κ and ICC 1 where
// defined, and defined on every model's row.
func identity(t *testing.T, name string, c *Comparison, records int) {
	t.Helper()
	matched := 0
	for _, r := range c.Rows {
		where := name + " " + r.Label() + "/" + r.Item
		if r.OnlyA != 0 || r.OnlyB != 0 {
			t.Errorf("%s: %d only in A, %d only in B; want none", where, r.OnlyA, r.OnlyB)
		}
		for what, v := range map[string]*float64{"w1": r.W1, "jsd": r.JSD, "shift": r.Shift, "shift_lo": r.ShiftLo, "shift_hi": r.ShiftHi} {
			if v != nil && *v != 0 {
				t.Errorf("%s: %s = %v, want 0", where, what, *v)
			}
		}
		for what, v := range map[string]*float64{"agreement": r.Agreement, "kappa": r.Kappa, "icc": r.ICC} {
			if v != nil && *v != 1 {
				t.Errorf("%s: %s = %v, want 1", where, what, *v)
			}
		}
		if r.Scope == ScopeModel {
			matched += r.Matched
			if r.Agreement == nil || r.Kappa == nil || r.ICC == nil || r.Shift == nil {
				t.Errorf("%s: agreement %s, κ %s, ICC %s, shift %s; want each defined", where, show(r.Agreement), show(r.Kappa), show(r.ICC), show(r.Shift))
			}
		}
	}
	if matched != records {
		t.Errorf("%s: %d cells matched, want every one of the %d records", name, matched, records)
	}
}

// TestCompareEveryExampleWithItself: every chat example under examples/ — balanced option orders, wording and
// prompt variants, pictures — compared with itself, and with a rerun under another id whose answers are the
// same, is the identity, and its rows say which factors the cells were matched on.
func TestCompareEveryExampleWithItself(t *testing.T) {
	entries, err := os.ReadDir("../examples")
	if err != nil {
		t.Fatal(err)
	}
	wantFactors := map[string]string{
		"quickstart": "model seed item persona",
		"bfi":        "model seed item persona order",
		"wording":    "model seed item persona variant prompt_variant order",
	}
	ran := 0
	for _, e := range entries {
		spec, err := specfile.Load(filepath.Join("../examples", e.Name(), "experiment.yaml"))
		if err != nil || spec.IsEmbed() {
			continue
		}
		ran++
		recs := fakeRun(spec, 1)
		a := side(t, spec, "run-a", recs)
		for _, b := range []*Side{a, side(t, spec, "rerun", recs)} {
			c, err := Compare(a, b, Options{Samples: 100, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			identity(t, e.Name()+" vs "+b.ID, c, len(recs))
			all := c.Rows[len(c.Rows)-1]
			if want, ok := wantFactors[e.Name()]; ok && strings.Join(all.MatchedOn, " ") != want {
				t.Errorf("%s: matched on %v, want %s", e.Name(), all.MatchedOn, want)
			}
		}
	}
	if ran < 4 {
		t.Fatalf("%d chat examples, want quickstart, bfi, wording and pictures", ran)
	}
}

// TestCompareDesignsWithThemselves: the same for 200 specs drawn over the design space (orders with and without
// pins, wording and prompt variants, answer modes with a verbalized probe).
func TestCompareDesignsWithThemselves(t *testing.T) {
	for seed := range uint64(200) {
		spec := experimenttest.Design(seed, experimenttest.Defaults())
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		recs := fakeRun(&spec, seed+1)
		if len(recs) == 0 {
			continue
		}
		a := side(t, &spec, "a", recs)
		c, err := Compare(a, side(t, &spec, "rerun", recs), Options{Samples: 20, Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		// A design's cells may all answer one option, leaving κ or the ICC undefined: hold the defined ones.
		for _, r := range c.Rows {
			if r.OnlyA != 0 || r.OnlyB != 0 || (r.Agreement != nil && *r.Agreement != 1) || (r.Kappa != nil && *r.Kappa != 1) ||
				(r.ICC != nil && *r.ICC != 1) || (r.Shift != nil && *r.Shift != 0) || (r.W1 != nil && *r.W1 != 0) {
				t.Fatalf("%s (%s), %s/%s: only %d/%d, agreement %s, κ %s, ICC %s, shift %s, W1 %s; want the identity",
					spec.Name, spec.Summary(), r.Label(), r.Item, r.OnlyA, r.OnlyB, show(r.Agreement), show(r.Kappa), show(r.ICC), show(r.Shift), show(r.W1))
			}
		}
		matched := 0
		for _, r := range c.modelRows() {
			matched += r.Matched
		}
		if matched != len(recs) {
			t.Fatalf("%s: %d of %d records matched", spec.Name, matched, len(recs))
		}
	}
}

// TestCompareWordingMatchesIndependentFigures: two different runs of examples/wording (balanced orders, wording
// variants, two prompts) give every figure code of its own computes from their results.csv, pairing each cell
// with the one of the same item, wording, prompt, persona and shown order.
func TestCompareWordingMatchesIndependentFigures(t *testing.T) {
	spec, err := specfile.Load("../examples/wording/experiment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	compareIndependently(t, spec, fakeRun(spec, 1), fakeRun(spec, 2), Options{Samples: 300, Seed: 4})
}

// TestCompareAcrossOrderModes: a balanced run beside an as-written one pairs its as-written cells and leaves its
// reversed ones only in A; beside a reversed one, the other way round. The cells meet by the order they showed,
// not by their place in a balanced pair.
func TestCompareAcrossOrderModes(t *testing.T) {
	load := func(mode experiment.OrderMode) *experiment.Spec {
		s, err := specfile.Load("../examples/bfi/experiment.yaml")
		if err != nil {
			t.Fatal(err)
		}
		s.Questionnaire.Order.Mode = mode
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	all := func(s *experiment.Spec) sliceSource {
		var recs sliceSource
		for i := range s.NumCells() {
			// The written answer is the option shown first: it tells which order the cell showed.
			recs = append(recs, store.Record{Index: i, Status: store.StatusOK, OptionID: s.Shown(s.Cell(i)).CanonicalIDs()[0], Attempts: 1})
		}
		return recs
	}
	balanced := load(experiment.OrderBalanced)
	a := side(t, balanced, "balanced", all(balanced))
	for _, mode := range []experiment.OrderMode{experiment.OrderAsWritten, experiment.OrderReversed} {
		other := load(mode)
		c, err := Compare(a, side(t, other, string(mode), all(other)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := c.Rows[len(c.Rows)-1]
		if r.Matched != other.NumCells() || r.OnlyA != balanced.NumCells()-other.NumCells() || r.OnlyB != 0 ||
			r.Agreement == nil || *r.Agreement != 1 {
			t.Errorf("balanced vs %s: %d matched, %d only in A, %d only in B, agreement %s; want %d, %d, 0 and 1 (the same order shown)",
				mode, r.Matched, r.OnlyA, r.OnlyB, show(r.Agreement), other.NumCells(), balanced.NumCells()-other.NumCells())
		}
	}
}
