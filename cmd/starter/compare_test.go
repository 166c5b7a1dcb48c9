package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/silicolab/silico/compare"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// TestCompareCommand compares two runs of the quickstart in one store, named by a spec file and by a prefix,
// and checks the errors of an unknown run, an ambiguous prefix and runs without a common cell.
func TestCompareCommand(t *testing.T) {
	spec, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dsn := filepath.Join(dir, "results.db")
	answers := func(shift int) []store.Record {
		var recs []store.Record
		for i := range 200 {
			c := spec.Cell(i)
			opt := string(rune('1' + (c.Persona+c.Item+shift*(i%3))%5))
			recs = append(recs, store.Record{Index: i, Status: store.StatusOK, OptionID: opt, Attempts: 1})
		}
		return recs
	}
	first := workflowID(spec)
	storeRun(t, dsn, first, spec, answers(0))
	storeRun(t, dsn, "retest-1", spec, answers(1))
	storeRun(t, dsn, "retest-2", spec, answers(2))
	late := answers(0)
	for i := range late {
		late[i].Index += 500
	}
	storeRun(t, dsn, "elsewhere", spec, late)
	// A spec with a second model: one model against two cannot be paired by position.
	two, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	m := two.Models[0]
	m.ID = "other"
	two.Models = append(two.Models, m)
	// Its second model's cells answer as the first run's: they are the ones --models sim=other pairs.
	second := answers(0)
	for i := range second {
		second[i].Index += two.NumCells() / 2
	}
	storeRun(t, dsn, "two-models", two, second)

	out := filepath.Join(dir, "cmp")
	code, stdout, errOut := runCLI(t, "compare", cliQuickstart, "retest-1", "--store", dsn, "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	for _, want := range []string{first + " (A) vs retest-1 (B)", "sim: 200 matched cells, 0 only in A, 0 only in B", "κ", "ICC(2,1)", "largest shifts:", compare.CSVFile, compare.HTMLFile} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	f, err := os.Open(filepath.Join(out, compare.CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The first 200 cells are seed 1's first 20 items for the ten personas: a row per item, then sim's "all".
	if len(rows) != 1+20+1 {
		t.Errorf("%d lines, want the header, 20 items and the model's row", len(rows))
	}
	if got := strings.Join(rows[0], ","); got != strings.Join(compare.Header(), ",") {
		t.Errorf("header %s", got)
	}
	last := rows[len(rows)-1]
	if last[0] != "sim" || last[1] != "sim" || last[2] != compare.AllItems || last[slices.Index(rows[0], "matched")] != "200" {
		t.Errorf("last row %v, want sim's all row over 200 matched cells", last)
	}
	page, err := os.ReadFile(filepath.Join(out, compare.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if !strings.Contains(html, `content="default-src 'none'`) || strings.Contains(html, "<script") || !strings.Contains(html, `data-key="sim/all/matched">200<`) {
		t.Errorf("compare.html: want the report's policy, no script and 200 matched cells")
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"no-such-run", "retest-1"}, exitUsage, "no run no-such-run in " + dsn + ": `starter runs --store " + dsn + "` lists the runs"},
		{[]string{"retest", "retest-1"}, exitUsage, `"retest" names 2 runs`},
		{[]string{"retest-1", "elsewhere"}, exitError, "no cell in common"},
		{[]string{"retest-1"}, exitUsage, ""},
		{[]string{"retest-1", "two-models"}, exitUsage, "name the pairs instead (--models A_MODEL=B_MODEL,...)"},
		{[]string{"retest-1", "two-models", "--models", "sim"}, exitUsage, "--models: model pair \"sim\": want A_MODEL=B_MODEL"},
		{[]string{"retest-1", "two-models", "--models", "sim=nope"}, exitUsage, `run B has no model "nope"`},
	} {
		code, _, errOut := runCLI(t, append(append([]string{"compare"}, tc.args...), "--store", dsn, "-o", filepath.Join(dir, "x"))...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("compare %v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	code, stdout, errOut = runCLI(t, "compare", "retest-1", "two-models", "--models", "sim=other", "--store", dsn, "-o", filepath.Join(dir, "named"))
	if code != exitOK || !strings.Contains(stdout, "models as named (sim=other, sim only in B)") || !strings.Contains(stdout, "sim=other: 200 matched cells") {
		t.Errorf("compare --models sim=other: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Errorf("a failed compare created its output directory (stat: %v)", err)
	}
}
