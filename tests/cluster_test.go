package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/devserver"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/wire"
)

var runIDRE = regexp.MustCompile(`silico-[a-z0-9-]+`)

// TestClusterRecipe follows README's "Scaling out with a Temporal cluster" with the quickstart spec, as printed:
// a worker and the starter (separate processes, built from cmd/worker and cmd/starter) against a plain Temporal
// server that has none of silico's search attributes (a devserver in this process, started without them).
func TestClusterRecipe(t *testing.T) {
	starter, worker := starterBin(t), workerBin(t)
	dir := t.TempDir()
	copyDir(t, filepath.Join("..", "examples", "quickstart"), dir)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{Port: 0, UIPort: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	addr := srv.FrontendHostPort()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if missing := missingAttrs(t, ctx, c); len(missing) != len(wire.SearchAttributes()) {
		t.Fatalf("the server already has %v; the test needs a plain one", missing)
	}

	// go run ./cmd/worker --address temporal.example:7233 --store /shared/results.db --sim
	shared := filepath.Join(dir, "shared", "results.db")
	w := startProc(t, dir, worker, "--address", addr, "--store", shared, "--sim")
	poll(t, 60*time.Second, 50*time.Millisecond, "the worker to start", func() bool {
		if w.exited() {
			t.Fatalf("worker exited:\n%s", w.dump())
		}
		return strings.Contains(w.stderr.String(), "worker started")
	})
	// The worker created the search attributes the plain server lacked.
	if missing := missingAttrs(t, ctx, c); len(missing) != 0 {
		t.Errorf("search attributes %v still missing after the worker started:\n%s", missing, w.dump())
	}

	// go run ./cmd/starter run spec.yaml --address temporal.example:7233
	run := startProc(t, dir, starter, "run", "experiment.yaml", "--address", addr)
	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("starter run: exit %d\n%s\nworker:\n%s", code, run.dump(), w.dump())
	}
	id := runIDRE.FindString(run.stdout.String())
	if id == "" || !strings.Contains(run.stdout.String(), "Done: 1000 cells") || !strings.Contains(run.stdout.String(), " 0 failed") {
		t.Fatalf("starter run output lacks the run id or 1000 cells without failures:\n%s", run.dump())
	}
	// The spec's simulator block cannot apply to the worker's shared simulator: the worker says so.
	if !strings.Contains(w.stderr.String(), "simulator settings") {
		t.Errorf("worker did not warn that the spec's simulator settings do not apply:\n%s", w.dump())
	}

	// go run ./cmd/starter status <run id> --address temporal.example:7233
	st := startProc(t, dir, starter, "status", id, "--address", addr)
	if code := st.wait(t, time.Minute); code != 0 || !strings.Contains(st.stdout.String(), "Completed") {
		t.Fatalf("starter status: exit %d\n%s", code, st.dump())
	}

	// go run ./cmd/starter export <run id> --output out/ --store /shared/results.db
	ex := startProc(t, dir, starter, "export", id, "--output", "exported", "--store", shared)
	if code := ex.wait(t, time.Minute); code != 0 {
		t.Fatalf("starter export: exit %d\n%s", code, ex.dump())
	}
	n := 0
	f, err := os.Open(filepath.Join(dir, "exported", results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := results.ReadJSONL(f, func(r results.Row) error {
		if r.Status == "failed" {
			t.Errorf("cell %s failed: %s %s", r.CellID, r.ErrorClass, r.ErrorMessage)
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1000 {
		t.Errorf("exported %d rows, want 1000", n)
	}
	// The export from the store alone reports the run's real elapsed time, the one the worker recorded.
	var sum wire.Summary
	b, err := os.ReadFile(filepath.Join(dir, "exported", results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.ElapsedSeconds <= 0 {
		t.Errorf("exported summary.json elapsed_seconds = %v (%v), want the run's elapsed time", sum.ElapsedSeconds, err)
	}
	// The worker's own export, under its output root.
	if _, err := os.Stat(filepath.Join(dir, "out", id, results.JSONLFile)); err != nil {
		t.Errorf("worker's outputs: %v", err)
	}

	_ = w.cmd.Process.Signal(syscall.SIGINT)
	if code := w.wait(t, time.Minute); code != 0 {
		t.Errorf("worker exit %d after SIGINT\n%s", code, w.dump())
	}
}

func missingAttrs(t *testing.T, ctx context.Context, c client.Client) []string {
	t.Helper()
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for name := range wire.SearchAttributes() {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			missing = append(missing, name)
		}
	}
	return missing
}
