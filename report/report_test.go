package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
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
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// The fixed run: the quickstart's recorded answers (see psychometrics/testdata/make_reference.R) for model
// "sim", and a second model "noisy" whose answers are shuffled so its scales are unreliable, with unparsed,
// failed and retried cells.
const (
	quickstartSpec  = "../examples/quickstart/experiment.yaml"
	quickstartCells = "../psychometrics/testdata/quickstart_cells.csv"
)

type sliceSource []store.Record

func (s sliceSource) Scan(_ context.Context, _ string, fn func(store.Record) error) error {
	for _, r := range s {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func fixedRun(t *testing.T) (*experiment.Spec, sliceSource) {
	t.Helper()
	spec, err := specfile.Load(quickstartSpec)
	if err != nil {
		t.Fatal(err)
	}
	noisy := spec.Models[0]
	noisy.ID, noisy.Name = "noisy", "noisy-model"
	spec.Models = append(spec.Models, noisy)

	f, err := os.Open(quickstartCells)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(r []string, name string) float64 {
		v, err := strconv.ParseFloat(r[col[name]], 64)
		if err != nil {
			t.Fatalf("%s %q: %v", name, r[col[name]], err)
		}
		return v
	}
	per := spec.NumCells() / 2
	recs := make(sliceSource, 2*per)
	for _, r := range rows[1:] {
		i := int(num(r, "index"))
		recs[i] = store.Record{Index: i, Status: r[col["status"]], OptionID: r[col["option_id"]],
			Raw: r[col["option_id"]], PromptTokens: int(num(r, "prompt_tokens")), CompletionTokens: int(num(r, "completion_tokens")),
			CostUSD: usage.Dollars(num(r, "cost_usd")), LatencyMS: num(r, "latency_ms"), Attempts: int(num(r, "attempts"))}
		n := recs[i]
		n.Index = per + i
		switch {
		case i%97 == 0:
			n.Status, n.OptionID, n.Raw, n.ErrorClass, n.ErrorMessage = store.StatusFailed, "", "", "ServerError", "503 service unavailable"
			n.Attempts = 3
		case i%11 == 0:
			n.Status, n.OptionID, n.Raw = store.StatusUnparsed, "", "Somewhere between 2 and 4."
		case n.OptionID != "":
			n.OptionID = strconv.Itoa((i*7+3+i/(per/2))%5 + 1) // a different answer on each seed
			n.Raw = n.OptionID
		}
		if i%29 == 0 {
			n.Attempts = 2
		}
		n.LatencyMS *= 2.5
		recs[per+i] = n
	}
	return spec, recs
}

// keyed finds every element with a data-key attribute and returns its text, unescaped.
var keyedRE = regexp.MustCompile(`data-key="([^"]+)"[^>]*>([^<]*)<`)

func keyedValues(t *testing.T, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range keyedRE.FindAllStringSubmatch(page, -1) {
		out[html.UnescapeString(m[1])] = html.UnescapeString(m[2])
	}
	if len(out) == 0 {
		t.Fatal("no data-key values in the report")
	}
	return out
}

// render exports the fixed run to a directory and writes its report there.
func render(t *testing.T) (dir, page string) {
	t.Helper()
	spec, src := fixedRun(t)
	dir = t.TempDir()
	ctx := context.Background()
	if _, err := results.Export(ctx, src, spec, "fixed-run", dir, 0); err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(ctx, src, spec, "fixed-run", 0)
	if err != nil {
		t.Fatal(err)
	}
	path, err := WriteFile(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(b)
}

func readCSV(t *testing.T, path string) (map[string]int, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	return col, recs[1:]
}

// statRE is a statistic as the report shows it: three decimals.
var statRE = regexp.MustCompile(`^-?\d+\.\d{3}$`)

// sameStat reports whether the report's 3-decimal text shows the CSV's exact value: within half a unit of
// the third decimal, plus 1e-9 for the decimal text of a binary number.
func sameStat(shown, csvValue string) bool {
	switch csvValue {
	case "":
		return shown == "—"
	case "-Inf":
		return shown == "−∞"
	case "+Inf", "Inf":
		return shown == "∞"
	}
	v, err := strconv.ParseFloat(csvValue, 64)
	if err != nil || !statRE.MatchString(shown) {
		return false
	}
	s, err := strconv.ParseFloat(shown, 64)
	return err == nil && math.Abs(s-v) <= 0.0005+1e-9
}

// TestReportNumbersMatchCSVs checks every reliability, item and agreement number of the report against the
// CSV files the export wrote for the same run, and the headline numbers against summary.json.
func TestReportNumbersMatchCSVs(t *testing.T) {
	dir, page := render(t)
	kv := keyedValues(t, page)
	pc := &pageCheck{t: t, kv: kv, source: "the CSV has"}
	expect, equal := pc.expect, sameText

	col, rows := readCSV(t, filepath.Join(dir, results.ReliabilityFile))
	low := 0
	for _, r := range rows {
		key := "rel/" + r[col["model"]] + "/" + r[col["seed"]] + "/" + r[col["scale"]]
		for _, stat := range []string{"alpha", "std_alpha", "average_r", "omega_total"} {
			expect(key+"/"+stat, r[col[stat]], sameStat)
			if v, err := strconv.ParseFloat(r[col[stat]], 64); err == nil && v < LowReliability && stat != "average_r" {
				low++
			}
		}
		expect(key+"/n_personas", r[col["n_personas"]], equal)
		expect(key+"/n_missing", r[col["n_missing"]], equal)
		expect(key+"/n_items_used", r[col["n_items_used"]]+" of "+r[col["n_items"]], equal)
	}
	// Every reliability value below 0.7 is marked, and nothing else is.
	if marked := strings.Count(page, `class="low"`); marked != low || low == 0 {
		t.Errorf("%d values marked low, the CSV has %d below %v (the fixed run must have some)", marked, low, LowReliability)
	}

	col, rows = readCSV(t, filepath.Join(dir, results.ItemsFile))
	for _, r := range rows {
		key := "item/" + r[col["model"]] + "/" + r[col["seed"]] + "/" + r[col["scale"]] + "/" + r[col["item_id"]]
		for _, stat := range []string{"mean", "sd", "item_rest_r", "alpha_if_dropped", "modal_share"} {
			expect(key+"/"+stat, r[col[stat]], sameStat)
		}
		expect(key+"/n", r[col["n"]], equal)
	}
	col, rows = readCSV(t, filepath.Join(dir, results.AgreementFile))
	for _, r := range rows {
		key := "agr/" + r[col["model"]] + "/" + r[col["persona_id"]] + "/" + r[col["scale"]]
		for _, stat := range []string{"sd", "range", "modal_share"} {
			expect(key+"/"+stat, r[col[stat]], sameStat)
		}
	}

	b, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum wire.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	expect("cells", thousands(sum.Cells), equal)
	expect("ok", thousands(sum.OK), equal)
	expect("unparsed", thousands(sum.Unparsed), equal)
	expect("failed", thousands(sum.Failed), equal)
	expect("prompt_tokens", thousands(sum.PromptTokens), equal)
	expect("completion_tokens", thousands(sum.CompletionTokens), equal)
	expect("cost_usd", "$"+sum.CostUSD.String(), equal)
	for _, m := range sum.Models {
		expect("parse/"+m.Model+"/ok", thousands(m.OK), equal)
		expect("parse/"+m.Model+"/unparsed", thousands(m.Unparsed), equal)
		expect("parse/"+m.Model+"/failed", thousands(m.Failed), equal)
		expect("parse/"+m.Model+"/rate", strconv.FormatFloat(100*float64(m.OK)/float64(m.Cells), 'f', 1, 64)+"%", equal)
	}
	if sum.Unparsed == 0 || sum.Failed == 0 {
		t.Errorf("the fixed run must have unparsed and failed cells: %+v", sum)
	}
	if pc.checked < 1000 {
		t.Errorf("only %d numbers checked", pc.checked)
	}

	// The histograms count every cell that was called, once.
	col, rows = readCSV(t, filepath.Join(dir, results.CSVFile))
	called, twice := 0, 0
	for _, r := range rows {
		if n, _ := strconv.Atoi(r[col["attempts"]]); n > 0 {
			called++
			if n == 2 {
				twice++
			}
		}
	}
	for _, hist := range []string{"latency", "attempts"} {
		re := regexp.MustCompile(`data-key="` + hist + `/(\d+)" data-count="(\d+)"`)
		total, bars := 0, re.FindAllStringSubmatch(page, -1)
		for _, m := range bars {
			n, _ := strconv.Atoi(m[2])
			total += n
		}
		if total != called || len(bars) < 2 {
			t.Errorf("%s histogram: %d bars counting %d cells, want %d cells called", hist, len(bars), total, called)
		}
	}
	if !strings.Contains(page, `data-key="attempts/1" data-count="`+strconv.Itoa(twice)+`"`) || twice == 0 {
		t.Errorf("attempts histogram: the 2-attempt bar does not count the %d cells called twice", twice)
	}
}

// TestReportIsSelfContained: the page references nothing outside itself and runs no script.
func TestReportIsSelfContained(t *testing.T) {
	_, page := render(t)
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "url(", "http://", "https://"} {
		if i := strings.Index(strings.ToLower(page), bad); i >= 0 {
			t.Errorf("report contains %q: %s", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	if strings.Contains(page, "ZgotmplZ") {
		t.Errorf("html/template rejected a value (ZgotmplZ in the output)")
	}
	for _, want := range []string{"IPIP-50 quickstart", "Reliability per model", "Seed agreement", "Call latency",
		"Attempts per cell", "<svg"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// One heatmap square per model × item × persona.
	if n := strings.Count(page, `width="14" height="14"`); n != 2*50*10 {
		t.Errorf("%d heatmap squares, want %d", n, 2*50*10)
	}
}

// TestReportEscapes: text from the spec lands in the page as text, never as markup.
func TestReportEscapes(t *testing.T) {
	spec, src := fixedRun(t)
	spec.Name = `<script>alert("x")</script>`
	spec.Personas[0].ID = `a"b<c>`
	a, err := Analyze(context.Background(), src, spec, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, a); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") || strings.Contains(b.String(), `a"b<c>`) {
		t.Error("spec text was written unescaped")
	}
}

func TestNiceStepAndRamp(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0.3, 1}, {3, 5}, {12, 20}, {47, 50}, {51, 100}, {100, 100}} {
		if got := niceStep(c.in); got != c.want {
			t.Errorf("niceStep(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if got := ramp(0, viridis); got != "#440154" {
		t.Errorf("ramp(0) = %s", got)
	}
	if got := ramp(1, viridis); got != "#fde725" {
		t.Errorf("ramp(1) = %s", got)
	}
	if got := ramp(math.NaN(), orange); got != "#ffffff" {
		t.Errorf("ramp(NaN) = %s, want the low end", got)
	}
}

// TestReportWithoutScales: a questionnaire without scales still gets a report, with answers and calls but no
// scale statistics.
func TestReportWithoutScales(t *testing.T) {
	spec, src := fixedRun(t)
	spec.Questionnaire.Scales = nil
	for i := range spec.Questionnaire.Items {
		spec.Questionnaire.Items[i].Scale = ""
	}
	a, err := Analyze(context.Background(), src, spec, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Reliability) != 0 || len(a.Agreement) != 0 {
		t.Fatalf("%d reliability and %d agreement rows without scales", len(a.Reliability), len(a.Agreement))
	}
	var b bytes.Buffer
	if err := Write(&b, a); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, "The questionnaire has no scales.") || !strings.Contains(page, "(no scale)") {
		t.Error("report without scales does not say so")
	}
	if n := strings.Count(page, `width="14" height="14"`); n != 2*50*10 {
		t.Errorf("%d heatmap squares, want %d", n, 2*50*10)
	}
}

// TestReportBatchSaving: a run with a model in batch mode shows, beside its cost, what that model's cells cost
// at the batch price and what they saved against synchronous calls, as summary.json has them; a model called
// synchronously gets no such row, and a run without a batch model shows none of it.
func TestReportBatchSaving(t *testing.T) {
	spec, src := fixedRun(t)
	spec.Models[1].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch}
	for i := spec.NumCells() / 2; i < len(src); i++ {
		src[i].CostUSD /= 2 // the noisy model's cells, at the batch price: half
	}
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := results.Export(ctx, src, spec, "batch-run", dir, 0); err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(ctx, src, spec, "batch-run", 0)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, a); err != nil {
		t.Fatal(err)
	}
	kv := keyedValues(t, b.String())
	sb, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum wire.Summary
	if err := json.Unmarshal(sb, &sum); err != nil {
		t.Fatal(err)
	}
	noisy := sum.Models[1]
	if noisy.Model != "noisy" || noisy.BatchSavedUSD <= 0 || sum.BatchSavedUSD != noisy.BatchSavedUSD {
		t.Fatalf("summary.json: %+v; want the noisy model's batch saving, and only its", sum)
	}
	money := func(v usage.USD) string { return "$" + v.String() }
	for key, want := range map[string]string{
		"cost_usd":              money(sum.CostUSD),
		"batch_saved_usd":       money(sum.BatchSavedUSD),
		"batch/noisy/cost_usd":  money(noisy.CostUSD),
		"batch/noisy/sync_usd":  money(noisy.CostUSD + noisy.BatchSavedUSD),
		"batch/noisy/saved_usd": money(noisy.BatchSavedUSD),
		"batch/noisy/saved_pct": "50.0%",
		"batch/noisy/price":     "$0.075 / $0.3", // the quickstart's $0.15 / $0.60 at the batch discount
	} {
		if got, ok := kv[key]; !ok || got != want {
			t.Errorf("%s: report shows %q (present %v), want %q", key, got, ok, want)
		}
	}
	for key := range kv {
		if strings.HasPrefix(key, "batch/sim/") {
			t.Errorf("the synchronous model has a batch row (%s)", key)
		}
	}

	_, page := render(t)
	if strings.Contains(page, "batch_saved_usd") || strings.Contains(page, "Batch pricing") {
		t.Error("a run without batch models shows a batch saving")
	}
}

// TestReportServedModels: the models table lists each model's served models and fingerprints with their
// counts, and the report warns for a model answered by two served models and for seeds at temperature 0, as
// summary.json does.
func TestReportServedModels(t *testing.T) {
	spec, src := fixedRun(t)
	per := spec.NumCells() / 2
	for i := range src {
		switch {
		case i >= per:
			src[i].ServedModel, src[i].SystemFingerprint = "noisy-2026-01-01", "fp_n"
		case i < 10:
			src[i].ServedModel, src[i].SystemFingerprint = "m-2026-02-01", "fp_b"
		default:
			src[i].ServedModel, src[i].SystemFingerprint = "m-2026-01-01", "fp_a"
		}
	}
	zero := 0.0
	spec.Models[1].Params.Temperature = &zero
	a, err := Analyze(context.Background(), src, spec, "served-run", 0)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, a); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	kv := keyedValues(t, page)
	first := spec.Models[0].ID
	want := fmt.Sprintf("m-2026-01-01 · fp_a (%s), m-2026-02-01 · fp_b (10)", thousands(per-10))
	if got := kv["served/"+first]; got != want {
		t.Errorf("served/%s = %q, want %q", first, got, want)
	}
	if got := kv["served/noisy"]; got != fmt.Sprintf("noisy-2026-01-01 · fp_n (%s)", thousands(per)) {
		t.Errorf("served/noisy = %q", got)
	}
	for _, w := range []string{"model " + first + " was answered by 2 served models (m-2026-01-01, m-2026-02-01)",
		"model noisy has " + strconv.Itoa(len(spec.Seeds)) + " seeds at temperature 0"} {
		if !strings.Contains(page, html.EscapeString(w)) {
			t.Errorf("the report does not warn %q", w)
		}
	}
}

// pageCheck holds a page's keyed figures (keyedValues) to wanted values and counts those it checked.
type pageCheck struct {
	t  *testing.T
	kv map[string]string
	// source names the wanted value in a failure: "want", "the CSV has".
	source  string
	checked int
}

// expect checks that the page shows key and that ok(shown, want) holds.
func (c *pageCheck) expect(key, want string, ok func(shown, want string) bool) {
	c.t.Helper()
	shown, present := c.kv[key]
	if !present {
		c.t.Errorf("report has no %s", key)
		return
	}
	c.checked++
	if !ok(shown, want) {
		c.t.Errorf("%s: report shows %q, %s %q", key, shown, c.source, want)
	}
}

// sameText is expect's comparison of figures shown exactly as wanted.
func sameText(shown, want string) bool { return shown == want }

// TestReportWarnsLowCoverage: a model whose logprobs put on average less than half of the label token's mass
// on the labels shown is warned in the report, as in summary.json; one above it is not.
func TestReportWarnsLowCoverage(t *testing.T) {
	spec, src := fixedRun(t)
	spec.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs}
	per := spec.NumCells() / 2
	for i := range src {
		if src[i].Status == store.StatusFailed {
			continue
		}
		n := len(spec.OptionsFor(spec.Cell(i).Item).Options)
		src[i].Probs, src[i].Coverage = make([]float64, n), 0.9
		src[i].Probs[0] = 1
		if i >= per {
			src[i].Coverage = 0.2 // the noisy model's answers start with something else
		}
	}
	a, err := Analyze(context.Background(), src, spec, "coverage-run", 0)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, a); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, html.EscapeString("model noisy put on average 0.20 of the label token's probability on the labels the prompt showed")) {
		t.Errorf("the report does not warn about noisy's coverage; warnings %q", a.Summary.Warnings)
	}
	if strings.Contains(page, "model "+spec.Models[0].ID+" put on average") {
		t.Errorf("the report warns about %s, whose coverage is 0.9", spec.Models[0].ID)
	}
}
