package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/silicolab/silico/report"
	"github.com/silicolab/silico/store"
)

// TestExamplesRunWithReport runs every example as its comment tells a user to, `starter run
// examples/<name>/experiment.yaml --report` with the embedded server and simulator, and checks that it exits 0
// and writes report.html. Every folder under examples/ must hold an experiment.yaml.
func TestExamplesRunWithReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every example (about a minute)")
	}
	const root = "../../examples"
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	// The run must be embedded whatever the environment names.
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv(store.EnvDSN, "")
	ran := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		spec := filepath.Join(root, e.Name(), "experiment.yaml")
		t.Run(e.Name(), func(t *testing.T) {
			if _, err := os.Stat(spec); err != nil {
				t.Fatalf("examples/%s has no experiment.yaml: %v", e.Name(), err)
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := run(ctx, []string{"run", spec, "--report", "--no-ui", "--state-dir", filepath.Join(dir, "state"),
				"--output", out, "--progress-every", "1m"}, &stdout, &stderr)
			if code != exitOK {
				t.Fatalf("starter run %s --report: exit %d\nstdout:\n%s\nstderr:\n%s", spec, code, stdout.String(), stderr.String())
			}
			if fi, err := os.Stat(filepath.Join(out, report.FileName)); err != nil || fi.Size() == 0 {
				t.Errorf("starter run %s --report wrote no %s in %s (%v)\nstdout:\n%s", spec, report.FileName, out, err, stdout.String())
			}
		})
		ran++
	}
	if ran < 4 {
		t.Errorf("%d examples under %s, want at least quickstart, bfi, embed and pictures", ran, root)
	}
}
