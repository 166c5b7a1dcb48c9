package tests

import (
	"context"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workflows"
)

var historyDir = flag.String("record-histories", "", "write the history of each unhappy-path run into this directory (workflows/testdata) for the replay tests")

// TestUnhappyPathRuns runs the workflow through the paths a replay must survive: retries after rate limits, a
// stop by on_error=raise, a stop by the budget, and a model given up after a quota error. Each run must end as
// designed; with -record-histories their histories become the replay tests' data.
func TestUnhappyPathRuns(t *testing.T) {
	cases := []struct {
		name  string
		cfg   sim.Config
		spec  func() experiment.Spec
		check func(t *testing.T, res wire.Result)
		// signalled says the run's passes must have signalled an outage to the workflow.
		signalled bool
	}{{
		name: "rate-limited",
		// Most calls get 429s: walls of them open the endpoint's breaker, and the passes wait them out inside their
		// attempts (an earlier release ended the attempts; its recorded history still replays).
		cfg: sim.Config{Faults: sim.Faults{RateLimit: 0.85}, FaultSeed: 7},
		spec: func() experiment.Spec {
			s := gridSpec(1, 1, 3, 4)
			s.Run.MaxConcurrency = 8
			return s
		},
		check: func(t *testing.T, res wire.Result) {
			if res.Summary.OK+res.Summary.Unparsed != 12 {
				t.Errorf("summary %+v, want every cell answered", res.Summary)
			}
		},
	}, {
		name: "outage",
		// The provider is down for 3 s from its 20th call on: the breaker opens, the passes signal the workflow,
		// probe, and finish when it is back.
		cfg: sim.Config{Latency: sim.Latency{Fixed: 5 * time.Millisecond}, Outages: []sim.Outage{{After: 10 * time.Millisecond,
			For: 3 * time.Second, Status: 503}}},
		spec: func() experiment.Spec {
			s := gridSpec(1, 2, 10, 4)
			s.Run.MaxConcurrency = 4
			s.Run.MaxAttempts = 2
			return s
		},
		check: func(t *testing.T, res wire.Result) {
			if res.Summary.Failed != 0 {
				t.Errorf("summary %+v, want every cell answered after the outage", res.Summary)
			}
		},
		signalled: true,
	}, {
		name: "raise",
		cfg:  sim.Config{Faults: sim.Faults{ServerError500: 0.3}, FaultSeed: 3},
		spec: func() experiment.Spec {
			s := gridSpec(1, 3, 4, 4)
			s.Run.OnError = experiment.OnErrorRaise
			s.Run.MaxAttempts = 1
			s.Run.MaxParallelPasses = 1
			return s
		},
		check: func(t *testing.T, res wire.Result) {
			if res.Stopped == "" || res.Summary.Failed == 0 {
				t.Errorf("result %+v, want a run stopped by on_error=raise", res)
			}
		},
	}, {
		name: "budget",
		cfg:  sim.Config{},
		spec: func() experiment.Spec {
			s := gridSpec(1, 4, 4, 4)
			s.Models[0].Price = &experiment.Price{InputPerMTok: 1000, OutputPerMTok: 1000}
			s.BudgetUSD = usage.Dollars(1)
			s.Run.MaxParallelPasses = 1
			return s
		},
		check: func(t *testing.T, res wire.Result) {
			if res.Stopped == "" || res.Summary.Failed == 0 {
				t.Errorf("result %+v, want a run stopped by the budget", res)
			}
		},
	}, {
		name: "quota",
		cfg:  sim.Config{Faults: sim.Faults{Quota: 0.2}, FaultSeed: 5},
		spec: func() experiment.Spec {
			s := gridSpec(1, 3, 4, 4)
			s.Run.MaxParallelPasses = 1
			return s
		},
		check: func(t *testing.T, res wire.Result) {
			if res.Summary.Failed == 0 || len(res.Summary.Errors) == 0 {
				t.Errorf("summary %+v, want the model given up with its quota error", res.Summary)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, c.cfg)
			id := "history-" + c.name
			res := s.run(t, id, c.spec())
			c.check(t, res)
			if c.signalled && signals(t, s.client, id) == 0 {
				t.Errorf("no pass of %s signalled an outage; the case must exercise the outage path", id)
			}
			if *historyDir != "" {
				writeHistory(t, s.client, id, filepath.Join(*historyDir, c.name+".json"))
			}
		})
	}
}

// TestContinuedRunHistory runs a grid of more passes than one workflow run launches, so it continues as new.
func TestContinuedRunHistory(t *testing.T) {
	s := newStack(t, sim.Config{})
	spec := gridSpec(1, 1, 520, 1)
	spec.Run.ChunkSize = 1 // one pass per cell: 520 passes
	spec.Run.MaxParallelPasses = 16
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "history-continued", TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, specInput(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	first := run.GetRunID()
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.Cells != 520 || res.Summary.OK+res.Summary.Unparsed != 520 {
		t.Fatalf("summary %+v, want 520 cells answered", res.Summary)
	}
	// The first run of the chain ended by continuing as new.
	desc, err := s.client.DescribeWorkflowExecution(ctx, "history-continued", first)
	if err != nil {
		t.Fatal(err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus().String(); st != "ContinuedAsNew" {
		t.Fatalf("first run ended %s, want ContinuedAsNew", st)
	}
	if *historyDir != "" {
		writeHistoryRun(t, s.client, "history-continued", first, filepath.Join(*historyDir, "continued.json"))
	}
}

// signals counts the outage signals in the history of workflow id.
func signals(t *testing.T, c client.Client, id string) int {
	t.Helper()
	iter := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == wire.SignalOutage {
			n++
		}
	}
	return n
}

// TestPausedRunHistory pauses a run of three passes, one at a time, as it starts (the signal `starter pause`
// sends), holds it paused until the pass it may have launched has finished and a second more, then resumes it:
// nothing is called while it is paused, and once resumed it completes every cell. With -record-histories its
// history is the replay tests' paused.json.
func TestPausedRunHistory(t *testing.T) {
	s := newStack(t, sim.Config{Latency: sim.Latency{Fixed: 20 * time.Millisecond}})
	spec := gridSpec(1, 3, 4, 4)
	spec.Run.MaxParallelPasses = 1
	spec.Run.MaxConcurrency = 2
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const id = "history-paused"
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, specInput(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.client.SignalWorkflow(ctx, id, "", wire.SignalPause, wire.Pause{Paused: true, By: "the test"}); err != nil {
		t.Fatal(err)
	}
	var p wire.Progress
	poll(t, 30*time.Second, 20*time.Millisecond, "the run paused, no pass running", func() bool {
		v, err := s.client.QueryWorkflow(ctx, id, "", wire.QueryProgress)
		if err != nil {
			return false
		}
		p = wire.Progress{}
		return v.Get(&p) == nil && p.Paused != nil && p.PassesRunning == 0
	})
	counts := func() int {
		n, err := s.store.Counts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return n.Records
	}
	before := counts()
	time.Sleep(time.Second) // a bounded look for calls that must not come: a pass takes 160 ms here
	if after := counts(); after != before || p.PassesDone > 1 {
		t.Fatalf("while paused: %d cells recorded, then %d; %d passes done; want nothing started after the pause", before, after, p.PassesDone)
	}
	if err := s.client.SignalWorkflow(ctx, id, "", wire.SignalPause, wire.Pause{Paused: false, By: "the test"}); err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.OK+res.Summary.Unparsed != spec.NumCells() {
		t.Errorf("summary %+v, want every cell answered once resumed", res.Summary)
	}
	if *historyDir != "" {
		writeHistory(t, s.client, id, filepath.Join(*historyDir, "paused.json"))
	}
}
