package tests

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/wire"
)

var devAddrRE = regexp.MustCompile(`(?m)^Temporal server\s+(\S+) `)

// TestDevAcceptsRawClientRun starts `starter dev`, then starts ExperimentWorkflow the way the temporal CLI does
// (type name, task queue, the JSON of `starter validate --json` as the raw input) and checks the run's outputs.
func TestDevAcceptsRawClientRun(t *testing.T) {
	bin := starterBin(t)
	dir := t.TempDir()
	copyDir(t, filepath.Join("..", "examples", "quickstart"), dir)

	// The JSON a user would pass to `temporal workflow start --input-file`.
	v := startProc(t, dir, bin, "validate", "--json", "experiment.yaml")
	if code := v.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("validate --json: exit %d\n%s", code, v.dump())
	}
	specJSON := v.stdout.Bytes()
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), specJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := specfile.Load(filepath.Join(dir, "spec.json"))
	if err != nil {
		t.Fatalf("validate --json output does not load as a spec: %v", err)
	}
	cells := spec.NumCells()

	start := time.Now()
	state := filepath.Join(dir, "state")
	dev := startProc(t, dir, bin, "dev", "--port", strconv.Itoa(freePort(t)), "--ui-port", strconv.Itoa(freePort(t)),
		"--sim-addr", "127.0.0.1:0", "--state-dir", state)
	var addr string
	poll(t, 30*time.Second, 20*time.Millisecond, "the frontend address in dev's output", func() bool {
		if dev.exited() {
			t.Fatalf("dev exited early:\n%s", dev.dump())
		}
		m := devAddrRE.FindStringSubmatch(dev.stdout.String())
		if m != nil && strings.Contains(dev.stdout.String(), "Ctrl-C") {
			addr = m[1]
			return true
		}
		return false
	})
	t.Logf("dev ready at %s in %s", addr, time.Since(start).Round(time.Millisecond))

	ctx := withTimeout(t, 60*time.Second)
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := "dev-raw-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	runStart := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: wire.TaskQueue},
		"ExperimentWorkflow", json.RawMessage(specJSON))
	if err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("run %s: %v\n%s", id, err, dev.dump())
	}
	t.Logf("raw-client run of %d cells finished in %s", cells, time.Since(runStart).Round(time.Millisecond))
	if res.RunID != id {
		t.Errorf("result run id %q, want the workflow id %q", res.RunID, id)
	}
	if s := res.Summary; s.Cells != cells || s.OK+s.Unparsed != cells || s.Failed != 0 {
		t.Errorf("summary %+v, want %d cells answered", s, cells)
	}
	// Outputs land in out/<workflow id>/ of dev's working directory.
	wantDir := filepath.Join(dir, "out", id)
	if res.OutputDir != filepath.Join("out", id) && res.OutputDir != wantDir {
		t.Errorf("output dir %q, want out/%s of dev's working directory", res.OutputDir, id)
	}
	rows := cellColumns(t, wantDir)
	if len(rows) != cells {
		t.Errorf("results.jsonl: %d rows, want %d", len(rows), cells)
	}
	seen := map[string]bool{}
	f, err := os.Open(filepath.Join(wantDir, results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	if err := results.ReadJSONL(f, func(r results.Row) error {
		if r.Index != i || r.CellID != spec.CellID(spec.Cell(i)) {
			t.Errorf("row %d: index %d cell %s, want %s", i, r.Index, r.CellID, spec.CellID(spec.Cell(i)))
		}
		seen[r.CellID] = true
		i++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if len(seen) != cells {
		t.Errorf("results.jsonl: %d distinct cells, want %d", len(seen), cells)
	}
	cf, err := os.Open(filepath.Join(wantDir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(cf).ReadAll()
	cf.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != cells+1 {
		t.Errorf("results.csv: %d records, want a header and %d rows", len(recs), cells)
	}
	var sum wire.Summary
	b, err := os.ReadFile(filepath.Join(wantDir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Cells != cells {
		t.Errorf("summary.json: %d cells, want %d", sum.Cells, cells)
	}

	// Ctrl-C stops everything cleanly.
	c.Close()
	stop := time.Now()
	if err := dev.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := dev.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("dev after SIGINT: exit %d, want 0\n%s", code, dev.dump())
	}
	t.Logf("dev stopped %s after SIGINT", time.Since(stop).Round(time.Millisecond))
	if !strings.Contains(dev.stderr.String(), "stopping") {
		t.Errorf("dev did not say it was stopping:\n%s", dev.dump())
	}
	if strings.Contains(dev.stderr.String(), "panic") {
		t.Errorf("dev panicked on the way out:\n%s", dev.dump())
	}
	if _, err := os.Stat(filepath.Join(state, "temporal.db")); err != nil {
		t.Errorf("state not kept: %v", err)
	}
}

// TestDevPortZero: --port 0 and --ui-port 0 ask for free ports, and dev prints the ones it chose.
func TestDevPortZero(t *testing.T) {
	bin := starterBin(t)
	dir := t.TempDir()
	dev := startProc(t, dir, bin, "dev", "--port", "0", "--ui-port", "0", "--sim-addr", "127.0.0.1:0",
		"--state-dir", filepath.Join(dir, "state"))
	poll(t, 30*time.Second, 20*time.Millisecond, "dev to be ready", func() bool {
		if dev.exited() {
			t.Fatalf("dev exited early:\n%s", dev.dump())
		}
		return strings.Contains(dev.stdout.String(), "Ctrl-C")
	})
	out := dev.stdout.String()
	m := devAddrRE.FindStringSubmatch(out)
	if m == nil || strings.HasSuffix(m[1], ":0") || strings.HasSuffix(m[1], ":7233") {
		t.Errorf("--port 0: want a free port printed, got:\n%s", out)
	}
	ui := regexp.MustCompile(`(?m)^Web UI\s+http://127\.0\.0\.1:(\d+)$`).FindStringSubmatch(out)
	if err := dev.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := dev.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("dev after SIGINT: exit %d\n%s", code, dev.dump())
	}
	if ui == nil {
		t.Fatalf("--ui-port 0 served no Web UI:\n%s", out)
	}
	if ui[1] == "0" || ui[1] == "8233" {
		t.Errorf("--ui-port 0: UI on port %s, want a free port", ui[1])
	}
}
