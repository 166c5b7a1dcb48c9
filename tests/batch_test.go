package tests

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workerhost"
	"github.com/silicolab/silico/workflows"
)

func rowsOf(t *testing.T, dir string) []results.Row {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []results.Row
	if err := results.ReadJSONL(f, func(r results.Row) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return rows
}

// batchWorker starts a worker that runs batch mode on the stack.
func (s *stack) batchWorker(t *testing.T) func() {
	t.Helper()
	return s.batchWorkerEnv(t, func(string) string { return "" })
}

// batchWorkerEnv is batchWorker with getenv as the worker's environment.
func (s *stack) batchWorkerEnv(t *testing.T, getenv func(string) string) func() {
	t.Helper()
	return s.batchWorkerWith(t, getenv, nil)
}

// batchWorkerWith is batchWorkerEnv with clk as the activities' clock (nil: the real one).
func (s *stack) batchWorkerWith(t *testing.T, getenv func(string) string, clk ratelimit.Clock) func() {
	t.Helper()
	w, err := workerhost.New(s.client, workerhost.Config{Store: s.store, Getenv: getenv,
		SimURL: s.simURL, OutputRoot: s.out, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w.Stop
}

// checkTwoSnapshots checks that res's rows name the served models a simulator with a SnapshotChange from seed
// from sent: every answered row one, the rows of the seeds below from one snapshot, the others another; and that
// its summary warns of the two.
func checkTwoSnapshots(t *testing.T, name string, rows []results.Row, res wire.Result, from int64) {
	t.Helper()
	before, after := map[string]int{}, map[string]int{}
	for _, r := range rows {
		if r.Status == "failed" {
			continue
		}
		if r.ServedModel == "" {
			t.Errorf("%s: row %d has no served model", name, r.Index)
		}
		if r.Seed < from {
			before[r.ServedModel]++
		} else {
			after[r.ServedModel]++
		}
	}
	if len(before) != 1 || len(after) != 1 {
		t.Errorf("%s: served models %v before seed %d, %v from it; want one snapshot each, two in all", name, before, from, after)
	}
	for m := range before {
		if after[m] > 0 {
			t.Errorf("%s: snapshot %s served both", name, m)
		}
	}
	if w := res.Summary.Warnings; len(w) != 1 || !strings.Contains(w[0], "was answered by 2 served models") {
		t.Errorf("%s: warnings %q, want the two served models'", name, w)
	}
}

// batchGrid is gridSpec in batch mode, chunks of at most maxRequests, polled every second.
func batchGrid(maxRequests int) experiment.Spec {
	s := gridSpec(1, 2, 6, 5) // 2 passes of 30 cells
	// The simulator's snapshot change goes by the seed a request carries: one seed per (model, seed) pass here.
	off := false
	s.Run.SeedPerCell = &off
	s.Run.Cache = experiment.CacheOff
	s.Models[0].Price = &experiment.Price{InputPerMTok: 1, OutputPerMTok: 2}
	s.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: maxRequests,
		PollEvery: experiment.Duration(time.Second)}
	return s
}

// TestBatchRunOnTemporal runs a grid synchronously and in batch mode on a Temporal server: the same cell
// columns at half the cost, one batch per chunk, every cell run once. With -record-histories its history is the
// replay test's batch.json.
func TestBatchRunOnTemporal(t *testing.T) {
	// Batches take two seconds, so the history has polls on timers. Seed 101 gets a second snapshot, which the
	// cell columns of both runs must name alike (and seed 100 the first).
	s := newStackWorkers(t, sim.Config{Batch: sim.BatchConfig{ProcessingTime: 2 * time.Second},
		SnapshotChange: &sim.SnapshotChange{FromSeed: 101}}, 0)
	s.batchWorker(t)
	syncSpec := batchGrid(12)
	syncSpec.Models[0].Batch = nil
	syncRes := s.run(t, "sync", syncSpec)
	batchRes := s.run(t, "batch", batchGrid(12))
	got, want := rowsOf(t, batchRes.OutputDir), rowsOf(t, syncRes.OutputDir)
	if len(got) != 60 || len(want) != 60 {
		t.Fatalf("%d batch rows, %d sync rows, want 60 each", len(got), len(want))
	}
	for i := range got {
		// cost_usd is a fact of the cell at its price: the batch price is half.
		// Each is rounded once to the picodollar, so the halves may differ by that rounding.
		if d := got[i].CostUSD - want[i].CostUSD/2; d < -1 || d > 1 || want[i].CostUSD == 0 {
			t.Errorf("row %d: cost %v, sync %v", i, got[i].CostUSD, want[i].CostUSD)
		}
		got[i].CostUSD, want[i].CostUSD = 0, 0
		if g, w := results.CellColumns(got[i]), results.CellColumns(want[i]); !reflect.DeepEqual(g, w) {
			t.Errorf("row %d:\n batch %v\n  sync %v", i, g, w)
		}
	}
	checkTwoSnapshots(t, "sync", want, syncRes, 101)
	checkTwoSnapshots(t, "batch", got, batchRes, 101)
	if got, want := batchRes.Summary.CostUSD.Float(), syncRes.Summary.CostUSD.Float()/2; want == 0 || got < want*0.999999 || got > want*1.000001 {
		t.Errorf("batch cost %v, sync %v: want half", got, syncRes.Summary.CostUSD)
	}
	if got := batchRes.Summary.BatchSavedUSD; math.Abs((got-batchRes.Summary.CostUSD).Float()) > 1e-6 || syncRes.Summary.BatchSavedUSD != 0 {
		t.Errorf("batch_saved_usd %v of a run costing %v (sync run: %v), want the same as its cost", got, batchRes.Summary.CostUSD, syncRes.Summary.BatchSavedUSD)
	}
	bs := s.sim.Batches()
	if len(bs) != 6 { // 30 cells a pass, chunks of 12, 12, 6
		t.Errorf("%d batches, want 6", len(bs))
	}
	ran := map[string]int{}
	for _, b := range bs {
		for _, id := range b.Ran {
			ran[id]++
		}
	}
	for id, n := range ran {
		if n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
	if len(ran) != 60 {
		t.Errorf("%d cells ran, want 60", len(ran))
	}
	if *historyDir != "" {
		writeHistory(t, s.client, "batch", filepath.Join(*historyDir, "batch.json"))
	}
}

// TestBatchRunSurvivesWorkerRestart: the worker stops while its batches run and another takes over; the run
// ends with one batch per chunk and every cell once.
func TestBatchRunSurvivesWorkerRestart(t *testing.T) {
	s := newStackWorkers(t, sim.Config{Batch: sim.BatchConfig{ProcessingTime: 4 * time.Second}}, 0)
	stop := s.batchWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "restart", TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, specInput(t, batchGrid(12)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(s.sim.Batches()) < 6 {
		if time.Now().After(deadline) {
			t.Fatalf("%d batches created within a minute, want 6", len(s.sim.Batches()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	s.batchWorker(t)
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.Cells != 60 || res.Summary.OK+res.Summary.Unparsed != 60 {
		t.Errorf("summary %+v, want 60 cells answered", res.Summary)
	}
	bs := s.sim.Batches()
	if len(bs) != 6 {
		t.Errorf("%d batches after the restart, want still 6", len(bs))
	}
	n := 0
	for _, b := range bs {
		n += len(b.Ran)
	}
	if n != 60 {
		t.Errorf("%d requests ran, want 60", n)
	}
}

// loseFirstCreate puts the simulator behind a handler that creates the first Anthropic message batch and then
// drops the connection instead of answering: the batch exists, and the worker's attempt never learns its id.
type loseFirstCreate struct {
	next http.Handler
	lost atomic.Int32
}

func (l *loseFirstCreate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages/batches" || !l.lost.CompareAndSwap(0, 1) {
		l.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	l.next.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		panic(fmt.Sprintf("the create failed: %d %s", rec.Code, rec.Body))
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	_ = conn.Close()
}

// TestAnthropicBatchRunOnTemporal runs the grid with a model of provider anthropic on the simulator's Anthropic
// API, synchronously (/v1/messages) and in batch mode (Message Batches), on a Temporal server: the same cell
// columns at half the cost, one batch per chunk and every request run once, although the first create's answer
// is lost (the submission is attempted again, and adopts the batch it made) and both passes have chunks of one
// size.
func TestAnthropicBatchRunOnTemporal(t *testing.T) {
	lose := &loseFirstCreate{}
	// Anthropic's requests carry no seed, so the snapshot change from seed 101 never applies: one served model.
	s := newStackWrapped(t, sim.Config{Batch: sim.BatchConfig{ProcessingTime: 2 * time.Second},
		SnapshotChange: &sim.SnapshotChange{FromSeed: 101}}, 0,
		func(h http.Handler) http.Handler { lose.next = h; return lose })
	const key = "ant-PLAIN-SECRET-0123456789" // no key pattern: only exact redaction would hide it
	s.batchWorkerEnv(t, func(k string) string {
		if k == experiment.DefaultAnthropicKeyEnv {
			return key
		}
		return ""
	})
	anthropic := func(spec experiment.Spec) experiment.Spec {
		spec.Models[0].Provider, spec.Models[0].BaseURL = experiment.ProviderAnthropic, s.simURL
		spec.Models[0].APIKeyEnv = experiment.DefaultAnthropicKeyEnv
		return spec
	}
	syncSpec := anthropic(batchGrid(12))
	syncSpec.Models[0].Batch = nil
	syncRes := s.run(t, "sync", syncSpec)
	if n := len(s.sim.Batches()); n != 0 {
		t.Fatalf("the synchronous run made %d batches", n)
	}
	batchRes := s.run(t, "batch", anthropic(batchGrid(12)))
	if lose.lost.Load() != 1 {
		t.Fatal("no create answer was lost: the test did not test a lost create")
	}
	got, want := rowsOf(t, batchRes.OutputDir), rowsOf(t, syncRes.OutputDir)
	if len(got) != 60 || len(want) != 60 {
		t.Fatalf("%d batch rows, %d sync rows, want 60 each", len(got), len(want))
	}
	for i := range got {
		if math.Abs((got[i].CostUSD-want[i].CostUSD/2).Float()) > 1e-12 || want[i].CostUSD == 0 || got[i].Status != "ok" {
			t.Errorf("row %d: %s at cost %v, sync %v", i, got[i].Status, got[i].CostUSD, want[i].CostUSD)
		}
		got[i].CostUSD, want[i].CostUSD = 0, 0
		if g, w := results.CellColumns(got[i]), results.CellColumns(want[i]); !reflect.DeepEqual(g, w) {
			t.Errorf("row %d:\n batch %v\n  sync %v", i, g, w)
		}
	}
	for _, rows := range [][]results.Row{got, want} {
		for _, r := range rows {
			if r.ServedModel != "sim-0"+sim.DefaultServedModelSuffix || r.SystemFingerprint != "" {
				t.Fatalf("row %d served by %q %q, want the first snapshot without a fingerprint", r.Index, r.ServedModel, r.SystemFingerprint)
			}
		}
	}
	if len(syncRes.Summary.Warnings)+len(batchRes.Summary.Warnings) != 0 {
		t.Errorf("warnings %q, %q; want none for one served model", syncRes.Summary.Warnings, batchRes.Summary.Warnings)
	}
	if got, want := batchRes.Summary.CostUSD.Float(), syncRes.Summary.CostUSD.Float()/2; want == 0 || got < want*0.999999 || got > want*1.000001 {
		t.Errorf("batch cost %v, sync %v: want half", got, syncRes.Summary.CostUSD)
	}
	bs := s.sim.Batches()
	if len(bs) != 6 { // 30 cells a pass, chunks of 12, 12, 6
		t.Errorf("%d batches, want 6", len(bs))
	}
	ran := map[string]int{}
	for _, b := range bs {
		if b.Format != sim.BatchAnthropic {
			t.Errorf("batch %s of format %s, want Anthropic's", b.ID, b.Format)
		}
		for _, id := range b.Ran {
			ran[id]++
		}
	}
	for id, n := range ran {
		if n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
	if len(ran) != 60 {
		t.Errorf("%d requests ran, want 60", len(ran))
	}
	// The history holds the submissions' intents (what the retry after the lost create adopted by), never the key.
	var hist bytes.Buffer
	for _, id := range []string{"sync", "batch"} {
		iter := s.client.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			b, err := proto.Marshal(ev) // payloads as they are, not base64
			if err != nil {
				t.Fatal(err)
			}
			hist.Write(b)
		}
	}
	if n := bytes.Count(hist.Bytes(), []byte(`"intent":`)); n != 6 {
		t.Errorf("%d submissions with an intent in the history, want 6", n)
	}
	if bytes.Contains(hist.Bytes(), []byte("SECRET")) {
		t.Error("the key is in the history")
	}
}

// TestBatchBudgetOnTemporal runs a grid in batch mode on a Temporal server with a budget_usd that pays for each
// pass's first chunk and half its second: both passes send their first batch, a pass whose next chunk does not
// fit its share stops itself (the other goes on within its own), the cells not sent are recorded BudgetExhausted,
// and the run costs less than its budget. With -record-histories its history is the replay test's
// batch-budget.json (a run behind wire.ChangeBatchBudgetPerPass).
func TestBatchBudgetOnTemporal(t *testing.T) {
	s := newStackWorkers(t, sim.Config{Batch: sim.BatchConfig{ProcessingTime: 2 * time.Second}}, 0)
	s.batchWorker(t)
	spec := batchGrid(12) // chunks of 12, 12 and 6 in each of 2 passes
	tok, err := llm.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	worst := func(from, to int) usage.USD { return experimenttest.WorstBatchCost(t, spec, tok, from, to) }
	var share usage.USD
	for _, p := range spec.Passes() {
		share = max(share, worst(p.Start, p.Start+12)+worst(p.Start+12, p.Start+24)/2)
	}
	spec.BudgetUSD = 2 * share
	res := s.run(t, "batch-budget", spec)
	first := map[string]bool{} // the passes that sent their first chunk (metadata silico_pass names a pass)
	for _, b := range s.sim.Batches() {
		if b.Metadata["silico_chunk"] == "0" {
			first[b.Metadata["silico_pass"]] = true
		}
	}
	if len(first) != 2 {
		t.Errorf("the first chunks of passes %v were sent, want both passes'", slices.Sorted(maps.Keys(first)))
	}
	rows := rowsOf(t, res.OutputDir)
	answered, exhausted := 0, 0
	for _, r := range rows {
		switch {
		case r.Status != "failed":
			answered++
		case r.ErrorClass == errclass.BudgetExhausted:
			exhausted++
		default:
			t.Errorf("cell %s: %s", r.CellID, r.ErrorClass)
		}
	}
	if len(rows) != 60 || answered < 24 || exhausted == 0 {
		t.Errorf("%d rows: %d answered, %d %s; want both first chunks answered and the rest recorded so",
			len(rows), answered, exhausted, errclass.BudgetExhausted)
	}
	if res.Stopped == "" || res.Summary.CostUSD <= 0 || res.Summary.CostUSD > spec.BudgetUSD {
		t.Errorf("stopped %q, cost $%v of a budget of $%v: want a stop and a cost within the budget", res.Stopped, res.Summary.CostUSD, spec.BudgetUSD)
	}
	if *historyDir != "" {
		writeHistory(t, s.client, "batch-budget", filepath.Join(*historyDir, "batch-budget.json"))
	}
}
