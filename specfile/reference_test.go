package specfile

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

const bfiDir = "../examples/bfi"

func loadBFI(t *testing.T) *experiment.Spec {
	t.Helper()
	s, err := Load(filepath.Join(bfiDir, "experiment.yaml"))
	if err != nil {
		t.Fatalf("examples/bfi: %v", err)
	}
	if s.Reference == nil || s.Reference.Form != experiment.ReferenceAnswers {
		t.Fatalf("examples/bfi: reference %+v, want one read from a file of answers", s.Reference)
	}
	return s
}

func readExampleCSV(t *testing.T, name string) (map[string]int, [][]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(bfiDir, name))
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

// countsByKey indexes a reference's counts by item and group: a file of counts' own, or for a file of answers
// those its respondents give (for every item and group with an answer), as the counts form would list them.
func countsByKey(s *experiment.Spec) map[[2]string][]int {
	r := s.Reference
	out := map[[2]string][]int{}
	for _, c := range r.Counts {
		out[[2]string{c.Item, c.Group}] = c.Counts
	}
	if rs := r.Respondents; rs != nil {
		for j, id := range rs.Items {
			it := slices.IndexFunc(s.Questionnaire.Items, func(i experiment.Item) bool { return i.ID == id })
			for _, g := range r.GroupLabels() {
				c := make([]int, len(s.OptionsFor(it).Options))
				n := 0
				for i, a := range rs.Answers {
					if a[j] >= 0 && rs.InGroup(r.Groups, i, g) {
						c[a[j]]++
						n++
					}
				}
				if n > 0 {
					out[[2]string{id, g}] = c
				}
			}
		}
	}
	return out
}

// TestBFICountsEqualR: what silico counts in bfi.csv, item by item and group by group, is exactly what R's
// table() counted in make_reference.R (human_counts.csv), and the groups are the same.
func TestBFICountsEqualR(t *testing.T) {
	s := loadBFI(t)
	got := countsByKey(s)
	col, rows := readExampleCSV(t, "human_counts.csv")
	want := map[[2]string][]int{}
	for _, r := range rows {
		k := [2]string{r[col["item_id"]], r[col["group"]]}
		n, err := strconv.Atoi(r[col["count"]])
		if err != nil {
			t.Fatal(err)
		}
		opt, err := strconv.Atoi(r[col["option_id"]])
		if err != nil || opt < 1 || opt > 6 {
			t.Fatalf("option %q", r[col["option_id"]])
		}
		if want[k] == nil {
			want[k] = make([]int, 6)
		}
		want[k][opt-1] = n
	}
	if len(want) != 25*7 {
		t.Fatalf("human_counts.csv has %d item × group entries, want 25 items × 7 groups", len(want))
	}
	for k, w := range want {
		if g := got[k]; !reflect.DeepEqual(g, w) {
			t.Errorf("item %s, group %s: silico %v, R %v", k[0], k[1], g, w)
		}
	}
	for k := range got {
		if want[k] == nil {
			t.Errorf("item %s, group %s: silico has counts R has not", k[0], k[1])
		}
	}
	wantGroups := []string{"all", "gender=1", "gender=2", "age_band=0-17", "age_band=18-29", "age_band=30-44", "age_band=45+"}
	if g := s.Reference.GroupLabels(); !reflect.DeepEqual(g, wantGroups) {
		t.Errorf("groups %v, want %v", g, wantGroups)
	}
}

// TestCountsFormEqualsAnswers: human_counts.csv read as a file of counts gives the counts bfi.csv gives as a
// file of answers (and no scales: counts carry no respondents).
func TestCountsFormEqualsAnswers(t *testing.T) {
	s := loadBFI(t)
	data, err := os.ReadFile(filepath.Join(bfiDir, "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), "file: bfi.csv", "file: human_counts.csv", 1)
	c, err := Parse([]byte(doc), filepath.Join(bfiDir, "counts.yaml"), bfiDir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Reference.Form != experiment.ReferenceCountsForm || len(c.Reference.Scales) != 0 || c.Reference.Respondents != nil {
		t.Fatalf("form %q, %d scales; want counts and none, without respondents", c.Reference.Form, len(c.Reference.Scales))
	}
	if len(s.Reference.Counts) != 0 || len(s.Reference.Scales) != 0 {
		t.Fatalf("the file of answers inlines %d counts and %d scales besides its respondents; want none", len(s.Reference.Counts), len(s.Reference.Scales))
	}
	if got, want := countsByKey(c), countsByKey(s); len(got) != 25*7 || !reflect.DeepEqual(got, want) {
		t.Fatalf("counts from the file of counts (%d) differ from those of the answers' respondents (%d)", len(got), len(want))
	}
	if !reflect.DeepEqual(c.Reference.GroupLabels(), s.Reference.GroupLabels()) {
		t.Fatalf("groups %v from the counts, %v from the answers", c.Reference.GroupLabels(), s.Reference.GroupLabels())
	}
}

// TestReferenceRoundTrip: the resolved spec's JSON carries the reference, and reads back (as a workflow input,
// which reads no file) to the same reference.
func TestReferenceRoundTrip(t *testing.T) {
	s := loadBFI(t)
	b, back := throughJSON(t, s)
	if !reflect.DeepEqual(back.Reference, s.Reference) {
		t.Fatalf("reference changed through JSON")
	}
	if back.Hash() != s.Hash() {
		t.Fatalf("hash changed through JSON: %s, %s", back.Hash(), s.Hash())
	}
	// Without the inlined counts a workflow input names a file no worker may read.
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["reference"] = map[string]any{"file": "bfi.csv"}
	b, _ = json.Marshal(m)
	if _, err := ParseInput(b, "input"); err == nil || !strings.Contains(err.Error(), "files are not read from a workflow input") {
		t.Fatalf("a workflow input naming a reference file: err %v", err)
	}
}

// throughJSON is the resolved spec's JSON, as a workflow input carries it, and that JSON read back.
func throughJSON(t *testing.T, s *experiment.Spec) ([]byte, *experiment.Spec) {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseInput(b, "input")
	if err != nil {
		t.Fatalf("ParseInput of the resolved spec: %v", err)
	}
	return b, back
}

// refSpec is baseSpec with a reference read from file, whose content is content.
func refSpec(t *testing.T, reference, content string) (*experiment.Spec, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "human.csv"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := baseSpec + "reference: " + reference + "\n"
	return Parse([]byte(doc), filepath.Join(dir, "spec.yaml"), dir)
}

func TestReferenceAnswersSmall(t *testing.T) {
	s, err := refSpec(t, "{file: human.csv, groups: [sex]}", "i1,i2,sex\n1,2,f\n2,2,m\n,1,f\nNA,2,\n2,1,m\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []experiment.ReferenceCounts{
		{Item: "i1", Group: "all", Counts: []int{1, 2}},
		{Item: "i1", Group: "sex=f", Counts: []int{1, 0}},
		{Item: "i1", Group: "sex=m", Counts: []int{0, 2}},
		{Item: "i2", Group: "all", Counts: []int{2, 3}},
		{Item: "i2", Group: "sex=f", Counts: []int{1, 1}},
		{Item: "i2", Group: "sex=m", Counts: []int{1, 1}},
	}
	got := countsByKey(s)
	if len(got) != len(want) {
		t.Fatalf("counts %+v\nwant %+v", got, want)
	}
	for _, w := range want {
		if !reflect.DeepEqual(got[[2]string{w.Item, w.Group}], w.Counts) {
			t.Errorf("item %s group %s: counts %v, want %v", w.Item, w.Group, got[[2]string{w.Item, w.Group}], w.Counts)
		}
	}
	if g := s.Reference.GroupLabels(); !reflect.DeepEqual(g, []string{"all", "sex=f", "sex=m"}) {
		t.Errorf("groups %v", g)
	}
}

// TestReferenceNumberForms: numbers in a reference file are read in every plain decimal and exponent form R's
// read.csv reads as the same number.
func TestReferenceNumberForms(t *testing.T) {
	s, err := refSpec(t, "{file: human.csv, weight: w}", "w,i1\n1e3,1\n.5,2\n+2,1\n5.,2\n 2.5E-1 ,1\n007,2\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Reference.Respondents.Weights, []float64{1000, 0.5, 2, 5, 0.25, 7}; !reflect.DeepEqual(got, want) {
		t.Errorf("weights %v, want %v", got, want)
	}
	s, err = refSpec(t, "{file: human.csv}", "item_id,option_id,count\ni1,1,12.0\ni1,2,1e2\ni2,1,+3\ni2,2,0\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []experiment.ReferenceCounts{{Item: "i1", Group: "all", Counts: []int{12, 100}}, {Item: "i2", Group: "all", Counts: []int{3, 0}}}
	if !reflect.DeepEqual(s.Reference.Counts, want) {
		t.Errorf("counts %+v, want %+v", s.Reference.Counts, want)
	}
}

// TestReferenceRespondents: a file of answers inlines its people one by one (answers as option indices on the
// items the file has, group values, weights), which the resolved spec carries through JSON and validation
// refuses when they do not fit the questionnaire.
func TestReferenceRespondents(t *testing.T) {
	s, err := refSpec(t, "{file: human.csv, groups: [sex], weight: w}", "w,i2,sex\n0.5,2,f\n2,, m \n1.25,1,NA\n")
	if err != nil {
		t.Fatal(err)
	}
	want := &experiment.Respondents{Items: []string{"i2"}, Answers: [][]int{{1}, {-1}, {0}},
		Groups: [][]string{{"f"}, {"m"}, {""}}, Weights: []float64{0.5, 2, 1.25}}
	if !reflect.DeepEqual(s.Reference.Respondents, want) || s.Reference.Weight != "w" {
		t.Fatalf("respondents %+v, weight %q\nwant %+v", s.Reference.Respondents, s.Reference.Weight, want)
	}
	if rs := s.Reference.Respondents; !rs.InGroup(s.Reference.Groups, 1, "sex=m") || rs.InGroup(s.Reference.Groups, 2, "sex=f") ||
		!rs.InGroup(s.Reference.Groups, 2, experiment.GroupAll) || rs.Weight(1) != 2 {
		t.Fatal("InGroup or Weight disagree with the file")
	}
	b, back := throughJSON(t, s)
	if !reflect.DeepEqual(back.Reference, s.Reference) {
		t.Fatalf("reference changed through JSON:\n%+v\n%+v", back.Reference.Respondents, s.Reference.Respondents)
	}
	for _, c := range []struct {
		name string
		edit func(*experiment.Respondents)
		want string
	}{
		{"option out of range", func(r *experiment.Respondents) { r.Answers[0][0] = 2 }, "reference.respondents.answers[0][0]: 2 is not an option of item \"i2\""},
		{"short row", func(r *experiment.Respondents) { r.Answers[1] = nil }, "reference.respondents.answers[1]: 0 answers for 1 items"},
		{"unknown item", func(r *experiment.Respondents) { r.Items[0] = "i9" }, "reference.respondents.items[0]: unknown item \"i9\""},
		{"bad weight", func(r *experiment.Respondents) { r.Weights[2] = -1 }, "reference.respondents.weights[2]: weight -1"},
		{"weights short", func(r *experiment.Respondents) { r.Weights = r.Weights[:1] }, "1 weights for 3 respondents"},
		{"group values", func(r *experiment.Respondents) { r.Groups[0] = nil }, "reference.respondents.groups[0]: 0 values for 1 group columns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad, err := ParseInput(b, "input")
			if err != nil {
				t.Fatal(err)
			}
			c.edit(bad.Reference.Respondents)
			if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("validation error %v\nwant it to contain %s", err, c.want)
			}
		})
	}
}

// TestReferenceErrors: every mistake in a reference file is reported at its line and column, saying what
// would be accepted.
func TestReferenceErrors(t *testing.T) {
	for _, c := range []struct {
		name, ref, content string
		want               []string
	}{
		{"unknown column", "{file: human.csv}", "i1,i3\n1,2\n", []string{`human.csv:1:4: reference.file: column "i3" is neither an item id`}},
		{"bad option", "{file: human.csv}", "i1,i2\n1,2\n2,7\n", []string{`human.csv:3:3: reference.file: "7" is not an option id of item i2; its options: 1, 2`}},
		{"missing group column", "{file: human.csv, groups: [sex]}", "i1,i2\n1,2\n", []string{`reference.groups[0]: no column "sex"`}},
		{"unknown item id", "{file: human.csv}", "item_id,option_id,count\ni9,1,3\n", []string{`human.csv:2:1: reference.file: unknown item id "i9"`}},
		{"option not among options", "{file: human.csv}", "item_id,option_id,count\ni1,3,4\n", []string{`human.csv:2:4: reference.file: "3" is not an option id of item i1`}},
		{"bad count", "{file: human.csv}", "item_id,option_id,count\ni1,1,-2\ni1,2,x\n",
			[]string{`human.csv:2:6: reference.file: count "-2"`, `human.csv:3:6: reference.file: count "x"`}},
		{"group not declared", "{file: human.csv}", "item_id,option_id,count,group\ni1,1,3,\ni1,1,2,sex=f\n",
			[]string{`human.csv:3:8: reference.file: group "sex=f": column "sex" is not in reference.groups`}},
		{"duplicate count", "{file: human.csv}", "item_id,option_id,count\ni1,1,3\ni1,1,2\n", []string{`human.csv:3:1: reference.file: item i1, option 1, group all again (line 2 has it)`}},
		{"no all", "{file: human.csv, groups: [sex]}", "item_id,option_id,count,group\ni1,1,3,sex=f\n", []string{`human.csv:2:1: reference.file: item i1 has counts for groups but none for the whole sample`}},
		{"unknown count column", "{file: human.csv}", "item_id,option_id,count,gruop\n", []string{`human.csv:1:25: reference.file: unknown column "gruop" in a file of counts (did you mean "group"?)`}},
		{"bad weight", "{file: human.csv, weight: w}", "i1,i2,w\n1,2,0.5\n2,1,0\n1,1,x\n2,2,\n",
			[]string{`human.csv:3:5: reference.file: weight "0" in column w`, `human.csv:4:5: reference.file: weight "x"`, `human.csv:5:5: reference.file: weight ""`}},
		// Go's number syntax is not a data file's: R and pandas read 1_000 and 0x1p3 as text, and a weight must be
		// a finite number.
		{"weight in Go syntax", "{file: human.csv, weight: w}", "i1,i2,w\n1,2,1_000\n2,1,0x1p3\n1,1,Inf\n2,2,NaN\n1,2,1e999\n",
			[]string{`human.csv:2:5: reference.file: weight "1_000" in column w: want a number > 0 for every respondent, written as digits ` +
				`with an optional sign, decimal point and exponent, such as 12, 0.5 or 1e3 (no digit separators, hexadecimal, Inf or NaN)`,
				`human.csv:3:5: reference.file: weight "0x1p3"`, `human.csv:4:5: reference.file: weight "Inf"`,
				`human.csv:5:5: reference.file: weight "NaN"`, `human.csv:6:5: reference.file: weight "1e999"`}},
		{"count in Go syntax", "{file: human.csv}", "item_id,option_id,count\ni1,1,1_000\ni1,2,2.5\ni2,1,0x10\n",
			[]string{`human.csv:2:6: reference.file: count "1_000": want a whole number of people ≥ 0, written as digits with an optional sign`,
				`human.csv:3:6: reference.file: count "2.5"`, `human.csv:4:6: reference.file: count "0x10"`}},
		{"no weight column", "{file: human.csv, weight: wt}", "i1,i2,w\n1,2,0.5\n", []string{`spec.yaml:38:38: reference.weight: no column "wt" in `, `(columns: i1, i2, w) (did you mean "w"?)`}},
		{"no file", "{groups: [sex]}", "", []string{`reference: missing file`}},
		{"not a file", "{file: nowhere.csv}", "", []string{`reference.file: cannot read`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := refSpec(t, c.ref, c.content)
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nwant it to contain\n%s", err, w)
				}
			}
		})
	}
}

// TestReferenceErrorsCapped: a file with a mistake on every row lists maxReferenceErrors and counts the rest.
func TestReferenceErrorsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("i1,i2\n")
	for range 50 {
		b.WriteString("9,1\n")
	}
	_, err := refSpec(t, "{file: human.csv}", b.String())
	var es experiment.Errors
	if err == nil || !asErrors(err, &es) {
		t.Fatalf("err %v", err)
	}
	if len(es) != maxReferenceErrors+1 || !strings.Contains(es[len(es)-1].Msg, "30 more mistakes") {
		t.Fatalf("%d errors, last %v; want %d and a count of 30 more", len(es), es[len(es)-1], maxReferenceErrors+1)
	}
}

func asErrors(err error, es *experiment.Errors) bool {
	e, ok := err.(experiment.Errors)
	*es = e
	return ok
}

// TestReferenceValidation: an inlined reference (a resolved spec, as a workflow input carries it) is checked
// against the questionnaire too.
func TestReferenceValidation(t *testing.T) {
	for _, c := range []struct{ ref, want string }{
		{`{counts: [{item: i1, group: all, counts: [1, 2, 3]}]}`, `reference.counts[0].counts: 3 counts, but item "i1" has 2 options`},
		{`{counts: [{item: i7, group: all, counts: [1, 2]}]}`, `reference.counts[0].item: unknown item "i7"`},
		{`{counts: [{item: i1, group: sex=f, counts: [1, 2]}]}`, `reference.counts[0].group: group "sex=f"`},
		{`{counts: [{item: i1, group: all, counts: [1, -2]}]}`, `reference.counts[0].counts[1]: -2 is negative`},
		{`{groups: [all], counts: [{item: i1, group: all, counts: [1, 2]}]}`, `reference.groups[0]: "all" is the group of everyone`},
		{`{counts: [{item: i1, group: all, counts: [1, 2]}], scales: [{scale: X, group: all, n: 3}]}`, `reference.scales[0].scale: scale "X" has no items`},
	} {
		_, err := Parse([]byte(baseSpec+"reference: "+c.ref+"\n"), "spec.yaml", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reference %s: err %v, want %q", c.ref, err, c.want)
		}
	}
}

// TestReferenceItemWithoutColumn: an item the file has no column for is not an error, but a note says it gets no
// human side.
func TestReferenceItemWithoutColumn(t *testing.T) {
	s, err := refSpec(t, "{file: human.csv}", "i1\n1\n2\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "no column for items i2") {
		t.Fatalf("notes %q, want one naming item i2", s.Notes)
	}
	if c := countsByKey(s); len(c) != 1 || c[[2]string{"i1", "all"}] == nil {
		t.Fatalf("counts %+v, want i1's alone", c)
	}
}

func TestInGroup(t *testing.T) {
	s, err := refSpec(t, "{file: human.csv, groups: [age]}", "i1,i2,age\n1,2,30\n")
	if err != nil {
		t.Fatal(err)
	}
	if !s.InGroup(0, "all") || !s.InGroup(0, "age=30") || s.InGroup(1, "age=30") || s.InGroup(0, "name=") {
		t.Fatalf("InGroup wrong for personas %+v", s.Personas)
	}
}
