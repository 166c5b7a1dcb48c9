package report

import (
	"bytes"
	"context"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// The small run: model m1 answers with option probabilities, model m2 writes answers only; two items of scale E
// (q2 reverse-keyed), three personas, two seeds, and six humans answered the same items.
const distSpecYAML = `name: distributions
seeds: [1, 2]
models:
  - {id: m1, name: sim-model, provider: sim, answer: {mode: logprobs}}
  - {id: m2, name: sim-model, provider: sim}
prompt:
  type: chat
  messages:
    - {role: user, content: "{question} {answer_options}"}
personas:
  - {id: p1, template: "One."}
  - {id: p2, template: "Two."}
  - {id: p3, template: "Three."}
questionnaire:
  name: two items
  options:
    - {id: "1", text: "no", weight: 1}
    - {id: "2", text: "maybe", weight: 2}
    - {id: "3", text: "yes", weight: 3}
  scales: [{id: E, name: Extraversion}]
  items:
    - {id: q1, text: "I talk a lot.", scale: E}
    - {id: q2, text: "I keep quiet.", scale: E, reversed: true}
reference: {file: human.csv}
`

// The humans: q1 answered 1, 2, 2, 3, 3, 3 (1/6, 2/6, 3/6); q2 two of each option.
const distHumanCSV = "q1,q2\n1,3\n2,2\n3,1\n3,1\n3,2\n2,3\n"

// distRecords are the small run's records. The cell index is ((model*2+seed)*2+item)*3+persona: m1's cells are
// 0–11, m2's 12–23.
func distRecords() sliceSource {
	okp := func(i int, opt string, cov float64, p ...float64) store.Record {
		return store.Record{Index: i, Status: store.StatusOK, OptionID: opt, Raw: opt, FinishReason: "stop", Probs: p,
			Coverage: cov, Attempts: 1}
	}
	recs := sliceSource{
		okp(0, "1", 0.9, 0.7, 0.2, 0.1),    // seed 1, q1, p1
		okp(1, "2", 0.8, 0.2, 0.5, 0.3),    // p2
		okp(2, "3", 1.0, 0.1, 0.3, 0.6),    // p3, cut at max_tokens after naming its option
		okp(3, "3", 0.95, 0.2, 0.2, 0.6),   // seed 1, q2, p1
		okp(4, "1", 0.7, 0.3, 0.4, 0.3),    // p2: the most likely option is 2, not the written 1
		okp(5, "2", 0.85, 0.1, 0.8, 0.1),   // p3
		okp(6, "1", 0.9, 0.6, 0.3, 0.1),    // seed 2, q1, p1
		okp(7, "3", 0.75, 0.45, 0.15, 0.4), // p2: most likely 1, written 3
		// p3: withheld by the content filter, no probabilities
		{Index: 8, Status: store.StatusUnparsed, FinishReason: "content_filter", ErrorClass: "ContentFiltered", Attempts: 1},
		okp(9, "3", 0.99, 0.1, 0.2, 0.7),   // seed 2, q2, p1
		okp(10, "2", 0.6, 0.25, 0.5, 0.25), // p2
		// p3: probabilities but no written answer
		{Index: 11, Status: store.StatusUnparsed, Raw: "hm", FinishReason: "stop", Probs: []float64{0.3, 0.3, 0.4}, Coverage: 0.5, Attempts: 1},
	}
	recs[2].FinishReason = "length"
	for i := 12; i < 24; i++ {
		opt := strconv.Itoa((i*7)%3 + 1)
		recs = append(recs, store.Record{Index: i, Status: store.StatusOK, OptionID: opt, Raw: opt, FinishReason: "stop", Attempts: 1})
	}
	return recs
}

func distSpec(t *testing.T) *experiment.Spec {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"experiment.yaml": distSpecYAML, "human.csv": distHumanCSV} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := specfile.Load(filepath.Join(dir, "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// renderRun exports a run to a directory and writes its report there, returning the directory and the page.
func renderRun(t *testing.T, spec *experiment.Spec, src sliceSource) (dir, page string) {
	t.Helper()
	dir = t.TempDir()
	ctx := context.Background()
	if _, err := results.Export(ctx, src, spec, "dist-run", dir, 0); err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(ctx, src, spec, "dist-run", 0)
	if err != nil {
		t.Fatal(err)
	}
	path, err := WriteFile(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(b)
}

// pmfBars returns the model's (data-p) and the humans' (data-h) probabilities of the bars of key
// (model/group/item).
func pmfBars(t *testing.T, page, key string) (model, human []float64) {
	t.Helper()
	return indexPMF(page).bars(t, key)
}

// pmfIndex maps each key (model/group/item) of a page's distribution bars to their markup.
type pmfIndex map[string]string

// indexPMF reads a page's distribution bars once. html/template escapes a group label's "=" and "+" in the
// attribute: the keys are unescaped.
func indexPMF(page string) pmfIndex {
	out := pmfIndex{}
	for _, c := range regexp.MustCompile(`data-pmf="([^"]*)"[^>]*>(.*?)</div></td>`).FindAllStringSubmatch(page, -1) {
		out[html.UnescapeString(c[1])] = c[2]
	}
	return out
}

func (ix pmfIndex) bars(t *testing.T, key string) (model, human []float64) {
	t.Helper()
	markup, ok := ix[key]
	if !ok {
		t.Fatalf("no distribution bars for %s", key)
	}
	num := func(attr string) []float64 {
		var out []float64
		for _, v := range regexp.MustCompile(attr+`="([^"]*)"`).FindAllStringSubmatch(markup, -1) {
			f, err := strconv.ParseFloat(v[1], 64)
			if err != nil {
				t.Fatalf("%s %s=%q: %v", key, attr, v[1], err)
			}
			out = append(out, f)
		}
		return out
	}
	return num("data-p"), num("data-h")
}

func near(got []float64, want ...float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 0.0000005+1e-12 {
			return false
		}
	}
	return true
}

// TestReportDistributions: a run with option probabilities and a human reference shows, per model and item, the
// mean distribution beside the humans' with the numbers of reference.csv, the cells' mean coverage, entropy and
// agreement as results.csv has them, the per-model coverage, agreement and cut and filtered counts next to the
// parse rate, and α and ω beside the humans' as reference_scales.csv has them.
func TestReportDistributions(t *testing.T) {
	dir, page := renderRun(t, distSpec(t), distRecords())
	kv := keyedValues(t, page)
	pc := &pageCheck{t: t, kv: kv, source: "want"}
	expect, equal := pc.expect, sameText

	// Worked out by hand from distRecords: m1 has 11 cells with probabilities, coverage summing to 8.94; of the
	// 10 with a written answer too, 8 have it as their most likely option. m2 has no probabilities.
	for key, want := range map[string]string{
		"parse/m1/length": "1", "parse/m1/content_filtered": "1", "parse/m1/coverage": "0.813",
		"parse/m1/top_agrees": "80.0%", "parse/m2/length": "0", "parse/m2/content_filtered": "0",
		"parse/m2/coverage": "—", "parse/m2/top_agrees": "—", "dist/m1/coverage": "0.813",
		"dist/m1/all/q1/n_cells": "5", "dist/m1/all/q1/coverage": "0.870", "dist/m1/all/q1/top_agrees": "80.0%", "dist/m1/all/q2/top_agrees": "80.0%",
		"dist/m1/all/q1/n_humans": "6", "dist/m2/all/q1/n_cells": "6", "dist/m2/all/q1/coverage": "—",
		"group/m1/all/n_personas": "3", "group/m1/all/n_humans": "6",
	} {
		expect(key, want, equal)
	}
	// m1's q1 over its five cells with a distribution, and the humans'.
	if m, h := pmfBars(t, page, "m1/all/q1"); !near(m, 0.41, 0.29, 0.30) || !near(h, 1.0/6, 2.0/6, 3.0/6) {
		t.Errorf("m1/q1 bars: model %v humans %v; want 0.41 0.29 0.30 and 1/6 2/6 3/6", m, h)
	}

	// Every item of every model against reference.csv's "all" lines.
	col, rows := readCSV(t, filepath.Join(dir, results.ReferenceFile))
	lines := 0
	w1 := map[string][]float64{}
	for _, r := range rows {
		if r[col["group"]] != experiment.GroupAll {
			continue
		}
		lines++
		if v, err := strconv.ParseFloat(r[col["w1"]], 64); err == nil {
			w1[r[col["model"]]] = append(w1[r[col["model"]]], v)
		}
		key := "dist/" + r[col["model"]] + "/all/" + r[col["item_id"]]
		for stat, column := range map[string]string{"w1": "w1", "jsd": "jsd", "model_entropy": "model_entropy", "human_entropy": "human_entropy"} {
			expect(key+"/"+stat, r[col[column]], sameStat)
		}
		expect(key+"/n_humans", r[col["n_humans"]], equal)
		m, h := pmfBars(t, page, strings.TrimPrefix(key, "dist/"))
		if want := parseFloats(t, r[col["model_p"]]); !near(m, want...) {
			t.Errorf("%s model bars %v, reference.csv %v", key, m, want)
		}
		if want := parseFloats(t, r[col["human_p"]]); !near(h, want...) {
			t.Errorf("%s human bars %v, reference.csv %v", key, h, want)
		}
	}
	for model, vs := range w1 {
		expect("dist/"+model+"/mean_w1", strconv.FormatFloat((vs[0]+vs[1])/2, 'f', 6, 64), sameStat)
	}
	if lines != 4 || len(w1["m1"]) != 2 || len(w1["m2"]) != 2 {
		t.Errorf("%d lines of group all in reference.csv, want 2 models × 2 items", lines)
	}

	// The cells' mean coverage, entropy and agreement per model and item against results.csv's columns.
	col, rows = readCSV(t, filepath.Join(dir, results.CSVFile))
	type acc struct{ cov, h, agree, nCov, nH, nAgree float64 }
	sums := map[string]*acc{}
	for _, r := range rows {
		key := r[col["model"]] + "/" + r[col["item_id"]]
		if sums[key] == nil {
			sums[key] = &acc{}
		}
		s := sums[key]
		if v := r[col["coverage"]]; v != "" {
			f, _ := strconv.ParseFloat(v, 64)
			s.cov, s.nCov = s.cov+f, s.nCov+1
		}
		if v := r[col["entropy"]]; v != "" {
			f, _ := strconv.ParseFloat(v, 64)
			s.h, s.nH = s.h+f, s.nH+1
		}
		if v := r[col["top_agrees"]]; v != "" {
			s.nAgree++
			if v == "true" {
				s.agree++
			}
		}
	}
	mean := func(sum, n float64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatFloat(sum/n, 'f', 6, 64)
	}
	for key, s := range sums {
		key = strings.Replace(key, "/", "/all/", 1)
		expect("dist/"+key+"/coverage", mean(s.cov, s.nCov), sameStat)
		expect("dist/"+key+"/cell_entropy", mean(s.h, s.nH), sameStat)
		want := "—"
		if s.nAgree > 0 {
			want = strconv.FormatFloat(100*s.agree/s.nAgree, 'f', 1, 64) + "%"
		}
		expect("dist/"+key+"/top_agrees", want, equal)
	}

	col, rows = readCSV(t, filepath.Join(dir, results.ReferenceScalesFile))
	scales := 0
	for _, r := range rows {
		// The lines over every item (scale "all") carry no α or ω: the page's scale table has scales only.
		if r[col["group"]] != experiment.GroupAll || r[col["scale"]] == results.ScaleOverall {
			continue
		}
		scales++
		key := "refscale/" + r[col["model"]] + "/all/" + r[col["scale"]]
		for stat, column := range map[string]string{"model_alpha": "model_alpha", "human_alpha": "human_alpha",
			"model_omega": "model_omega_total", "human_omega": "human_omega_total"} {
			expect(key+"/"+stat, r[col[column]], sameStat)
		}
		expect(key+"/n_personas", r[col["n_personas"]], equal)
		expect(key+"/n_humans", r[col["n_humans"]], equal)
	}
	if scales != 2 || kv["refscale/m1/all/E/human_alpha"] == "—" {
		t.Errorf("%d scale lines of group all, human α %q: want 2 lines with the humans' α", scales, kv["refscale/m1/all/E/human_alpha"])
	}
	if pc.checked < 60 {
		t.Errorf("only %d numbers checked", pc.checked)
	}
	for _, want := range []string{`id="distributions"`, `href="#distributions"`, "Scales: α and ω of the model's personas and of the humans, and the items' figures per scale (everyone)", "<details class=\"dist\" open>"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Count(page, `<details class="dist"`) != 2 || strings.Count(page, `<details class="dist" open>`) != 1 {
		t.Error("want one folding section per model, the first one unfolded")
	}
}

func parseFloats(t *testing.T, s string) []float64 {
	t.Helper()
	var out []float64
	for _, f := range strings.Split(s, ";") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}

// TestReportDistributionsPartly: with a reference but no probabilities the items are compared with the humans
// over the written answers, without coverage; with probabilities but no reference the distributions show
// without human columns or scale comparison.
func TestReportDistributionsPartly(t *testing.T) {
	spec := distSpec(t)
	src := distRecords()
	for i := range src {
		src[i].Probs, src[i].Coverage = nil, 0
	}
	var b bytes.Buffer
	r, err := Analyze(context.Background(), src, spec, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	kv := keyedValues(t, b.String())
	for _, key := range []string{"dist/m1/all/q1/w1", "dist/m1/all/q1/jsd", "refscale/m1/all/E/model_alpha"} {
		if v, ok := kv[key]; !ok || v == "—" {
			t.Errorf("reference without probabilities: %s is %q (present %v)", key, v, ok)
		}
	}
	if v := kv["dist/m1/all/q1/coverage"]; v != "—" {
		t.Errorf("coverage without probabilities: %q", v)
	}
	if _, ok := kv["parse/m1/coverage"]; ok {
		t.Error("the parse table shows coverage for a run without probabilities")
	}
	if !strings.Contains(b.String(), "from written answers") {
		t.Error("the model's distributions do not say they come from the written answers")
	}

	spec = distSpec(t)
	spec.Reference = nil
	r, err = Analyze(context.Background(), distRecords(), spec, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	kv = keyedValues(t, page)
	if kv["dist/m1/all/q1/coverage"] != "0.870" || kv["parse/m1/top_agrees"] != "80.0%" {
		t.Errorf("probabilities without a reference: coverage %q, top = answer %q", kv["dist/m1/all/q1/coverage"], kv["parse/m1/top_agrees"])
	}
	if m, h := pmfBars(t, page, "m1/all/q1"); !near(m, 0.41, 0.29, 0.30) || h != nil {
		t.Errorf("m1/q1 bars without a reference: model %v humans %v", m, h)
	}
	for key := range kv {
		if strings.HasSuffix(key, "/w1") || strings.HasPrefix(key, "refscale/") || strings.HasSuffix(key, "/human_entropy") {
			t.Errorf("a run without a reference shows %s", key)
		}
	}
	if strings.Contains(page, "and humans") {
		t.Error("a run without a reference mentions humans in its headings")
	}
}

// TestReportWithoutDistributions: the quickstart's run, with neither probabilities nor a reference nor a cut or
// filtered answer, has none of it.
func TestReportWithoutDistributions(t *testing.T) {
	_, page := render(t)
	for key := range keyedValues(t, page) {
		for _, bad := range []string{"dist/", "refscale/"} {
			if strings.HasPrefix(key, bad) {
				t.Errorf("the quickstart's report shows %s", key)
			}
		}
		for _, bad := range []string{"/length", "/content_filtered", "/coverage", "/top_agrees"} {
			if strings.HasSuffix(key, bad) {
				t.Errorf("the quickstart's report shows %s", key)
			}
		}
	}
	for _, bad := range []string{`id="distributions"`, "#distributions", "top = answer", "class=\"pmf\"", "humans"} {
		if strings.Contains(page, bad) {
			t.Errorf("the quickstart's report contains %q", bad)
		}
	}
}
