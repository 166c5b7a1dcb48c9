package compare

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

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
		r := store.Record{Index: i, Status: store.StatusOK, OptionID: opts[k].ID, Raw: opts[k].Text, Attempts: 1}
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
	c, err := Compare(a, a, Options{})
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
	want := independent(t, filepath.Join(dir, "run-a", results.CSVFile), filepath.Join(dir, "run-b", results.CSVFile), opt)
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

// csvCell is what the independent computation reads of a results.csv row.
type csvCell struct {
	model, item, persona, option string
	answered                     bool
	pmf                          []float64
	score                        *float64
}

// readRun reads a results.csv: the recorded cells (NotRun rows are cells without a record) by cell id, the
// cell ids in order.
func readRun(t *testing.T, path string) (map[string]csvCell, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	out := map[string]csvCell{}
	var order []string
	for _, r := range rows[1:] {
		if r[col["error_class"]] == "NotRun" {
			continue
		}
		c := csvCell{model: r[col["model"]], item: r[col["item_id"]], persona: r[col["persona_id"]]}
		if r[col["status"]] == "ok" {
			c.option, c.answered = r[col["option_id"]], true
		}
		var p []float64
		for _, o := range []string{"1", "2", "3", "4", "5"} {
			if v := r[col["p_"+o]]; v != "" {
				f, _ := strconv.ParseFloat(v, 64)
				p = append(p, f)
			}
		}
		score := func(name string) *float64 {
			if v := r[col[name]]; v != "" {
				f, _ := strconv.ParseFloat(v, 64)
				return &f
			}
			return nil
		}
		switch {
		case len(p) == 5:
			var s float64
			for _, v := range p {
				s += v
			}
			for k := range p {
				p[k] /= s
			}
			c.pmf, c.score = p, score("expected_score")
		case c.answered:
			c.pmf = make([]float64, 5)
			k, _ := strconv.Atoi(c.option)
			c.pmf[k-1] = 1
			c.score = score("score")
		}
		out[r[col["cell_id"]]] = c
		order = append(order, r[col["cell_id"]])
	}
	return out, order
}

// independent computes compare.csv's rows from two results.csv files, as docs/architecture.md defines them.
func independent(t *testing.T, pathA, pathB string, opt Options) []map[string]string {
	a, orderA := readRun(t, pathA)
	b, _ := readRun(t, pathB)
	type group struct {
		pairs        [][2]csvCell
		onlyA, onlyB int
	}
	groups := map[[2]string]*group{}
	get := func(m, it string) *group {
		if groups[[2]string{m, it}] == nil {
			groups[[2]string{m, it}] = &group{}
		}
		return groups[[2]string{m, it}]
	}
	for _, id := range orderA {
		ca := a[id]
		if cb, ok := b[id]; ok {
			g := get(ca.model, ca.item)
			g.pairs = append(g.pairs, [2]csvCell{ca, cb})
		} else {
			get(ca.model, ca.item).onlyA++
		}
	}
	for id, cb := range b {
		if _, ok := a[id]; !ok {
			get(cb.model, cb.item).onlyB++
		}
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var out []map[string]string
	for _, m := range []string{"sim", "probs"} {
		var all [][2]csvCell
		allRow := map[string]string{"model": m, "item": "all", "scope": "model"}
		var w1s, jsds []float64
		onlyA, onlyB, dists := 0, 0, 0
		for it := 1; it <= 50; it++ {
			item := strconv.Itoa(it)
			g := groups[[2]string{m, item}]
			if g == nil {
				t.Fatalf("no cells of %s/%s", m, item)
			}
			row := figures(g.pairs, opt, m, item)
			row["model"], row["item"], row["scope"] = m, item, "item"
			row["only_a"], row["only_b"] = strconv.Itoa(g.onlyA), strconv.Itoa(g.onlyB)
			// Distances between the mean pmfs over the cells with one in both runs.
			pa, pb := make([]float64, 5), make([]float64, 5)
			n := 0
			for _, p := range g.pairs {
				if p[0].pmf == nil || p[1].pmf == nil {
					continue
				}
				n++
				for k := range 5 {
					pa[k] += p[0].pmf[k]
					pb[k] += p[1].pmf[k]
				}
			}
			row["distributions"], row["items"] = strconv.Itoa(n), "0"
			if n > 0 {
				var w1, jsd, ca, cb float64
				for k := range 5 {
					pa[k] /= float64(n)
					pb[k] /= float64(n)
				}
				for k := range 4 {
					ca += pa[k]
					cb += pb[k]
					w1 += math.Abs(ca - cb)
				}
				for k := range 5 {
					mk := (pa[k] + pb[k]) / 2
					if pa[k] > 0 {
						jsd += pa[k] * math.Log2(pa[k]/mk) / 2
					}
					if pb[k] > 0 {
						jsd += pb[k] * math.Log2(pb[k]/mk) / 2
					}
				}
				row["w1"], row["jsd"] = f(w1), f(jsd)
				w1s, jsds = append(w1s, w1), append(jsds, jsd)
			}
			out = append(out, row)
			all = append(all, g.pairs...)
			onlyA, onlyB, dists = onlyA+g.onlyA, onlyB+g.onlyB, dists+n
		}
		for k, v := range figures(all, opt, m, "all") {
			allRow[k] = v
		}
		allRow["only_a"], allRow["only_b"], allRow["distributions"] = strconv.Itoa(onlyA), strconv.Itoa(onlyB), strconv.Itoa(dists)
		allRow["items"] = strconv.Itoa(len(w1s))
		var sw, sj float64
		for i := range w1s {
			sw += w1s[i]
			sj += jsds[i]
		}
		allRow["w1"], allRow["jsd"] = f(sw/float64(len(w1s))), f(sj/float64(len(jsds)))
		out = append(out, allRow)
	}
	return out
}

// figures are the counts, score statistics and agreement of a set of matched cells, κ's chance
// agreement taken within each item, weighted by its answered cells (as for a model's row).
func figures(pairs [][2]csvCell, opt Options, model, item string) map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	row := map[string]string{"matched": strconv.Itoa(len(pairs))}
	// Agreement and κ.
	answered, agree := 0, 0
	na, nb := map[string]float64{}, map[string]float64{} // answers per item/option
	perItem := map[string]float64{}
	for _, p := range pairs {
		if !p[0].answered || !p[1].answered {
			continue
		}
		answered++
		if p[0].option == p[1].option {
			agree++
		}
		na[p[0].item+"/"+p[0].option]++
		nb[p[1].item+"/"+p[1].option]++
		perItem[p[0].item]++
	}
	row["answered"], row["agree"] = strconv.Itoa(answered), strconv.Itoa(agree)
	if answered > 0 {
		n := float64(answered)
		po := float64(agree) / n
		// Within an item: p_e,i = Σ_k (a_ik/n_i)(b_ik/n_i); pooled: Σ_i n_i p_e,i / n.
		var pe float64
		for k, v := range na {
			ni := perItem[strings.SplitN(k, "/", 2)[0]]
			pe += ni * (v / ni) * (nb[k] / ni)
		}
		pe /= n
		row["agreement"] = f(po)
		if pe < 1 {
			row["kappa"] = f((po - pe) / (1 - pe))
		}
	}
	// Scores: shift, means, ICC(2,1) from its two-way ANOVA, bootstrap over personas.
	var xa, xb []float64
	var personas []string
	byPersona := map[string][]float64{}
	for _, p := range pairs {
		if p[0].score == nil || p[1].score == nil {
			continue
		}
		xa, xb = append(xa, *p[0].score), append(xb, *p[1].score)
		if _, ok := byPersona[p[0].persona]; !ok {
			personas = append(personas, p[0].persona)
		}
		byPersona[p[0].persona] = append(byPersona[p[0].persona], *p[1].score-*p[0].score)
	}
	n := float64(len(xa))
	row["scored"], row["personas"] = strconv.Itoa(len(xa)), strconv.Itoa(len(personas))
	var ma, mb, md float64
	for i := range xa {
		ma += xa[i] / n
		mb += xb[i] / n
	}
	for i := range xa {
		md += xb[i] - xa[i]
	}
	md /= n
	row["mean_a"], row["mean_b"], row["shift"] = f(ma), f(mb), f(md)
	g := (ma + mb) / 2
	var ssr, sse float64
	for i := range xa {
		ri := (xa[i] + xb[i]) / 2
		ssr += 2 * (ri - g) * (ri - g)
		sse += (xa[i]-ri-ma+g)*(xa[i]-ri-ma+g) + (xb[i]-ri-mb+g)*(xb[i]-ri-mb+g)
	}
	msr, msc, mse := ssr/(n-1), n*((ma-g)*(ma-g)+(mb-g)*(mb-g)), sse/(n-1)
	row["icc"] = f((msr - mse) / (msr + mse + 2*(msc-mse)/n))
	h := fnv.New64a()
	h.Write([]byte(model + "\x00" + item))
	rng := rand.New(rand.NewPCG(opt.Seed, h.Sum64()))
	means := make([]float64, opt.Samples)
	for s := range means {
		var sum float64
		cells := 0
		for range personas {
			d := byPersona[personas[rng.IntN(len(personas))]]
			for _, v := range d {
				sum += v
			}
			cells += len(d)
		}
		means[s] = sum / float64(cells)
	}
	slices.Sort(means)
	b := float64(opt.Samples)
	row["shift_lo"], row["shift_hi"] = f(means[int(math.Ceil(0.025*b))-1]), f(means[int(math.Ceil(0.975*b))-1])
	for _, k := range []string{"served_model_a", "served_model_b", "system_fingerprint_a", "system_fingerprint_b"} {
		row[k] = ""
	}
	return row
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

// TestReadmeListsTheColumns: README's list of compare.csv's columns is Header() after model, item and scope, in
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
	if want := Header()[3:]; !slices.Equal(listed, want) {
		t.Errorf("README lists the columns\n%v\nwant\n%v", listed, want)
	}
}
