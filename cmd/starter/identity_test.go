package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/devserver"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// The quickstart as release 36baa1b resolved it (before run.seed_per_cell existed), recorded with that release's
// specfile.Load and Spec.Canonical, and the run id it gave it. This release resolves the file with
// seed_per_cell: true, whose hash is another.
const (
	quickstart36baa1b   = "testdata/earlier/quickstart-36baa1b.json"
	quickstart36baa1bID = "silico-ipip-50-quickstart-6f4fcd4f292c"
)

// TestQuickstartKeepsItsEarlierRunID: the quickstart's earlier form is byte for byte the spec release 36baa1b
// resolved and saved, so it has that release's run id.
func TestQuickstartKeepsItsEarlierRunID(t *testing.T) {
	spec, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	if workflowID(spec) == quickstart36baa1bID {
		t.Fatalf("this release gives the quickstart the id %s of 36baa1b: the test no longer shows a changed default", quickstart36baa1bID)
	}
	forms, err := earlierForms(spec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(quickstart36baa1b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range forms {
		if f.id == quickstart36baa1bID {
			if !bytes.Equal(f.canonical, want) {
				t.Errorf("the earlier form has 36baa1b's id but not its spec:\n got %s\nwant %s", f.canonical, want)
			}
			return
		}
	}
	t.Fatalf("no earlier form of the quickstart has 36baa1b's run id %s: %+v", quickstart36baa1bID, forms)
}

// TestEarlierReleaseRunGoesOn: a quickstart run that release 36baa1b started in this directory and left
// running (its spec saved without run.seed_per_cell, 100 cells recorded, its workflow on the shared task queue
// with no worker, as a kill -9 leaves it), then `starter run experiment.yaml` under this release: the command
// goes on with that run (moved to its own queue) rather than starting a new one, asks only its 900 cells
// without a record, sends them the seeds that run was started with (the pass's seed, not one per cell), and
// the store holds that one run, completed.
func TestEarlierReleaseRunGoesOn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 900 cells")
	}
	dir := copyQuickstart(t)
	state := filepath.Join(dir, defaultStateDir)
	saved, err := os.ReadFile(quickstart36baa1b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(state, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	digest, err := activities.SaveCanonical(ctx, st, quickstart36baa1bID, saved)
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.Record
	for i := range 100 {
		recs = append(recs, store.Record{Index: i, Status: store.StatusOK, OptionID: "3", Raw: "3. Neutral", PromptTokens: 90,
			CompletionTokens: 2, CostUSD: usage.Dollars(0.0000147), LatencyMS: 300, Attempts: 1, Tries: 1, FinishReason: "stop"})
	}
	if err := st.Put(ctx, quickstart36baa1bID, recs); err != nil {
		t.Fatal(err)
	}
	if err := st.SetRunState(ctx, quickstart36baa1bID, store.RunRunning, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Its workflow, as that release's starter left it: on the shared queue, which no worker serves now.
	srv, err := devserver.Start(ctx, devserver.Options{StateDir: state, UIPort: -1, SearchAttributes: wire.SearchAttributes()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendHostPort(), Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: quickstart36baa1bID, TaskQueue: wire.TaskQueue},
		wire.WorkflowType, wire.Input{RunID: quickstart36baa1bID, SpecDigest: digest, Output: filepath.Join(dir, "out", quickstart36baa1bID)})
	c.Close()
	if stopErr := srv.Stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runStarterIn(t, dir, "run", "experiment.yaml", "--sim-request-log", "req.jsonl", "--port", "0", "--ui-port", "0")
	if code != exitOK || !strings.Contains(out, "run "+quickstart36baa1bID) || !strings.Contains(out, "Done: 1000 cells") {
		t.Fatalf("starter run experiment.yaml: exit %d; want run %s finished\n%s\n%s", code, quickstart36baa1bID, out, errOut)
	}
	if !strings.Contains(errOut, "started by an earlier release") || !strings.Contains(errOut, "run.seed_per_cell") {
		t.Errorf("the command did not say it goes on with an earlier release's run, and why:\n%s", errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "req.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 900 {
		t.Errorf("%d requests, want the 900 cells without a record", len(lines))
	}
	for _, l := range lines {
		var r struct {
			Seed int64 `json:"seed"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Seed != 1 && r.Seed != 2 {
			t.Fatalf("a cell was sent seed %d: the run was started with a seed per pass (1 or 2), and keeps it\n%s", r.Seed, l)
		}
	}
	rows := runsByID(t, dir)
	if len(rows) != 1 || rows[quickstart36baa1bID].Status != store.RunCompleted || rows[quickstart36baa1bID].Recorded != 1000 {
		t.Errorf("starter runs: %+v; want the one run of 36baa1b, completed with 1000 cells", rows)
	}
}

// TestSpecDiff names where two resolved specs differ, key by key, with both values, at most the limit.
func TestSpecDiff(t *testing.T) {
	a := []byte(`{"name":"x","models":[{"id":"m","params":{"temperature":0.5}}],"run":{"seed_per_cell":true,"max_attempts":10}}`)
	b := []byte(`{"name":"x","models":[{"id":"m","params":{"temperature":0.7}}],"run":{"max_attempts":10}}`)
	got := specDiff(a, b, 4)
	want := []string{"models[0].params.temperature: 0.5 here, 0.7 there", "run.seed_per_cell: true here, absent there"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("specDiff = %q, want %q", got, want)
	}
	if got := specDiff(a, b, 1); len(got) != 2 || got[1] != "…" {
		t.Errorf("specDiff with limit 1 = %q, want one difference and …", got)
	}
	if got := specDiff(a, a, 4); len(got) != 0 {
		t.Errorf("specDiff of a spec with itself = %q", got)
	}
}
