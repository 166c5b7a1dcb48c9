package tests

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
)

// geminiKey is the worker's Gemini key in these tests: no key pattern, so only exact redaction would hide it.
const geminiKey = "gem-PLAIN-SECRET-0123456789"

// geminiBase is the simulator's Gemini API root for the simulator whose OpenAI-compatible root is simURL.
func geminiBase(simURL string) string { return strings.TrimSuffix(simURL, "/v1") + "/v1beta" }

// geminiQuickstart is the quickstart spec (examples/quickstart) with its model on provider gemini, served by the
// simulator at simURL, in batch mode unless sync: chunks of at most 400 requests, polled every second.
func geminiQuickstart(t *testing.T, simURL string, sync bool) experiment.Spec {
	t.Helper()
	spec, err := specfile.Load(filepath.Join("..", "examples", "quickstart", "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec.Run.Cache = experiment.CacheOff // the batch run must ask the provider, not the sync run's answers
	// The simulator's snapshot_change goes by the seed a request carries: send the spec's seeds as they are.
	off := false
	spec.Run.SeedPerCell = &off
	m := &spec.Models[0]
	m.Provider, m.BaseURL, m.APIKeyEnv = experiment.ProviderGemini, geminiBase(simURL), experiment.DefaultGeminiKeyEnv
	if !sync {
		m.Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: 400,
			PollEvery: experiment.Duration(time.Second)}
	}
	return *spec
}

// TestGeminiBatchRunOnTemporal runs the quickstart with its model on provider gemini, synchronously (Gemini's
// OpenAI-compatible endpoint) and in batch mode (Gemini's Batch API, the simulator's), on a Temporal server: the
// same cell columns at half the cost, one batch per chunk, every request run once, and the key nowhere in the
// histories.
func TestGeminiBatchRunOnTemporal(t *testing.T) {
	s := newStackWorkers(t, sim.Config{Batch: sim.BatchConfig{ProcessingTime: 2 * time.Second},
		SnapshotChange: &sim.SnapshotChange{FromSeed: 2}}, 0) // the quickstart's seeds are 1 and 2
	s.batchWorkerEnv(t, func(k string) string {
		if k == experiment.DefaultGeminiKeyEnv {
			return geminiKey
		}
		return ""
	})
	syncRes := s.run(t, "sync", geminiQuickstart(t, s.simURL, true))
	if n := len(s.sim.Batches()); n != 0 {
		t.Fatalf("the synchronous run made %d batches", n)
	}
	batchRes := s.run(t, "batch", geminiQuickstart(t, s.simURL, false))
	got, want := rowsOf(t, batchRes.OutputDir), rowsOf(t, syncRes.OutputDir)
	if len(got) != 1000 || len(want) != 1000 {
		t.Fatalf("%d batch rows, %d sync rows, want 1000 each", len(got), len(want))
	}
	for i := range got {
		// Each side is rounded once to the picodollar: half the sync row's, within one.
		if d := got[i].CostUSD - want[i].CostUSD/2; d < -1 || d > 1 || want[i].CostUSD == 0 || got[i].Status != "ok" {
			t.Errorf("row %d: %s at cost %v, sync %v", i, got[i].Status, got[i].CostUSD, want[i].CostUSD)
		}
		got[i].CostUSD, want[i].CostUSD = 0, 0
		if g, w := results.CellColumns(got[i]), results.CellColumns(want[i]); !reflect.DeepEqual(g, w) {
			t.Errorf("row %d:\n batch %v\n  sync %v", i, g, w)
		}
	}
	checkTwoSnapshots(t, "sync", want, syncRes, 2)
	checkTwoSnapshots(t, "batch", got, batchRes, 2)
	if got, want := batchRes.Summary.CostUSD, syncRes.Summary.CostUSD/2; want == 0 || got < want*999999/1000000 || got > want*1000001/1000000 {
		t.Errorf("batch cost %v, sync %v: want half", got, syncRes.Summary.CostUSD)
	}
	bs := s.sim.Batches()
	if len(bs) != 4 { // 500 cells a pass (one per seed), chunks of 400 and 100
		t.Errorf("%d batches, want 4", len(bs))
	}
	ran := map[string]int{}
	for _, b := range bs {
		if b.Format != sim.BatchGemini || !strings.HasPrefix(b.Metadata["display_name"], "silico-") {
			t.Errorf("batch %s of format %s named %q, want Gemini's, named by silico", b.ID, b.Format, b.Metadata["display_name"])
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
	if len(ran) != 1000 {
		t.Errorf("%d requests ran, want 1000", len(ran))
	}
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
	if !bytes.Contains(hist.Bytes(), []byte(`"display_name":"silico-`)) {
		t.Error("no batch display name in the history: the test did not look at a batch run's history")
	}
	if bytes.Contains(hist.Bytes(), []byte("SECRET")) {
		t.Error("the Gemini key is in a history")
	}
}
