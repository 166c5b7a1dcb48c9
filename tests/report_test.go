package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunWritesReport: `starter run --report` on the quickstart writes report.html next to the other outputs,
// and `starter report` writes it again from the results store alone after the run has ended.
func TestRunWritesReport(t *testing.T) {
	bin := starterBin(t)
	dir := quickstartCopy(t)
	p := startProc(t, dir, bin, runArgs(t, filepath.Join(dir, "requests.jsonl"), "--report")...)
	if code := p.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("starter run --report: exit %d\n%s", code, p.dump())
	}
	m := runLineRE.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no run line:\n%s", p.dump())
	}
	out := filepath.Join(dir, "out", m[2])
	page := filepath.Join(out, "report.html")
	if !strings.Contains(p.stdout.String(), "report: "+page) {
		t.Errorf("stdout does not name %s:\n%s", page, p.dump())
	}
	for _, name := range []string{"reliability.csv", "items.csv", "agreement.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("run --report wrote no %s: %v", name, err)
		}
	}
	first, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first), m[2]) || !strings.Contains(string(first), `data-key="cells">1,000<`) {
		t.Errorf("report.html lacks the run id or its 1,000 cells")
	}
	if err := os.Remove(page); err != nil {
		t.Fatal(err)
	}

	// No server is running now: report reads the store the run left in .silico/.
	r := startProc(t, dir, bin, "report", m[2])
	if code := r.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("starter report: exit %d\n%s", code, r.dump())
	}
	again, err := os.ReadFile(page)
	if err != nil {
		t.Fatalf("starter report wrote no %s: %v\n%s", page, err, r.dump())
	}
	// The same run gives the same page, wall time included (report reads it from summary.json).
	if string(again) != string(first) {
		t.Error("starter report's page differs from run --report's for the same run")
	}
}
