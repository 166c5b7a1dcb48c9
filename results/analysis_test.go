package results

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// The quickstart's recorded answers and R psych's numbers on them (see psychometrics/testdata/make_reference.R).
const (
	quickstartSpec  = "../examples/quickstart/experiment.yaml"
	quickstartCells = "../psychometrics/testdata/quickstart_cells.csv"
	psychReference  = "../psychometrics/testdata/reference.csv"
)

func readTestCSV(t *testing.T, path string) (map[string]int, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	return col, recs[1:]
}

// quickstartRecords replays the quickstart's cells as store records; every cell whose index is a multiple of
// missingEvery (when > 0) becomes unparsed, as the reference's "quickstart-missing" case has it.
func quickstartRecords(t *testing.T, missingEvery int) []store.Record {
	t.Helper()
	col, rows := readTestCSV(t, quickstartCells)
	recs := make([]store.Record, 0, len(rows))
	for _, r := range rows {
		idx, err := strconv.Atoi(r[col["index"]])
		if err != nil {
			t.Fatal(err)
		}
		rec := store.Record{Index: idx, Status: r[col["status"]], OptionID: r[col["option_id"]], Attempts: 1}
		if missingEvery > 0 && idx%missingEvery == 0 {
			rec.Status, rec.OptionID, rec.Raw = store.StatusUnparsed, "", "I would rather not say."
		}
		recs = append(recs, rec)
	}
	return recs
}

// TestAnalyzeMatchesPsych runs the quickstart's answers through Analyze, which scores them as scales.csv does
// and builds the personas × items matrices itself, and compares every reliability and item statistic with R
// psych's to 1e-9.
func TestAnalyzeMatchesPsych(t *testing.T) {
	spec, err := specfile.Load(quickstartSpec)
	if err != nil {
		t.Fatal(err)
	}
	col, refRows := readTestCSV(t, psychReference)
	ref := map[string]float64{}
	for _, r := range refRows {
		v := math.NaN()
		if r[col["value"]] != "" {
			if v, err = strconv.ParseFloat(r[col["value"]], 64); err != nil {
				t.Fatal(err)
			}
		}
		ref[r[col["case"]]+"|"+r[col["stat"]]+"|"+r[col["item"]]] = v
	}
	for _, c := range []struct {
		variant      string
		missingEvery int
	}{{"quickstart", 0}, {"quickstart-missing", 7}} {
		t.Run(c.variant, func(t *testing.T) {
			a, err := Analyze(context.Background(), sliceSource{recs: quickstartRecords(t, c.missingEvery)}, spec, "run", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Reliability) != len(spec.Seeds)*5 {
				t.Fatalf("%d reliability rows, want %d", len(a.Reliability), len(spec.Seeds)*5)
			}
			compared, missing := 0, 0
			cmp := func(key string, got *float64) {
				t.Helper()
				want, ok := ref[key]
				if !ok {
					t.Errorf("%s: no reference value", key)
					return
				}
				compared++
				if got == nil || math.Abs(*got-want) > 1e-9 {
					t.Errorf("%s = %v, psych %.15g", key, deref(got), want)
				}
			}
			for _, r := range a.Reliability {
				missing += r.Missing
				base := strings.Join([]string{c.variant, r.Model, strconv.FormatInt(r.Seed, 10), r.Scale}, "/")
				if want := ref[base+"|n_items|"]; float64(r.ItemsUsed) != want {
					t.Errorf("%s: %d items used, psych kept %v", base, r.ItemsUsed, want)
				}
				cmp(base+"|raw_alpha|", r.Alpha)
				cmp(base+"|std_alpha|", r.StdAlpha)
				cmp(base+"|average_r|", r.AverageR)
				cmp(base+"|omega_total|", r.OmegaTotal)
			}
			for _, it := range a.Items {
				if !it.Used {
					continue
				}
				base := strings.Join([]string{c.variant, it.Model, strconv.FormatInt(it.Seed, 10), it.Scale}, "/")
				cmp(base+"|r_drop|"+it.ItemID, it.ItemRest)
				cmp(base+"|alpha_if_dropped|"+it.ItemID, it.AlphaIfDropped)
			}
			if compared < 100 {
				t.Errorf("only %d values compared", compared)
			}
			if c.missingEvery > 0 && missing < len(quickstartRecords(t, 0))/c.missingEvery {
				t.Errorf("%d missing answers counted; the case makes at least %d", missing, len(quickstartRecords(t, 0))/c.missingEvery)
			}
		})
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// TestAgreementAndItemStats checks seed agreement and item statistics on a grid small enough to work out by
// hand: testSpec's 2 seeds, 2 personas and 3 items.
func TestAgreementAndItemStats(t *testing.T) {
	spec := testSpec()
	// Model m1: cell index = ((seed*3)+item)*2+persona. Seed 7 then seed 42.
	recs := []store.Record{
		ok(0, "1"), ok(1, "3"), // seed 7, q1: p1 1, p2 3
		ok(2, "3"), ok(3, "2"), // seed 7, q2 (reversed): p1 3 → 1, p2 2 → 2
		ok(4, "y"), ok(5, "dk"), // seed 7, q3: p1 5, p2 don't know (no score)
		ok(6, "1"), ok(7, "2"), // seed 42, q1: p1 1, p2 2
		ok(8, "3"), {Index: 9, Status: store.StatusUnparsed, Raw: "maybe"}, // seed 42, q2: p1 1, p2 missing
		ok(10, "n"), ok(11, "dk"), // seed 42, q3: p1 0, p2 don't know
	}
	a, err := Analyze(context.Background(), sliceSource{recs: recs}, spec, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Scale E for m1/p1: seed 7 mean(1, 1) = 1, seed 42 mean(1, 1) = 1: sd 0, range 0, every item the same answer.
	// m1/p2: seed 7 mean(3, 2) = 2.5, seed 42 mean(2) = 2: sd 0.353553, range 0.5; q1 answers 3, 2 (share 0.5),
	// q2 answered once (share 1): modal share 0.75.
	find := func(model, persona, scale string) Agreement {
		for _, g := range a.Agreement {
			if g.Model == model && g.PersonaID == persona && g.Scale == scale {
				return g
			}
		}
		t.Fatalf("no agreement row %s/%s/%s", model, persona, scale)
		return Agreement{}
	}
	p1 := find("m1", "p1", "E")
	if p1.Seeds != 2 || *p1.SD != 0 || *p1.Range() != 0 || *p1.ModalShare != 1 {
		t.Errorf("m1/p1/E: %+v", p1)
	}
	p2 := find("m1", "p2", "E")
	if p2.Seeds != 2 || math.Abs(*p2.SD-math.Sqrt(0.125)) > 1e-12 || *p2.Range() != 0.5 || *p2.ModalShare != 0.75 {
		t.Errorf("m1/p2/E: seeds %d sd %v range %v modal %v", p2.Seeds, deref(p2.SD), deref(p2.Range()), deref(p2.ModalShare))
	}
	// Scale A is q3 alone: p2 answered "don't know" twice, the same answer (modal share 1) but no score.
	if g := find("m1", "p2", "A"); g.Seeds != 0 || g.Mean != nil || g.SD != nil || g.ModalShare == nil || *g.ModalShare != 1 {
		t.Errorf("m1/p2/A: %+v", g)
	}
	// Model m2 has no records: every cell NotRun, nothing defined.
	if g := find("m2", "p1", "E"); g.Seeds != 0 || g.Mean != nil || g.ModalShare != nil {
		t.Errorf("m2/p1/E: %+v", g)
	}
	// Item statistics of m1, seed 42, scale E: q1 answered 1 and 2; q2 answered by p1 only.
	for _, it := range a.Items {
		if it.Model != "m1" || it.Seed != 42 || it.Scale != "E" {
			continue
		}
		switch it.ItemID {
		case "q1":
			if it.N != 2 || *it.Mean != 1.5 || !it.Used || *it.ModalShare != 0.75 {
				t.Errorf("q1: n %d mean %v used %v modal %v", it.N, deref(it.Mean), it.Used, deref(it.ModalShare))
			}
		case "q2":
			// One answer: no variance, left out of the scale's statistics.
			if it.N != 1 || it.Used || it.ItemRest != nil {
				t.Errorf("q2: %+v", it)
			}
		}
	}
	for _, r := range a.Reliability {
		if r.Model == "m1" && r.Seed == 42 && r.Scale == "E" {
			if r.Missing != 1 || r.ItemsUsed != 1 || r.Alpha != nil {
				t.Errorf("m1/42/E: %+v; want 1 missing, 1 item used, alpha undefined", r)
			}
		}
	}
}

// TestExportWritesPsychometrics checks that the export writes reliability.csv, items.csv and agreement.csv
// with one line per model × seed × scale, model × seed × scale item, and model × persona × scale.
func TestExportWritesPsychometrics(t *testing.T) {
	spec, err := specfile.Load(quickstartSpec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Export(context.Background(), sliceSource{recs: quickstartRecords(t, 7)}, spec, "run-q", dir, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		header []string
		lines  int
	}{
		{ReliabilityFile, ReliabilityHeader(), 2 * 5},
		{ItemsFile, ItemsHeader(), 2 * 50},
		{AgreementFile, AgreementHeader(), 10 * 5},
	} {
		col, rows := readTestCSV(t, filepath.Join(dir, c.name))
		if len(col) != len(c.header) || len(rows) != c.lines {
			t.Errorf("%s: %d columns, %d lines; want %d and %d", c.name, len(col), len(rows), len(c.header), c.lines)
		}
		for i, h := range c.header {
			if col[h] != i {
				t.Errorf("%s: column %q at %d, want %d", c.name, h, col[h], i)
			}
		}
	}
	col, rows := readTestCSV(t, filepath.Join(dir, ReliabilityFile))
	if rows[0][col["model"]] != "sim" || rows[0][col["seed"]] != "1" || rows[0][col["scale"]] != "E" ||
		rows[len(rows)-1][col["seed"]] != "2" || rows[len(rows)-1][col["scale"]] != "I" {
		t.Errorf("reliability.csv not in model, seed, scale order: first %v last %v", rows[0], rows[len(rows)-1])
	}
	for _, r := range rows {
		if r[col["alpha"]] == "" || r[col["n_missing"]] == "0" {
			t.Errorf("reliability line %v: want an alpha and missing answers", r)
		}
	}
}
