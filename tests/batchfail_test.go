package tests

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workflows"
)

// chunkTokens are the input tokens of cells [from, to) of spec, as the simulator counts them against its
// enqueued-token limit.
func chunkTokens(t *testing.T, spec experiment.Spec, from, to int) int {
	t.Helper()
	tok, err := llm.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := from; i < to; i++ {
		msgs, err := spec.Render(spec.Cell(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		n += tok.CountMessages(spec.Models[0].Name, msgs)
	}
	return n
}

// TestBatchTokenLimitOnTemporal: on a Temporal server, under an enqueued-token limit with room for one chunk's
// batch at a time, the chunks whose batches the provider fails with token_limit_exceeded show its reason in the
// run's progress while they wait, and resubmit once the batch in flight ends: every cell is answered once, every
// input is uploaded once, and none of it counted against max_attempts (1 here). With -record-histories its history
// is the replay test's batch-token-limit.json.
func TestBatchTokenLimitOnTemporal(t *testing.T) {
	spec := batchGrid(15) // 2 passes of 30 cells, chunks of 15
	spec.Run.MaxAttempts = 1
	most := 0
	for _, p := range spec.Passes() {
		most = max(most, chunkTokens(t, spec, p.Start, p.Start+15), chunkTokens(t, spec, p.Start+15, p.End))
	}
	s := newStackWorkers(t, sim.Config{Batch: sim.BatchConfig{ProcessingTime: 2 * time.Second, EnqueuedTokens: most * 3 / 2}}, 0)
	s.batchWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "token-limit", TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, specInput(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	// While the first batch runs, the others wait with the provider's reason.
	reason := ""
	for deadline := time.Now().Add(time.Minute); reason == ""; {
		if time.Now().After(deadline) {
			t.Fatal("no batch showed a reason within a minute")
		}
		if v, err := s.client.QueryWorkflow(ctx, "token-limit", "", wire.QueryProgress); err == nil {
			var p wire.Progress
			if v.Get(&p) == nil {
				for _, b := range p.Batches {
					if b.Reason != "" {
						reason = b.Reason
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.HasPrefix(reason, "token_limit_exceeded: Enqueued token limit reached for sim-0") ||
		!strings.Contains(reason, "then resubmitting") && !strings.Contains(reason, "resubmitting at") {
		t.Errorf("reason %q, want the provider's token_limit_exceeded and what the chunk does", reason)
	}
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.Cells != 60 || res.Summary.Failed != 0 {
		t.Errorf("summary %+v, want 60 cells answered", res.Summary)
	}
	bs := s.sim.Batches()
	ran, refused := map[string]int{}, 0
	for _, b := range bs {
		if len(b.Errors) > 0 {
			refused++
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
	if len(ran) != 60 || refused < 3 || len(bs)-refused != 4 {
		t.Errorf("%d cells ran in %d batches, %d refused; want 60 in 4, and the 3 that did not fit at first refused", len(ran), len(bs)-refused, refused)
	}
	uploads := map[string]int{}
	for _, f := range s.sim.Uploads() {
		uploads[f.Name]++
	}
	if len(uploads) != 4 {
		t.Errorf("%d inputs uploaded, want one per chunk", len(uploads))
	}
	for name, n := range uploads {
		if n != 1 {
			t.Errorf("%s uploaded %d times", name, n)
		}
	}
	if *historyDir != "" {
		writeHistory(t, s.client, "token-limit", filepath.Join(*historyDir, "batch-token-limit.json"))
	}
}
