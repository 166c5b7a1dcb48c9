package results

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

var _ Source = (*store.SQLite)(nil)

// testSpec is 2 models × 2 seeds × 3 items × 2 personas = 24 cells. Item q2 is reversed; item q3 has its own
// options, one of them ignored for scale.
func testSpec() *experiment.Spec {
	likert := experiment.OptionSet{Options: []experiment.Option{
		{ID: "1", Text: "Disagree", Weight: 1}, {ID: "2", Text: "Neutral", Weight: 2}, {ID: "3", Text: "Agree, \"strongly\"", Weight: 3},
	}}
	return &experiment.Spec{
		Name:   "test spec",
		Seeds:  []int64{7, 42},
		Models: []experiment.Model{{ID: "m1", Name: "one"}, {ID: "m2", Name: "two"}},
		Personas: []experiment.Persona{
			{ID: "p1"}, {ID: "p2"},
		},
		Questionnaire: experiment.Questionnaire{
			Name:    "q",
			Options: likert,
			Scales:  []experiment.Scale{{ID: "E", Name: "Extraversion"}, {ID: "A", Name: "Agreeableness"}},
			Items: []experiment.Item{
				{ID: "q1", Text: "I am talkative.", Scale: "E"},
				{ID: "q2", Text: "I am reserved,\nquiet.", Scale: "E", Reversed: true},
				{ID: "q3", Text: "I am kind.", Scale: "A", Options: &experiment.OptionSet{Options: []experiment.Option{
					{ID: "y", Text: "Yes", Weight: 5}, {ID: "n", Text: "No", Weight: 0}, {ID: "dk", Text: "Don't know", IgnoredForScale: true},
				}}},
			},
		},
	}
}

// sliceSource is a Source over records held in memory, given back by index.
type sliceSource struct {
	recs []store.Record
	err  error // returned after the records, when set
}

func (s sliceSource) Scan(_ context.Context, _ string, fn func(store.Record) error) error {
	recs := slices.Clone(s.recs)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Index < recs[j].Index })
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return s.err
}

func ok(i int, option string) store.Record {
	return store.Record{Index: i, Status: store.StatusOK, OptionID: option, Raw: "Answer: " + option,
		PromptTokens: 50, CompletionTokens: 3, CostUSD: usage.Dollars(0.0000125), LatencyMS: 12.5, Attempts: 1}
}

func readJSONL(t *testing.T, path string) []Row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var rows []Row
	if err := ReadJSONL(f, func(r Row) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatalf("ReadJSONL: %v", err)
	}
	return rows
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return recs
}

func TestExportOrderMissingCellsAndScores(t *testing.T) {
	spec := testSpec()
	// Cell 0: m1/7/q1/p1, 2: m1/7/q2/p1 (reversed), 4: m1/7/q3/p1, 5: m1/7/q3/p2. Records arrive out of order.
	src := sliceSource{recs: []store.Record{
		ok(5, "dk"), ok(0, "3"), ok(2, "3"), ok(4, "y"),
		{Index: 3, Status: store.StatusUnparsed, Raw: "2 or 3?", Candidates: "2,3", Attempts: 1},
		{Index: 23, Status: store.StatusFailed, ErrorClass: "InvalidRequest", ErrorCode: "context_length_exceeded", ErrorMessage: "context too long", Attempts: 1},
	}}
	dir := t.TempDir()
	if _, err := Export(context.Background(), src, spec, "run-1", dir, time.Second); err != nil {
		t.Fatalf("Export: %v", err)
	}
	rows := readJSONL(t, filepath.Join(dir, JSONLFile))
	if len(rows) != spec.NumCells() {
		t.Fatalf("%d rows, want %d", len(rows), spec.NumCells())
	}
	for i, r := range rows {
		if r.Index != i || r.CellID != spec.CellID(spec.Cell(i)) || r.RunID != "run-1" {
			t.Fatalf("row %d: index %d, cell %q, run %q; want %d, %q, run-1", i, r.Index, r.CellID, r.RunID, i, spec.CellID(spec.Cell(i)))
		}
	}
	score := func(v int) *int { return &v }
	for _, tc := range []struct {
		index               int
		status, option, txt string
		score               *int
		errClass            string
	}{
		{0, "ok", "3", "Agree, \"strongly\"", score(3), ""},
		{1, "failed", "", "", nil, errclass.NotRun},
		{2, "ok", "3", "Agree, \"strongly\"", score(1), ""}, // reversed: 1+3-3
		{3, "unparsed", "", "", nil, ""},
		{4, "ok", "y", "Yes", score(5), ""},
		{5, "ok", "dk", "Don't know", nil, ""}, // ignored for scale
		{23, "failed", "", "", nil, "InvalidRequest"},
	} {
		r := rows[tc.index]
		if r.Status != tc.status || r.OptionID != tc.option || r.OptionText != tc.txt || !reflect.DeepEqual(r.Score, tc.score) || r.ErrorClass != tc.errClass {
			t.Errorf("row %d = status %q option %q %q score %v class %q; want %q %q %q %v %q", tc.index,
				r.Status, r.OptionID, r.OptionText, r.Score, r.ErrorClass, tc.status, tc.option, tc.txt, tc.score, tc.errClass)
		}
	}
	if r := rows[23]; r.ErrorCode != "context_length_exceeded" {
		t.Errorf("row 23 error_code = %q, want the provider's code", r.ErrorCode)
	}
	csvRows := readCSV(t, filepath.Join(dir, CSVFile))
	if i := slices.Index(csvRows[0], "error_code"); i < 0 || csvRows[0][i-1] != "error_class" || csvRows[24][i] != "context_length_exceeded" {
		t.Errorf("results.csv: error_code column at %d after %v, row 23 %v; want it right after error_class", i, csvRows[0], csvRows[24])
	}
	if r := rows[1]; r.ErrorMessage != "no result recorded" {
		t.Errorf("missing cell message = %q, want %q", r.ErrorMessage, "no result recorded")
	}
	if r := rows[2]; !r.Reversed || r.ItemText != "I am reserved,\nquiet." || r.Model != "m1" || r.Seed != 7 || r.PersonaID != "p1" || r.Scale != "E" {
		t.Errorf("row 2 cell facts = %+v", r)
	}
}

func TestExportCSVMatchesJSONLAndEscapes(t *testing.T) {
	spec := testSpec()
	nasty := "line one\nline two, with a comma; \"quotes\" and ''\r\n<b>&</b>"
	src := sliceSource{recs: []store.Record{
		{Index: 0, Status: store.StatusUnparsed, Raw: nasty, CostUSD: usage.Dollars(0.00012345678), LatencyMS: 1234.56, Attempts: 2},
		ok(1, "2"),
	}}
	dir := t.TempDir()
	if _, err := Export(context.Background(), src, spec, "run-1", dir, 0); err != nil {
		t.Fatalf("Export: %v", err)
	}
	rows := readJSONL(t, filepath.Join(dir, JSONLFile))
	recs := readCSV(t, filepath.Join(dir, CSVFile))
	if !slices.Equal(recs[0], Header()) {
		t.Fatalf("CSV header = %v, want %v", recs[0], Header())
	}
	if len(recs)-1 != len(rows) {
		t.Fatalf("CSV has %d rows, JSONL %d", len(recs)-1, len(rows))
	}
	for i, r := range rows {
		want := r.Values()
		// encoding/csv reads \r\n inside a quoted field as \n.
		raw := slices.Index(Header(), "raw")
		want[raw] = strings.ReplaceAll(want[raw], "\r\n", "\n")
		if !slices.Equal(recs[i+1], want) {
			t.Fatalf("CSV row %d = %q, want %q", i, recs[i+1], want)
		}
	}
	if rows[0].Raw != nasty {
		t.Fatalf("JSONL raw = %q, want %q", rows[0].Raw, nasty)
	}
	cost := slices.Index(Header(), "cost_usd")
	if got := recs[1][cost : cost+2]; !slices.Equal(got, []string{"0.00012345678", "1234.6"}) {
		t.Fatalf("cost, latency = %q, want 0.00012345678, 1234.6", got)
	}
	if got := recs[2][slices.Index(Header(), "score")]; got != "2" {
		t.Fatalf("score of row 1 = %q, want 2", got)
	}
	if got := recs[1][slices.Index(Header(), "score")]; got != "" {
		t.Fatalf("score of an unparsed row = %q, want empty", got)
	}
	// The JSONL keys are the CSV header, in order, with the same number formatting.
	b, err := os.ReadFile(filepath.Join(dir, JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	dec := json.NewDecoder(strings.NewReader(first))
	dec.UseNumber()
	var keys []string
	vals := map[string]any{}
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		vals[k.(string)] = v
	}
	// JSON has the probabilities as one object, "probs", where the CSV has its p_<option id> columns.
	wantKeys := slices.Insert(Header(), slices.Index(Header(), "schema")+1, "probs")
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("JSONL keys = %v, want %v", keys, wantKeys)
	}
	if vals["score"] != nil || vals["cost_usd"] != json.Number("0.00012345678") || vals["latency_ms"] != json.Number("1234.6") {
		t.Fatalf("JSONL score, cost, latency = %v, %v, %v; want null, 0.00012345678, 1234.6", vals["score"], vals["cost_usd"], vals["latency_ms"])
	}
	if !strings.Contains(first, "<b>&</b>") {
		t.Fatalf("JSONL escapes HTML: %s", first)
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0.0"}, {12.5, "12.5"}, {3.14159, "3.1"}, {1000, "1000.0"}} {
		if got := formatLatency(tc.v); got != tc.want {
			t.Errorf("formatLatency(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestSummaryCountsAndFirstDistinctErrors(t *testing.T) {
	spec := testSpec()
	fail := func(i int, class, msg string) store.Record {
		return store.Record{Index: i, Status: store.StatusFailed, ErrorClass: class, ErrorMessage: msg, PromptTokens: 10, Attempts: 3}
	}
	var recs []store.Record
	for i := range 12 { // model m1: 10 ok, 2 unparsed
		if i < 10 {
			recs = append(recs, ok(i, "1"))
		} else {
			recs = append(recs, store.Record{Index: i, Status: store.StatusUnparsed, Raw: "?"})
		}
	}
	// model m2 (cells 12..23): errors in submission order, with repeats; cells 20..23 have no record.
	recs = append(recs,
		fail(12, "InvalidRequest", "bad"), fail(13, "InvalidRequest", "bad"), fail(14, "Auth", "no key"),
		fail(15, "InvalidRequest", "other"), fail(16, "Auth", "no key"), fail(17, "QuotaExhausted", "quota"),
		ok(18, "2"), ok(19, "3"))
	s, err := Export(context.Background(), sliceSource{recs: recs}, spec, "run-9", t.TempDir(), 1500*time.Millisecond)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	want := wire.Summary{
		RunID: "run-9", Name: "test spec", Cells: 24, OK: 12, Unparsed: 2, Failed: 10,
		Usage: usage.Usage{PromptTokens: 12*50 + 6*10, CompletionTokens: 12 * 3, CostUSD: usage.Dollars(0.00015)}, ElapsedSeconds: 1.5,
		Errors: []string{"InvalidRequest: bad", "Auth: no key", "InvalidRequest: other", "QuotaExhausted: quota", "NotRun: no result recorded"},
		Models: []wire.ModelSummary{
			{Model: "m1", Cells: 12, OK: 10, Unparsed: 2, Usage: usage.Usage{PromptTokens: 500, CompletionTokens: 30, CostUSD: usage.Dollars(0.000125)}},
			{Model: "m2", Cells: 12, OK: 2, Failed: 10, Usage: usage.Usage{PromptTokens: 160, CompletionTokens: 6, CostUSD: usage.Dollars(0.000025)}},
		},
		Outputs: []string{"results.jsonl", "results.csv", "scales.csv", "reliability.csv", "items.csv", "agreement.csv",
			"distributions.csv", "variance.csv", "summary.json"},
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("wire.Summary =\n%+v\nwant\n%+v", s, want)
	}
}

func TestSummaryFileMatchesReturnedSummary(t *testing.T) {
	dir := t.TempDir()
	s, err := Export(context.Background(), sliceSource{}, testSpec(), "r", dir, 0)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var got wire.Summary
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("summary.json = %+v, returned %+v", got, s)
	}
	if s.Failed != 24 || len(s.Errors) != 1 {
		t.Fatalf("empty run: %d failed, errors %q; want 24 and one NotRun", s.Failed, s.Errors)
	}
}

func TestExportLeavesNoPartialFiles(t *testing.T) {
	spec := testSpec()
	dir := t.TempDir()
	// A complete earlier export is in place.
	if _, err := Export(context.Background(), sliceSource{recs: []store.Record{ok(0, "1")}}, spec, "r", dir, 0); err != nil {
		t.Fatalf("first Export: %v", err)
	}
	before := snapshot(t, dir)

	boom := errors.New("disk on fire")
	for name, src := range map[string]Source{
		"source fails":     sliceSource{recs: []store.Record{ok(0, "3"), ok(1, "3")}, err: boom},
		"record too large": sliceSource{recs: []store.Record{ok(0, "3"), ok(spec.NumCells(), "3")}},
		"repeated record":  sliceSource{recs: []store.Record{ok(0, "3"), ok(0, "2")}},
	} {
		_, err := Export(context.Background(), src, spec, "r", dir, 0)
		if err == nil {
			t.Fatalf("%s: Export returned nil error", name)
		}
		if name == "source fails" && !errors.Is(err, boom) {
			t.Fatalf("%s: error %v does not wrap %v", name, err, boom)
		}
		if after := snapshot(t, dir); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s: directory changed on error:\nbefore %v\nafter  %v", name, keys(before), keys(after))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Export(ctx, sliceSource{}, spec, "r", dir, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Export with a cancelled context: got %v, want context.Canceled", err)
	}
	if after := snapshot(t, dir); !reflect.DeepEqual(after, before) {
		t.Fatalf("cancelled export changed the directory: %v", keys(after))
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

func keys(m map[string]string) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

func TestCellColumnsIgnoreFactsOfOneRun(t *testing.T) {
	spec := testSpec()
	a := BuildRow(spec, "run-a", ok(2, "3"))
	r := ok(2, "3")
	r.LatencyMS, r.Attempts, r.Tries, r.Cached = 999, 4, 3, true
	b := BuildRow(spec, "run-b", r)
	if !slices.Equal(CellColumns(a), CellColumns(b)) {
		t.Fatalf("CellColumns differ across runs:\n%q\n%q", CellColumns(a), CellColumns(b))
	}
	// Every column but the five facts of one run, and the probabilities.
	if n := len(CellColumns(a)); n != len(Header())-5+1 {
		t.Fatalf("CellColumns has %d columns, want %d", n, len(Header())-5+1)
	}
	// tries follows attempts in results.csv, and both are the record's.
	h := Header()
	if i := slices.Index(h, "attempts"); i < 0 || h[i+1] != "tries" {
		t.Fatalf("Header() = %q: want tries right after attempts", h)
	}
	if v := b.Values(); v[slices.Index(h, "attempts")] != "4" || v[slices.Index(h, "tries")] != "3" {
		t.Fatalf("Values() = %q: want attempts 4, tries 3", v)
	}
	r.CostUSD = 1
	if slices.Equal(CellColumns(a), CellColumns(BuildRow(spec, "run-a", r))) {
		t.Fatal("CellColumns ignores cost, a fact of the cell")
	}
}

func TestScaleScores(t *testing.T) {
	spec := testSpec()
	// m1/seed 7: cells 0..5 (q1 p1, q1 p2, q2 p1, q2 p2, q3 p1, q3 p2).
	src := sliceSource{recs: []store.Record{
		ok(0, "3"), ok(2, "3"), // p1: E = mean(3, reversed 1) = 2
		ok(1, "2"),              // p2: E = 2 (q2 missing)
		ok(4, "n"), ok(5, "dk"), // A: p1 = 0, p2 missing (ignored for scale)
	}}
	scores, err := ScaleScores(context.Background(), src, spec, "r")
	if err != nil {
		t.Fatalf("ScaleScores: %v", err)
	}
	if n := len(scores); n != 2*2*2*2 {
		t.Fatalf("%d scale scores, want 16", n)
	}
	f := func(v float64) *float64 { return &v }
	for i, want := range []ScaleScore{
		{Model: "m1", PersonaID: "p1", Seed: 7, Scale: "E", ScaleName: "Extraversion", Mean: f(2), NItems: 2},
		{Model: "m1", PersonaID: "p1", Seed: 7, Scale: "A", ScaleName: "Agreeableness", Mean: f(0), NItems: 1},
		{Model: "m1", PersonaID: "p1", Seed: 42, Scale: "E", ScaleName: "Extraversion", NMissing: 2},
		{Model: "m1", PersonaID: "p1", Seed: 42, Scale: "A", ScaleName: "Agreeableness", NMissing: 1},
		{Model: "m1", PersonaID: "p2", Seed: 7, Scale: "E", ScaleName: "Extraversion", Mean: f(2), NItems: 1, NMissing: 1},
		{Model: "m1", PersonaID: "p2", Seed: 7, Scale: "A", ScaleName: "Agreeableness", NMissing: 1},
	} {
		if !reflect.DeepEqual(scores[i], want) {
			t.Errorf("scale score %d = %s, want %s", i, fmtScore(scores[i]), fmtScore(want))
		}
	}

	dir := t.TempDir()
	if _, err := Export(context.Background(), src, spec, "r", dir, 0); err != nil {
		t.Fatalf("Export: %v", err)
	}
	recs := readCSV(t, filepath.Join(dir, ScalesFile))
	if !slices.Equal(recs[0], ScalesHeader()) || len(recs) != 17 {
		t.Fatalf("scales.csv: header %v, %d lines; want %v, 17", recs[0], len(recs), ScalesHeader())
	}
	if want := []string{"r", "m1", "p2", "7", "E", "Extraversion", "2", "1", "1", "", "0"}; !slices.Equal(recs[5], want) {
		t.Fatalf("scales.csv line 5 = %q, want %q", recs[5], want)
	}
	if got := recs[4][6]; got != "" {
		t.Fatalf("mean of a scale without scores = %q, want empty", got)
	}
}

func fmtScore(s ScaleScore) string {
	mean := "nil"
	if s.Mean != nil {
		mean = fmt.Sprint(*s.Mean)
	}
	return fmt.Sprintf("{%s %s %d %s %q mean=%s n=%d missing=%d}", s.Model, s.PersonaID, s.Seed, s.Scale, s.ScaleName, mean, s.NItems, s.NMissing)
}

func TestExportFromSQLiteStore(t *testing.T) {
	ctx := context.Background()
	db, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	spec := testSpec()
	var recs []store.Record
	for i := spec.NumCells() - 1; i >= 0; i -= 2 {
		recs = append(recs, ok(i, "2"))
	}
	if err := db.Put(ctx, "run", recs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := Export(ctx, db, spec, "run", dir, 0)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	if s.OK != 12 || s.Failed != 12 {
		t.Fatalf("summary ok %d failed %d, want 12 and 12", s.OK, s.Failed)
	}
	rows := readJSONL(t, filepath.Join(dir, JSONLFile))
	for i, r := range rows {
		if wantOK := i%2 == 1; (r.Status == store.StatusOK) != wantOK || r.Index != i {
			t.Fatalf("row %d: index %d status %s", i, r.Index, r.Status)
		}
	}
}
