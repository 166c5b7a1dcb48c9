package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/report"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// TestReportFromStore writes a report from a results store alone, with the wall time of an earlier export.
func TestReportFromStore(t *testing.T) {
	spec, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var recs []store.Record
	for i := range 100 {
		recs = append(recs, store.Record{Index: i, Status: store.StatusOK, OptionID: string(rune('1' + i%5)),
			PromptTokens: 100, CompletionTokens: 4, LatencyMS: 250, Attempts: 1})
	}
	storeRun(t, filepath.Join(dir, "results.db"), "run-1", spec, recs)
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	sum, _ := json.Marshal(wire.Summary{ElapsedSeconds: 12.5})
	if err := os.WriteFile(filepath.Join(out, results.SummaryFile), sum, 0o644); err != nil {
		t.Fatal(err)
	}

	code, stdout, errOut := runCLI(t, "report", "run-1", "--store", filepath.Join(dir, "results.db"), "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	path := filepath.Join(out, report.FileName)
	if !strings.Contains(stdout, path) {
		t.Errorf("stdout %q does not name %s", stdout, path)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"IPIP-50 quickstart", `data-key="cells">1,000<`, `data-key="ok">100<`,
		`data-key="elapsed">12.5 s<`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// storeRun writes a run's spec and records into a results store file.
func storeRun(t *testing.T, path, run string, spec *experiment.Spec, recs []store.Record) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveRun(ctx, run, b); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, run, recs); err != nil {
		t.Fatal(err)
	}
}

func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "report", "some-run", "--state-dir", filepath.Join(dir, "nothing"))
	if code != exitError || !strings.Contains(errOut, "no results store") {
		t.Errorf("no store: exit %d, stderr %q; want 1 and \"no results store\"", code, errOut)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	out := filepath.Join(dir, "out")
	code, _, errOut = runCLI(t, "report", "no-such-run", "--state-dir", dir, "-o", out)
	if code != exitError || !strings.Contains(errOut, "no-such-run") || !strings.Contains(errOut, "not found") {
		t.Errorf("unknown run: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("report created %s for an unknown run (stat: %v)", out, err)
	}
	code, _, _ = runCLI(t, "run", cliQuickstart, "--report", "--detach", "--address", "127.0.0.1:1")
	if code != exitUsage {
		t.Errorf("run --report --detach: exit %d, want %d", code, exitUsage)
	}
}
