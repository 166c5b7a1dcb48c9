package workflows

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// TestBatchBudgetIsExact: a batch pass whose chunks' worst cases add up to exactly its share of budget_usd submits
// them all, as whole picodollars add up (wire.ChangeBatchBudgetUSD). Runs recorded before compared float64 sums,
// in which a $0.3 share less $0.1 leaves less than $0.2, and replay so: the second chunk is not sent and the run
// stops with the budget exhausted.
func TestBatchBudgetIsExact(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool
		sent   int
	}{{"exact", false, 2}, {"recorded before", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := gridSpec(1, 1, 2, 2)
			spec.Models[0].Price = &experiment.Price{InputPerMTok: 1, OutputPerMTok: 2}
			spec.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch}
			spec.BudgetUSD = usage.Dollars(0.3)
			costs := []usage.USD{usage.Dollars(0.1), usage.Dollars(0.2)}

			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			if tc.before {
				env.OnGetVersion(wire.ChangeBatchBudgetUSD, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			}
			fails := mockRun(env, tempStore(t))
			var mu sync.Mutex
			var sent []int
			env.OnActivity(a.PlanBatchPass, mockAny, mockAny).Return(func(context.Context, wire.BatchPassInput) (wire.BatchPlan, error) {
				return wire.BatchPlan{Chunks: []experiment.CellSet{experiment.CellsOf(0, 1), experiment.CellsOf(2, 3)},
					Costs: costs, Format: wire.FormatOpenAI}, nil
			})
			env.OnActivity(a.SubmitBatch, mockAny, mockAny).Return(func(_ context.Context, in wire.BatchChunkInput) (wire.BatchInfo, error) {
				mu.Lock()
				defer mu.Unlock()
				sent = append(sent, in.Chunk)
				return wire.BatchInfo{ID: fmt.Sprint("batch-", in.Chunk), Status: wire.BatchStatusCompleted}, nil
			})
			env.OnActivity(a.CollectBatch, mockAny, mockAny).Return(func(_ context.Context, in wire.BatchCollectInput) (wire.BatchCollected, error) {
				return wire.BatchCollected{Recorded: in.Cells.Len(), Usage: usage.Usage{CostUSD: costs[in.Chunk]}}, nil
			})
			env.OnActivity(a.CleanupBatch, mockAny, mockAny).Return(nil)
			env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, "exact"))
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			var res wire.Result
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			stopped := len(*fails) == 1 && (*fails)[0].in.Class == errclass.BudgetExhausted && res.Stopped != ""
			if len(sent) != tc.sent || stopped != (tc.sent < 2) {
				t.Errorf("chunks %v sent, stopped %q, cells recorded %+v; want %d sent and a budget stop only when one was not",
					sent, res.Stopped, *fails, tc.sent)
			}
		})
	}
}
