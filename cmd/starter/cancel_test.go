package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workerhost"
	"github.com/silicolab/silico/workflows"
)

// cancelStack is a Temporal test server with one worker (batch mode on) whose results store is a SQLite file,
// and a simulator whose calls take 100 ms and whose batches take a minute.
type cancelStack struct {
	ts        *temporaltest.TestServer
	client    client.Client
	store     *store.SQLite
	storePath string
	sim       *sim.Server
	dir       string
}

func newCancelStack(t *testing.T) *cancelStack {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	s, err := sim.New(sim.Config{Latency: sim.Latency{Fixed: 100 * time.Millisecond},
		Batch: sim.BatchConfig{ProcessingTime: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "results.db")
	st, err := store.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := ts.GetDefaultClient()
	w, err := workerhost.New(c, workerhost.Config{Store: st, Getenv: func(string) string { return "" },
		SimURL: hs.URL + "/v1", OutputRoot: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &cancelStack{ts: ts, client: c, store: st, storePath: path, sim: s, dir: dir}
}

// args are the connection flags of a starter command against the stack, with the workers' results store.
func (s *cancelStack) args(more ...string) []string {
	return append(s.argsNoStore(more...), "--store", s.storePath)
}

// argsNoStore are the connection flags alone: the starter cannot read the workers' results store.
func (s *cancelStack) argsNoStore(more ...string) []string {
	return append(more, "--address", s.ts.GetFrontendHostPort(), "--namespace", s.ts.GetDefaultNamespace(),
		"--progress-every", "1s")
}

// runCLIFor is runCLI with a deadline of d.
func runCLIFor(t *testing.T, d time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// slowSpec is the quickstart (1,000 cells) without the response cache, two calls at a time and one pass at a
// time: 50 s of calls on the stack's simulator.
func slowSpec(t *testing.T) *experiment.Spec {
	t.Helper()
	spec, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	spec.Simulator = nil
	spec.Run.MaxConcurrency = 2
	spec.Run.MaxParallelPasses = 1
	spec.DisableCache()
	return spec
}

// pollFor calls cond every 100 ms until it holds, failing the test after d.
func pollFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *cancelStack) status(t *testing.T, id string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := s.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	return d.GetWorkflowExecutionInfo().GetStatus()
}

func (s *cancelStack) records(t *testing.T, id string) []store.Record {
	t.Helper()
	recs, err := s.store.Records(context.Background(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// answered counts the simulator's chat calls whose answers reached the worker.
func (s *cancelStack) answered() int {
	n := 0
	for _, r := range s.sim.Requests() {
		if strings.HasSuffix(r.Endpoint, "/chat/completions") && r.Status == 200 && !r.Lost {
			n++
		}
	}
	return n
}

// quiet waits until the simulator has had no new call for 2 s: the cancelled pass stopped sending.
func (s *cancelStack) quiet(t *testing.T) {
	t.Helper()
	n, since := len(s.sim.Requests()), time.Now()
	pollFor(t, 30*time.Second, "the simulator to get no more calls", func() bool {
		if m := len(s.sim.Requests()); m != n {
			n, since = m, time.Now()
		}
		return time.Since(since) >= 2*time.Second
	})
}

var cancelledRE = regexp.MustCompile(`(?m)^cancelled: (at least )?([\d,]+) of 1,000 cells recorded(.*)$`)

// recordedOf reads a "cancelled: N of 1,000 cells recorded" line: N, whether it is exact (no "at least"), and
// what follows.
func recordedOf(t *testing.T, out string) (n int, exact bool, rest string) {
	t.Helper()
	m := cancelledRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no \"cancelled: N of 1,000 cells recorded\" line in:\n%s", out)
	}
	n, err := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
	if err != nil {
		t.Fatal(err)
	}
	return n, m[1] == "", m[3]
}

// TestCancel runs `starter run` against a Temporal server and cancels its run with `starter cancel` from another
// "terminal": the run ends cancelled, the cells answered before are still recorded, every answer the
// simulator gave is recorded, and both commands say so. Then a batch run: its provider batches are cancelled
// and what they completed is recorded. Then the errors: a run that already ended, an unknown run, a run no
// worker serves, a server that does not answer.
func TestCancel(t *testing.T) {
	s := newCancelStack(t)
	where := s.ts.GetFrontendHostPort() + " namespace " + s.ts.GetDefaultNamespace()

	t.Run("sync", func(t *testing.T) {
		b, err := json.Marshal(slowSpec(t))
		if err != nil {
			t.Fatal(err)
		}
		path := writeSpecFile(t, t.TempDir(), "slow.json", string(b))
		spec, err := specfile.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		id := workflowID(spec)
		type result struct {
			code        int
			out, errOut string
		}
		ran := make(chan result, 1)
		go func() {
			code, out, errOut := runCLIFor(t, 2*time.Minute, s.args("run", path)...)
			ran <- result{code, out, errOut}
		}()
		pollFor(t, time.Minute, "20 cells recorded", func() bool { return len(s.records(t, id)) >= 20 })
		before := s.records(t, id)

		code, out, errOut := runCLIFor(t, 2*time.Minute, s.args("cancel", id)...)
		t.Logf("starter cancel:\n%s%s", out, errOut)
		if code != exitOK {
			t.Fatalf("cancel: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		if !strings.Contains(out, "cancellation of run "+id+" requested on "+where+"\n") {
			t.Errorf("cancel does not say the cancellation was requested on %s:\n%s", where, out)
		}
		n, exact, rest := recordedOf(t, out)
		if rest != "" || !exact {
			t.Errorf("a run without batches, with the store: %q after the count (exact: %v), want nothing, exact", rest, exact)
		}
		if st := s.status(t, id); st != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
			t.Errorf("workflow %s after cancel, want Canceled", st)
		}

		r := <-ran
		if r.code != exitError || !strings.Contains(r.errOut, "run "+id+" was cancelled") {
			t.Errorf("starter run: exit %d, stderr:\n%s\nwant 1 saying the run was cancelled", r.code, r.errOut)
		}

		s.quiet(t)
		after := s.records(t, id)
		if n != len(after) || n < len(before) || n >= 1000 {
			t.Errorf("cancel says %d cells recorded; the store has %d (%d before the cancel) of 1000", n, len(after), len(before))
		}
		if a := s.answered(); a != len(after) {
			t.Errorf("the simulator answered %d calls, %d are recorded", a, len(after))
		}
		got := map[int]store.Record{}
		for _, r := range after {
			got[r.Index] = r
		}
		for _, r := range before {
			if g, ok := got[r.Index]; !ok || g.Status != r.Status || g.OptionID != r.OptionID {
				t.Errorf("cell %d recorded before the cancel as %s %q, after it %+v (present %v)", r.Index, r.Status, r.OptionID, g, ok)
			}
		}
		for _, r := range after {
			if r.Status == store.StatusFailed {
				t.Errorf("cell %d recorded failed (%s: %s): a cancel records only answers", r.Index, r.ErrorClass, r.ErrorMessage)
			}
		}

		// Again: the run already ended, and says how.
		code, out, _ = runCLIFor(t, time.Minute, s.args("cancel", id)...)
		if code != exitOK || !strings.Contains(out, "run "+id+" already ended: cancelled at ") || strings.Contains(out, "requested") {
			t.Errorf("cancelling an ended run: exit %d, stdout:\n%s\nwant 0 saying it already ended cancelled", code, out)
		}
	})

	t.Run("batch", func(t *testing.T) {
		spec := slowSpec(t)
		spec.Run.MaxParallelPasses = 2
		spec.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: 500,
			PollEvery: experiment.Duration(time.Second)}
		in, err := wire.NewInput(spec, "", "")
		if err != nil {
			t.Fatal(err)
		}
		const id = "batch-run"
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: wire.TaskQueue},
			workflows.ExperimentWorkflow, in); err != nil {
			t.Fatal(err)
		}
		// Two passes of 500 cells, one batch each; wait until both have run some of their lines. The workflow's
		// progress has a batch's counts as of its last status change (in_progress, when few lines have run): the
		// lines that run while it stays in progress show in its AwaitBatch heartbeat, which readProgress adds, as
		// `starter status` shows them.
		pollFor(t, time.Minute, "two batches under way", func() bool {
			p, err := readProgress(ctx, s.client, nil, id)
			if err != nil || len(p.batches) != 2 {
				return false
			}
			for _, b := range p.batches {
				if b.Done < 10 {
					return false
				}
			}
			return true
		})

		// Without the results store: the count comes from the workflow's progress and the batches'.
		code, out, errOut := runCLIFor(t, 2*time.Minute, s.argsNoStore("cancel", id)...)
		t.Logf("starter cancel:\n%s%s", out, errOut)
		if code != exitOK {
			t.Fatalf("cancel: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		n, exact, rest := recordedOf(t, out)
		if rest != ", 2 provider batches cancelled" || exact || !strings.Contains(out, "--store") {
			t.Errorf("after the count: %q (exact: %v), want \", 2 provider batches cancelled\", not exact, naming --store", rest, exact)
		}
		if st := s.status(t, id); st != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
			t.Errorf("workflow %s after cancel, want Canceled", st)
		}
		bs := s.sim.Batches()
		ran := 0
		for _, b := range bs {
			if b.Status != "cancelled" {
				t.Errorf("batch %s is %s at the provider, want cancelled", b.ID, b.Status)
			}
			ran += len(b.Ran)
		}
		recs := s.records(t, id)
		if len(bs) != 2 || ran < 20 || n != ran || len(recs) != ran {
			t.Errorf("%d batches ran %d lines; cancel says %d cells recorded, the store has %d; want 2 batches, the same count",
				len(bs), ran, n, len(recs))
		}
	})

	t.Run("unknown run", func(t *testing.T) {
		code, out, errOut := runCLIFor(t, time.Minute, s.args("cancel", "no-such-run")...)
		if code != exitError || !strings.Contains(errOut, "no run named no-such-run on "+where) {
			t.Errorf("exit %d, stdout %q, stderr %q; want 1 and \"no run named no-such-run on %s\"", code, out, errOut, where)
		}
	})

	t.Run("no worker", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		in, err := wire.NewInput(slowSpec(t), "", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "unserved", TaskQueue: "nobody-polls"},
			workflows.ExperimentWorkflow, in); err != nil {
			t.Fatal(err)
		}
		code, out, _ := runCLIFor(t, time.Minute, s.args("cancel", "unserved", "--wait", "0")...)
		if code != exitOK || !strings.Contains(out, "requested") || !strings.Contains(out, "not waiting (--wait 0)") {
			t.Errorf("--wait 0: exit %d, stdout:\n%s\nwant 0, requested and not waiting", code, out)
		}
		code, out, _ = runCLIFor(t, time.Minute, s.args("cancel", "unserved")...)
		if code != exitOK || !strings.Contains(out, "no worker polls task queue nobody-polls") {
			t.Errorf("no worker: exit %d, stdout:\n%s\nwant 0 saying no worker polls the task queue", code, out)
		}
		if st := s.status(t, "unserved"); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Errorf("a run no worker serves is %s, want still Running", st)
		}
	})
}

// TestCancelServerUnreachable: a server that does not answer is named in the error.
func TestCancelServerUnreachable(t *testing.T) {
	code, _, errOut := runCLIFor(t, time.Minute, "cancel", "some-run", "--address", "127.0.0.1:1")
	if code != exitError || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want 1 naming the address", code, errOut)
	}
}

func TestCancelHelp(t *testing.T) {
	code, out, _ := runCLI(t, "cancel", "--help")
	for _, want := range []string{"cancel ID", "--wait duration", "--address", "Exit codes", "already ended"} {
		if !strings.Contains(out, want) {
			t.Errorf("cancel --help lacks %q:\n%s", want, out)
		}
	}
	if code != exitOK {
		t.Errorf("cancel --help: exit %d", code)
	}
}
