package tests

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store/storetest"
)

// TestChaosAcrossWorkers is the distributed shape without containers: a Temporal server in a process of its own
// (starter dev --no-worker, state on disk), the PostgreSQL results store, three worker processes, a simulator
// process whose rpm equals the spec's, and the starter as a plain client. While the run goes, a random worker is
// killed with SIGKILL every few seconds and replaced, and the server process is killed and restarted once. The run
// must finish with every cell, the cell columns of a run in one process, no answered call asked again (beyond the
// calls in flight at a kill), and not one 429: the model's limits held across the workers.
func TestChaosAcrossWorkers(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	starter, worker := starterBin(t), workerBin(t)
	dir := t.TempDir()
	const rpm = 2400 // 40 calls/s
	simLog := filepath.Join(dir, "sim.jsonl")
	simURL, simProc := startSimulator(t, dir, simLog, "--latency", "60ms", "--jitter", "30ms", "--rpm", strconv.Itoa(rpm), "--burst", "0.05")

	spec := gridSpec(1, 4, 25, 10) // 1,000 cells in 4 passes: about 25 s at 40 calls/s
	spec.Name = "chaos"
	spec.Models[0].Provider, spec.Models[0].BaseURL, spec.Models[0].RPM = "sim", simURL, rpm
	spec.Run.MaxParallelPasses, spec.Run.MaxConcurrency = 3, 8
	writeSpecJSON(t, dir, spec)

	// The server, on a port of its own so that it comes back where the workers look for it.
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startServer := func() *proc { return startDevServer(t, dir, starter, port) }
	server := startServer()
	startWorker := func() *proc {
		return startProc(t, dir, worker, "--address", addr, "--store", dsn, "--output-root", filepath.Join(dir, "out"),
			"--metrics-addr", "", "--max-passes", "2")
	}
	workers := []*proc{startWorker(), startWorker(), startWorker()}

	id := startDetached(t, dir, starter, addr)

	ctx := withTimeout(t, 5*time.Minute)
	c, err := client.DialContext(ctx, client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var kills []time.Time // when a worker or the server was killed: calls in flight then may be asked again
	rng := rand.New(rand.NewPCG(1, 2))
	restarted := false
	start := time.Now()
	var mu sync.Mutex
	status := func() enums.WorkflowExecutionStatus {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		d, err := c.DescribeWorkflowExecution(dctx, id, "")
		if err != nil {
			return enums.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED // the server is restarting
		}
		return d.GetWorkflowExecutionInfo().GetStatus()
	}
	for st := status(); st != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED; st = status() {
		if st != enums.WORKFLOW_EXECUTION_STATUS_RUNNING && st != enums.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
			t.Fatalf("run %s is %v", id, st)
		}
		if ctx.Err() != nil {
			t.Fatalf("run %s did not finish in time; cells logged by the simulator: %d", id, countLines(simLog))
		}
		time.Sleep(3 * time.Second)
		i := rng.IntN(len(workers))
		mu.Lock()
		kills = append(kills, time.Now())
		mu.Unlock()
		_ = workers[i].cmd.Process.Kill()
		workers[i].wait(t, 10*time.Second)
		workers[i] = startWorker()
		if !restarted && time.Since(start) > 8*time.Second {
			restarted = true
			kills = append(kills, time.Now())
			_ = server.cmd.Process.Kill()
			server.wait(t, 10*time.Second)
			server = startServer()
		}
	}
	if !restarted {
		t.Fatalf("the run finished in %s, before the server could be restarted: make the grid larger", time.Since(start))
	}
	t.Logf("run %s finished in %s with %d kills", id, time.Since(start).Round(time.Second), len(kills))

	// Every cell, with the columns of a run in one process.
	checkColumnsOfOneProcessRun(t, dir, starter, id, dsn, spec, "chaos-reference")

	// The simulator's log: no 429, and no answered call asked again unless a kill came within the grace after
	// its answer landed (it was then in flight: not yet recorded).
	if err := simProc.cmd.Process.Signal(os.Interrupt); err == nil {
		simProc.wait(t, 30*time.Second)
	}
	again, limited := askedAgain(t, simLog, kills, 100*time.Millisecond)
	if limited > 0 {
		t.Errorf("the simulator refused %d calls with 429: the workers together exceeded the model's rpm", limited)
	}
	if len(again) > 0 {
		t.Errorf("%d answered calls were asked again outside a kill's grace: %v", len(again), again[:min(5, len(again))])
	}
}

// writeSpecJSON writes spec to dir/spec.json, the file startDetached runs.
// Without run.seed_per_cell the spec gets it as a spec file would (true), as specInput gives it, so a run of the
// file and one started with specInput send the same seeds however the file is read.
func writeSpecJSON(t *testing.T, dir string, spec experiment.Spec) {
	t.Helper()
	if spec.Run.SeedPerCell == nil {
		on := true
		spec.Run.SeedPerCell = &on
	}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// startDevServer starts the Temporal server alone (starter dev --no-worker, state in dir/state) on port, so that
// after a kill it comes back where the workers look for it, and waits until it serves.
func startDevServer(t *testing.T, dir, starter string, port int) *proc {
	t.Helper()
	p := startProc(t, dir, starter, "dev", "--no-worker", "--port", strconv.Itoa(port), "--no-ui", "--state-dir", filepath.Join(dir, "state"))
	poll(t, 60*time.Second, 20*time.Millisecond, "the Temporal server", func() bool {
		if p.exited() {
			t.Fatalf("starter dev exited:\n%s", p.dump())
		}
		return strings.Contains(p.stdout.String(), "Temporal server")
	})
	return p
}

// startDetached starts the run of dir/spec.json with the starter as a plain client of the server at addr
// (--detach: it starts the run and returns) and returns the run id it printed.
func startDetached(t *testing.T, dir, starter, addr string) string {
	t.Helper()
	run := startProc(t, dir, starter, "run", "spec.json", "--address", addr, "--detach")
	if code := run.wait(t, time.Minute); code != 0 {
		t.Fatalf("starter run --detach: exit %d\n%s", code, run.dump())
	}
	id := runIDRE.FindString(run.stdout.String())
	if id == "" {
		t.Fatalf("no run id in:\n%s", run.dump())
	}
	return id
}

// checkColumnsOfOneProcessRun exports run id from the store at dsn with the starter and holds its cell columns to
// those of spec run in one process (on a simulator of its own, without rpm or cache, as refID): every cell, the
// same columns.
func checkColumnsOfOneProcessRun(t *testing.T, dir, starter, id, dsn string, spec experiment.Spec, refID string) {
	t.Helper()
	ex := startProc(t, dir, starter, "export", id, "--output", "exported", "--store", dsn)
	if code := ex.wait(t, time.Minute); code != 0 {
		t.Fatalf("starter export: exit %d\n%s", code, ex.dump())
	}
	got := cellColumns(t, filepath.Join(dir, "exported"))
	ref := newStack(t, sim.Config{})
	refSpec := spec
	refSpec.Models = slices.Clone(spec.Models)
	refSpec.Models[0].BaseURL, refSpec.Models[0].RPM, refSpec.Run.Cache = ref.simURL, 0, "off"
	want := cellColumns(t, ref.run(t, refID, refSpec).OutputDir)
	if len(got) != spec.NumCells() || !reflect.DeepEqual(got, want) {
		t.Fatalf("run %s has %d rows that differ from the one-process run's %d (want %d cells)", id, len(got), len(want),
			spec.NumCells())
	}
}
