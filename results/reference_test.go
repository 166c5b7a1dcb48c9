package results

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

func withProbs(r store.Record, p ...float64) store.Record {
	r.Probs = p
	return r
}

func close9(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

func closeAll(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !close9(a[i], b[i]) {
			return false
		}
	}
	return true
}

// referenceSpec is testSpec with personas p1 (sex f) and p2 (sex m) and an inlined human reference.
func referenceSpec(t *testing.T) *experiment.Spec {
	t.Helper()
	s := testSpec()
	s.Personas[0].Attributes = map[string]string{"sex": "f"}
	s.Personas[1].Attributes = map[string]string{"sex": "m"}
	alpha := 0.61
	s.Reference = &experiment.Reference{Groups: []string{"sex"}, Form: experiment.ReferenceAnswers,
		Counts: []experiment.ReferenceCounts{
			{Item: "q1", Group: "all", Counts: []int{2, 1, 1}},
			{Item: "q1", Group: "sex=f", Counts: []int{2, 0, 0}},
			{Item: "q3", Group: "all", Counts: []int{1, 1, 2}},
		},
		Scales: []experiment.ReferenceScale{{Scale: "E", Group: "all", Respondents: 4, ItemsUsed: 2, Alpha: &alpha}},
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		t.Fatalf("reference spec: %v", err)
	}
	return s
}

// The cells of model m1 in referenceSpec: index = ((seed*3)+item)*2 + persona.
func referenceRecords() []store.Record {
	return []store.Record{
		withProbs(ok(0, "1"), 0.5, 0.3, 0.2),               // seed 0, q1, p1
		ok(1, "3"),                                         // seed 0, q1, p2: no probabilities, a point mass at 3
		withProbs(ok(6, "3"), 0.1, 0.1, 0.8),               // seed 1, q1, p1
		{Index: 7, Status: store.StatusUnparsed, Raw: "?"}, // seed 1, q1, p2: no distribution at all
		ok(4, "dk"), // seed 0, q3, p1: an option ignored for scale
		ok(5, "y"),  // seed 0, q3, p2
	}
}

func TestCellPMF(t *testing.T) {
	okRow := Row{Status: store.StatusOK, Probs: []float64{0.2, 0.2, 0.6}}
	if p, probs, ok := cellPMF(&okRow, 0, 3); !ok || !probs || !closeAll(p, []float64{0.2, 0.2, 0.6}) {
		t.Errorf("a row with probabilities: %v %v %v", p, probs, ok)
	}
	unparsed := Row{Status: store.StatusUnparsed, Probs: []float64{2, 1, 1}}
	if p, probs, ok := cellPMF(&unparsed, -1, 3); !ok || !probs || !closeAll(p, []float64{0.5, 0.25, 0.25}) {
		t.Errorf("an unparsed row with probabilities keeps them, scaled to 1: %v %v %v", p, probs, ok)
	}
	wrong := Row{Status: store.StatusOK, Probs: []float64{0.5, 0.5}}
	if p, probs, ok := cellPMF(&wrong, 2, 3); !ok || probs || !closeAll(p, []float64{0, 0, 1}) {
		t.Errorf("probabilities of the wrong length: want the written answer, got %v %v %v", p, probs, ok)
	}
	if _, _, ok := cellPMF(&Row{Status: store.StatusFailed}, -1, 3); ok {
		t.Error("a failed row without probabilities has a distribution")
	}
}

// TestReferenceComparison follows a small run through the distributions and reference.csv's numbers, worked
// out by hand: probabilities and written answers averaged over seeds and personas, groups by persona attribute,
// W1 over the scored options only.
func TestReferenceComparison(t *testing.T) {
	s := referenceSpec(t)
	a, err := Analyze(context.Background(), sliceSource{recs: referenceRecords()}, s, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		got          PMF
		want         []float64
		cells, probs int
		source       string
	}{
		{"p1 over seeds", a.PersonaPMF(0, 0, 0), []float64{0.3, 0.2, 0.5}, 2, 2, SourceProbs},
		{"p2 over seeds", a.PersonaPMF(0, 0, 1), []float64{0, 0, 1}, 1, 0, SourceAnswers},
		{"all", a.GroupPMF(0, 0, "all"), []float64{0.6 / 3, 0.4 / 3, 2.0 / 3}, 3, 2, SourceMixed},
		{"sex=f", a.GroupPMF(0, 0, "sex=f"), []float64{0.3, 0.2, 0.5}, 2, 2, SourceProbs},
		{"q3 all", a.GroupPMF(0, 2, "all"), []float64{0.5, 0, 0.5}, 2, 0, SourceAnswers},
		{"m2 has no cells", a.GroupPMF(1, 0, "all"), nil, 0, 0, ""},
	} {
		if !closeAll(c.got.P, c.want) || c.got.Cells != c.cells || c.got.FromProbs != c.probs || c.got.Source() != c.source {
			t.Errorf("%s: %+v (source %q), want %v from %d cells, %d with probabilities (%q)", c.name, c.got, c.got.Source(),
				c.want, c.cells, c.probs, c.source)
		}
	}

	// 2 models × 3 items × the groups the reference has (all, sex=f).
	if len(a.Reference) != 12 {
		t.Fatalf("%d reference rows, want 12", len(a.Reference))
	}
	row := func(model, item, group string) ReferenceRow {
		for _, r := range a.Reference {
			if r.Model == model && r.ItemID == item && r.Group == group {
				return r
			}
		}
		t.Fatalf("no reference row %s %s %s", model, item, group)
		return ReferenceRow{}
	}
	q1 := row("m1", "q1", "all")
	mp, hp := []float64{0.2, 0.4 / 3, 2.0 / 3}, []float64{0.5, 0.25, 0.25}
	jsd, _ := psychometrics.JensenShannon(mp, hp)
	if !closeAll(q1.Human, hp) || q1.Humans != 4 || q1.W1 == nil || !close9(*q1.W1, 0.3+(0.75-(0.2+0.4/3))) ||
		q1.JSD == nil || !close9(*q1.JSD, jsd) || !close9(*q1.ModelMean, 0.2+0.8/3+2) || !close9(*q1.HumanMean, 1.75) {
		t.Errorf("q1 all: %+v", q1)
	}
	// q3's "don't know" is ignored for scale: W1 compares the scored options only (model [1 0], humans
	// [0.5 0.5]), JSD and the entropies every option.
	q3 := row("m1", "q3", "all")
	if q3.W1 == nil || !close9(*q3.W1, 0.5) || !close9(*q3.ModelEntropy, 1) || !close9(*q3.HumanEntropy, 1.5) ||
		!close9(*q3.ModelMean, 5) || !close9(*q3.HumanMean, 2.5) {
		t.Errorf("q3 all: %+v", q3)
	}
	// Alignment, TVD and SimBench over the scored options, the uniform answer's figures, by hand: q1's model
	// [0.2 0.1333 0.6667] against the humans' [0.5 0.25 0.25]; U = [1/3 1/3 1/3] is 1/6 from the humans in TVD.
	tvd := (0.3 + (0.25 - 0.4/3) + (2.0/3 - 0.25)) / 2
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{
		{"q1 alignment", q1.Alignment, 1 - (0.3+(0.75-(0.2+0.4/3)))/2},
		{"q1 tvd", q1.TVD, tvd},
		{"q1 simbench", q1.SimBench, 100 * (1 - tvd*6)},
		{"q1 uniform_w1", q1.UniformW1, 0.25},
		{"q1 uniform_alignment", q1.UniformAlignment, 0.875},
		{"q1 uniform_tvd", q1.UniformTVD, 1.0 / 6},
		{"q1 model_nonresponse", q1.ModelNonresponse, 0},
		// q3: "don't know" is reported apart (half of each side) and left out of the ordinal figures: model [1 0],
		// humans [0.5 0.5] over yes and no, K = 2.
		{"q3 model_nonresponse", q3.ModelNonresponse, 0.5},
		{"q3 human_nonresponse", q3.HumanNonresponse, 0.5},
		{"q3 alignment", q3.Alignment, 0.5},
		{"q3 tvd", q3.TVD, 0.5},
		{"q3 uniform_alignment", q3.UniformAlignment, 1},
	} {
		if c.got == nil || !close9(*c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, deref(c.got), c.want)
		}
	}
	if q3.SimBench != nil {
		t.Errorf("q3: the humans answer uniformly over the scored options, SimBench is undefined; got %v", *q3.SimBench)
	}
	if r := row("m1", "q2", "all"); r.Human != nil || r.W1 != nil || r.Answers.Cells != 0 {
		t.Errorf("q2 has neither humans nor cells: %+v", r)
	}
	if r := row("m2", "q1", "sex=f"); r.Answers.P != nil || r.W1 != nil || r.JSD != nil || !closeAll(r.Human, []float64{1, 0, 0}) {
		t.Errorf("m2 q1 sex=f: the humans without a model: %+v", r)
	}
	// The humans' alpha comes from the spec; where it has none the columns are empty.
	var e, aSc *ReferenceScale
	for i, r := range a.ReferenceScales {
		switch {
		case r.Model == "m1" && r.Scale == "E" && r.Group == "all":
			e = &a.ReferenceScales[i]
		case r.Model == "m1" && r.Scale == "A" && r.Group == "all":
			aSc = &a.ReferenceScales[i]
		}
	}
	if e == nil || e.HumanAlpha == nil || *e.HumanAlpha != 0.61 || e.Humans != 4 || aSc == nil || aSc.HumanAlpha != nil {
		t.Fatalf("reference scales: E %+v, A %+v", e, aSc)
	}
	// A scale's line averages its items' figures where they are defined (E: q1 alone, q2 has no humans); the
	// line of scale "all" every item's (q1 and q3), without alpha or omega.
	if e.ItemsCompared != 1 || e.Means[MeanAlignment] == nil || *e.Means[MeanAlignment] != *q1.Alignment || *e.Means[MeanUniformTVD] != *q1.UniformTVD {
		t.Errorf("scale E: %d items compared, means %v", e.ItemsCompared, e.Means)
	}
	var all *ReferenceScale
	for i, r := range a.ReferenceOverall {
		if r.Model == "m1" && r.Scale == ScaleOverall && r.Group == "all" {
			all = &a.ReferenceOverall[i]
		}
	}
	if all == nil || all.ItemsCompared != 2 || all.ModelAlpha != nil || all.HumanAlpha != nil || all.Personas != 2 ||
		!close9(*all.Means[MeanAlignment], (*q1.Alignment+*q3.Alignment)/2) || !close9(*all.Means[MeanTVD], (*q1.TVD+*q3.TVD)/2) ||
		*all.Means[MeanSimBench] != *q1.SimBench {
		t.Errorf("scale all: %+v", all)
	}
}

// TestReferenceScalesMatchReliability: with one seed and written answers only, the expected scores are the
// scores, so the model's alpha and omega of reference_scales.csv are reliability.csv's.
func TestReferenceScalesMatchReliability(t *testing.T) {
	s := testSpec()
	s.Seeds = s.Seeds[:1]
	s.Personas = numberedPersonas(8)
	s.Questionnaire.Items = append(s.Questionnaire.Items, experiment.Item{ID: "q4", Text: "I am loud.", Scale: "E"})
	s.Reference = &experiment.Reference{Counts: []experiment.ReferenceCounts{{Item: "q1", Group: "all", Counts: []int{1, 1, 1}}}}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	var recs []store.Record
	for i := range s.NumCells() {
		c := s.Cell(i)
		opts := s.OptionsFor(c.Item).Options
		recs = append(recs, ok(i, opts[(i*7+c.Persona*c.Persona+c.Item)%2+c.Persona%2].ID))
	}
	a, err := Analyze(context.Background(), sliceSource{recs: recs}, s, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, rel := range a.Reliability {
		for _, rs := range a.ReferenceScales {
			if rs.Model != rel.Model || rs.Scale != rel.Scale || rs.Group != "all" {
				continue
			}
			if !reflect.DeepEqual(rs.ModelAlpha, rel.Alpha) || !reflect.DeepEqual(rs.ModelOmega, rel.OmegaTotal) {
				t.Errorf("%s %s: reference alpha %v omega %v, reliability %v %v", rel.Model, rel.Scale,
					deref(rs.ModelAlpha), deref(rs.ModelOmega), deref(rel.Alpha), deref(rel.OmegaTotal))
			}
			if rel.Scale == "E" && rel.Alpha != nil {
				checked++
			}
		}
	}
	if checked != 2 {
		t.Fatalf("%d models with an alpha of scale E compared, want 2", checked)
	}
}

// readOutput reads a CSV output of dir into its header index and rows.
func readOutput(t *testing.T, dir, name string) (map[string]int, [][]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	return col, recs[1:]
}

func TestExportWritesReferenceFiles(t *testing.T) {
	s := referenceSpec(t)
	dir := t.TempDir()
	if _, err := Export(context.Background(), sliceSource{recs: referenceRecords()}, s, "r", dir, 0); err != nil {
		t.Fatal(err)
	}
	col, rows := readOutput(t, dir, DistributionsFile)
	// 2 models × (3 + 3 + 3 options) × 2 personas.
	if len(rows) != 2*9*2 {
		t.Fatalf("distributions.csv: %d lines, want 36", len(rows))
	}
	r := rows[0]
	if r[col["model"]] != "m1" || r[col["item_id"]] != "q1" || r[col["persona_id"]] != "p1" || r[col["option_id"]] != "1" ||
		r[col["p"]] != "0.3" || r[col["n_cells"]] != "2" || r[col["source"]] != SourceProbs {
		t.Errorf("distributions.csv first line %v", r)
	}
	col, rows = readOutput(t, dir, ReferenceFile)
	if len(rows) != 12 {
		t.Fatalf("reference.csv: %d lines, want 12", len(rows))
	}
	r = rows[0]
	if r[col["group"]] != "all" || r[col["source"]] != SourceMixed || r[col["options"]] != "1;2;3" ||
		// Every digit: the model's mean of 0.1, 0.3 … is 0.19999999999999998 in float64, and the file says so.
		r[col["model_p"]] != "0.19999999999999998;0.13333333333333333;0.6666666666666666" || r[col["human_p"]] != "0.5;0.25;0.25" ||
		r[col["w1"]] != "0.7166666666666668" || r[col["n_humans"]] != "4" || r[col["n_cells"]] != "3" {
		t.Errorf("reference.csv first line %v", r)
	}
	if _, rows = readOutput(t, dir, ReferenceScalesFile); len(rows) != 2*(2+1)*2 {
		t.Errorf("reference_scales.csv: %d lines, want models × (scales + all) × groups = 12", len(rows))
	}

	// Without a reference there is no reference file, and a stale one is not left looking current.
	plain := testSpec()
	dir = t.TempDir()
	if _, err := Export(context.Background(), sliceSource{}, plain, "r", dir, 0); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ReferenceFile, ReferenceScalesFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s written for a spec without a reference (%v)", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, DistributionsFile)); err != nil {
		t.Errorf("distributions.csv is written for every chat run: %v", err)
	}
}

// TestBFIReferenceCSVHumansEqualR: the human side of reference.csv and reference_scales.csv for examples/bfi
// is what R computed (human_counts.csv, human_scales.csv), through loading the spec and exporting a run.
func TestBFIReferenceCSVHumansEqualR(t *testing.T) {
	dir := "../examples/bfi"
	s, err := specfile.Load(filepath.Join(dir, "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Export(context.Background(), sliceSource{}, s, "r", out, 0); err != nil {
		t.Fatal(err)
	}
	rcol, rrows := readOutput(t, dir, "human_counts.csv")
	counts := map[[2]string]map[string]int{}
	for _, r := range rrows {
		k := [2]string{r[rcol["item_id"]], r[rcol["group"]]}
		if counts[k] == nil {
			counts[k] = map[string]int{}
		}
		n, _ := strconv.Atoi(r[rcol["count"]])
		counts[k][r[rcol["option_id"]]] = n
	}
	col, rows := readOutput(t, out, ReferenceFile)
	if len(rows) != len(counts) {
		t.Fatalf("reference.csv has %d lines, R %d item × group counts", len(rows), len(counts))
	}
	for _, r := range rows {
		k := [2]string{r[col["item_id"]], r[col["group"]]}
		c := counts[k]
		total := 0
		for _, n := range c {
			total += n
		}
		if strconv.Itoa(total) != r[col["n_humans"]] {
			t.Errorf("%v: n_humans %s, R %d", k, r[col["n_humans"]], total)
		}
		opts, ps := strings.Split(r[col["options"]], ";"), strings.Split(r[col["human_p"]], ";")
		for i, o := range opts {
			// The CSV writes every digit: the share reads back as exactly count / total.
			if got, err := strconv.ParseFloat(ps[i], 64); err != nil || got != float64(c[o])/float64(total) {
				t.Errorf("%v option %s: human p %s, R %d/%d", k, o, ps[i], c[o], total)
			}
		}
	}
	scol, srows := readOutput(t, dir, "human_scales.csv")
	want := map[[2]string][2]float64{}
	for _, r := range srows {
		f := func(c string) float64 {
			v, err := strconv.ParseFloat(r[scol[c]], 64)
			if err != nil {
				t.Fatalf("human_scales.csv %v: %v", r, err)
			}
			return v
		}
		want[[2]string{r[scol["scale"]], r[scol["group"]]}] = [2]float64{f("alpha"), f("omega_total")}
	}
	col, rows = readOutput(t, out, ReferenceScalesFile)
	rows = slices.DeleteFunc(rows, func(r []string) bool { return r[col["scale"]] == ScaleOverall })
	if len(rows) != len(want) {
		t.Fatalf("reference_scales.csv has %d lines, R %d", len(rows), len(want))
	}
	for _, r := range rows {
		k := [2]string{r[col["scale"]], r[col["group"]]}
		for i, c := range []string{"human_alpha", "human_omega_total"} {
			got, err := strconv.ParseFloat(r[col[c]], 64)
			if err != nil || math.Abs(got-want[k][i]) > 1e-9 {
				t.Errorf("%v: %s %q; psych %.17g", k, c, r[col[c]], want[k][i])
			}
		}
	}
}

// weightedSpec is referenceSpec with its human side a file of answers: 40 respondents answering q1 and q3 (q2's
// column is absent), a sex column and survey weights from 0.25 to 3, drawn by a fixed rule.
func weightedSpec(t *testing.T) *experiment.Spec {
	t.Helper()
	s := referenceSpec(t)
	rs := &experiment.Respondents{Items: []string{"q1", "q3"}}
	for i := range 40 {
		a1, a3 := (i*7+i/3)%4-1, (i*5+i/4)%3 // q1: -1 (missing) … 2; q3: y, n, dk
		sex := []string{"f", "m", ""}[(i*11)%3]
		rs.Answers = append(rs.Answers, []int{a1, a3})
		rs.Groups = append(rs.Groups, []string{sex})
		rs.Weights = append(rs.Weights, 0.25+float64((i*13)%12)/4)
	}
	s.Reference = &experiment.Reference{Groups: []string{"sex"}, Form: experiment.ReferenceAnswers, Weight: "w", Respondents: rs}
	if err := s.Validate(); err != nil {
		t.Fatalf("weighted spec: %v", err)
	}
	return s
}

// TestWeightedHumansEqualR: with survey weights, reference.csv's human_p of every item and group is R's
// weighted table, tapply(w, answer, sum) / sum(w), and human_mean R's weighted.mean of the scores (reverse-keyed
// items reversed, "don't know" left out), to 1e-12; n_humans stays the head count of those who answered.
func TestWeightedHumansEqualR(t *testing.T) {
	rscript, err := exec.LookPath("Rscript")
	if err != nil {
		t.Skip("Rscript not installed: the weighted human figures are not compared with R")
	}
	s := weightedSpec(t)
	a, err := Analyze(context.Background(), sliceSource{recs: referenceRecords()}, s, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("item,group,option,score,w\n")
	rs := s.Reference.Respondents
	for j, id := range rs.Items {
		it := slices.IndexFunc(s.Questionnaire.Items, func(i experiment.Item) bool { return i.ID == id })
		opts := s.OptionsFor(it).Options
		for _, g := range s.Reference.GroupLabels() {
			for i, ans := range rs.Answers {
				if ans[j] < 0 || !rs.InGroup(s.Reference.Groups, i, g) {
					continue
				}
				score := "NA"
				if v, ok := s.Score(it, opts[ans[j]].ID); ok {
					score = strconv.Itoa(v)
				}
				fmt.Fprintf(&b, "%s,%s,%d,%s,%s\n", id, g, ans[j], score, formatFloat(rs.Weights[i]))
			}
		}
	}
	in := filepath.Join(dir, "weighted.csv")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `d <- read.csv(commandArgs(TRUE)[1], colClasses = c("character", "character", "integer", "numeric", "numeric"))
for (k in unique(paste(d$item, d$group))) {
  x <- d[paste(d$item, d$group) == k, ]
  p <- tapply(x$w, factor(x$option, levels = 0:2), sum) / sum(x$w)
  p[is.na(p)] <- 0
  s <- !is.na(x$score)
  cat(x$item[1], x$group[1], nrow(x), sprintf("%.17g", weighted.mean(x$score[s], x$w[s])), sprintf("%.17g", p), "\n")
}`
	out, err := exec.Command(rscript, "-e", script, in).Output()
	if err != nil {
		t.Fatalf("Rscript: %v", err)
	}
	rows := map[[2]string]ReferenceRow{}
	for _, r := range a.Reference {
		if r.Model == "m1" {
			rows[[2]string{r.ItemID, r.Group}] = r
		}
	}
	compared := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) != 7 {
			t.Fatalf("R printed %q", line)
		}
		r, ok := rows[[2]string{f[0], f[1]}]
		if !ok || r.Human == nil || r.HumanMean == nil {
			t.Fatalf("%s %s: no human figures in reference.csv (%+v)", f[0], f[1], r)
		}
		if strconv.Itoa(r.Humans) != f[2] {
			t.Errorf("%s %s: n_humans %d, R counts %s people", f[0], f[1], r.Humans, f[2])
		}
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if m := num(f[3]); math.Abs(*r.HumanMean-m) > 1e-12 {
			t.Errorf("%s %s: human_mean %.17g, R %.17g", f[0], f[1], *r.HumanMean, m)
		}
		for k := range 3 {
			if p := num(f[4+k]); math.Abs(r.Human[k]-p) > 1e-12 {
				t.Errorf("%s %s option %d: human_p %.17g, R %.17g", f[0], f[1], k, r.Human[k], p)
			}
		}
		compared++
	}
	if compared != 2*3 {
		t.Errorf("%d item × group lines compared, want 2 items × 3 groups", compared)
	}
	// The weights matter: the unweighted share of q1's first option differs.
	q1 := rows[[2]string{"q1", "all"}]
	s.Reference.Respondents.Weights, s.Reference.Weight = nil, ""
	u, err := Analyze(context.Background(), sliceSource{recs: referenceRecords()}, s, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if close9(u.Reference[0].Human[0], q1.Human[0]) || u.Reference[0].Humans != q1.Humans {
		t.Errorf("unweighted q1: %v (%d people), weighted %v (%d)", u.Reference[0].Human, u.Reference[0].Humans, q1.Human, q1.Humans)
	}
}

// TestReferenceIntervalsArePure: the bootstrap intervals, split-half baselines and perfect-model floors of
// reference.csv and reference_scales.csv are a function of the spec's seed alone: two exports, one on a single
// thread and one on four, are equal byte for byte; another seed moves them; samples: 0 leaves their columns
// empty.
func TestReferenceIntervalsArePure(t *testing.T) {
	s := weightedSpec(t)
	export := func(samples int, seed int64, procs int) map[string][]byte {
		t.Helper()
		s.Analysis.Bootstrap = experiment.BootstrapSettings{Samples: &samples, Seed: &seed}
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		dir := t.TempDir()
		if _, err := Export(context.Background(), sliceSource{recs: referenceRecords()}, s, "r", dir, 0); err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, f := range []string{ReferenceFile, ReferenceScalesFile} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			out[f] = b
		}
		return out
	}
	one, four := export(200, 5, 1), export(200, 5, 4)
	for f := range one {
		if !bytes.Equal(one[f], four[f]) {
			t.Errorf("%s differs between one thread and four", f)
		}
	}
	if other := export(200, 6, 2); bytes.Equal(other[ReferenceFile], one[ReferenceFile]) || bytes.Equal(other[ReferenceScalesFile], one[ReferenceScalesFile]) {
		t.Error("seed 6 gives the intervals of seed 5")
	}
	records := func(b []byte) (map[string]int, [][]string) {
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		return col, recs[1:]
	}
	col, rows := records(one[ReferenceFile])
	// m1, q1, all: both sides have distributions, so every interval is there (a percentile interval need not
	// hold the estimate, so only lo ≤ hi is asked).
	r := rows[0]
	if r[col["model"]] != "m1" || r[col["item_id"]] != "q1" || r[col["group"]] != "all" {
		t.Fatalf("first line %v", r)
	}
	for _, c := range []string{"w1", "alignment", "jsd", "simbench", "model_mean", "human_mean"} {
		lo, err1 := strconv.ParseFloat(r[col[c+"_lo"]], 64)
		hi, err2 := strconv.ParseFloat(r[col[c+"_hi"]], 64)
		if err1 != nil || err2 != nil || lo > hi {
			t.Errorf("q1 all: %s interval [%q, %q]", c, r[col[c+"_lo"]], r[col[c+"_hi"]])
		}
	}
	for _, c := range []string{"split_half_w1", "split_half_alignment", "perfect_w1", "perfect_w1_lo", "perfect_jsd_hi"} {
		if r[col[c]] == "" {
			t.Errorf("q1 all: no %s: %v", c, r)
		}
	}
	scol, srows := records(one[ReferenceScalesFile])
	found := false
	for _, r := range srows {
		if r[scol["scale"]] == "E" && r[scol["group"]] == "all" && r[scol["model"]] == "m1" {
			found = true
			if r[scol["human_alpha_lo"]] == "" && r[scol["human_alpha"]] != "" {
				t.Errorf("E all: a human alpha without an interval: %v", r)
			}
		}
	}
	if !found {
		t.Error("no line m1 E all in reference_scales.csv")
	}
	col, rows = records(export(0, 5, 2)[ReferenceFile])
	for _, c := range []string{"w1_lo", "w1_hi", "human_mean_lo", "split_half_w1", "split_half_alignment", "perfect_w1",
		"perfect_alignment_hi", "perfect_tvd_lo", "perfect_simbench", "perfect_jsd"} {
		if v := rows[0][col[c]]; v != "" {
			t.Errorf("samples 0: %s is %q, want empty", c, v)
		}
	}
	if rows[0][col["w1"]] == "" {
		t.Error("samples 0: the estimates go too")
	}
}

// TestReferenceHeadCounts: every line of reference_scales.csv that averages humans says how many stand behind
// it. From respondents: those of the group who answered at least one of the line's items (a respondent who
// answered none is not counted); from a file of counts, which does not link its items to people: the largest
// head count of one of the line's items.
func TestReferenceHeadCounts(t *testing.T) {
	line := func(a *Analysis, scale, group string) ReferenceScale {
		t.Helper()
		for _, r := range slices.Concat(a.ReferenceScales, a.ReferenceOverall) {
			if r.Model == "m1" && r.Scale == scale && r.Group == group {
				return r
			}
		}
		t.Fatalf("no reference_scales.csv line m1 %s %s", scale, group)
		return ReferenceScale{}
	}

	counts := referenceSpec(t)
	counts.Reference.Counts[2].Counts = []int{1, 1, 3} // q3: 5 people, q1 4
	a, err := Analyze(context.Background(), sliceSource{recs: referenceRecords()}, counts, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		scale, group string
		want         int
	}{
		{ScaleOverall, "all", 5}, {ScaleOverall, "sex=f", 2},
		{"A", "all", 5},
		{"E", "all", 4}, // the spec's own figure for the scale
	} {
		if got := line(a, c.scale, c.group).Humans; got != c.want {
			t.Errorf("counts, %s %s: n_humans %d, want %d", c.scale, c.group, got, c.want)
		}
	}

	answers := weightedSpec(t)
	rs := answers.Reference.Respondents
	rs.Answers[0] = []int{-1, -1} // answered nothing
	rs.Answers[1] = []int{2, -1}  // answered q1 only
	a, err = Analyze(context.Background(), sliceSource{recs: referenceRecords()}, answers, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range answers.Reference.GroupLabels() {
		want := 0
		for i := range rs.Len() {
			if rs.InGroup(answers.Reference.Groups, i, g) && (rs.Answers[i][0] >= 0 || rs.Answers[i][1] >= 0) {
				want++
			}
		}
		if want == 0 {
			t.Fatalf("group %s has no respondent: the test checks nothing there", g)
		}
		if got := line(a, ScaleOverall, g).Humans; got != want {
			t.Errorf("answers, all items, %s: n_humans %d, want %d", g, got, want)
		}
	}
}
