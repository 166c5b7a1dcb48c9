package tests

import (
	"fmt"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/workerhost"
)

// dayGrid is one pass of chunks×requests cells in batch mode, one chunk per requests cells, polled every
// poll_every's default minute.
func dayGrid(chunks, requests int) experiment.Spec {
	s := gridSpec(1, 1, chunks, requests)
	s.Run.Cache = experiment.CacheOff
	s.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: requests}
	return s
}

// TestBatchHistoryStaysBounded measures the history of runs whose batches progress every minute (one request
// a minute) for an hour or a day, on a real Temporal server: the simulator and the worker share a clock that runs
// a day in 12 s of real time. Runs wait with AwaitBatch (a few activities per batch), so the history is the same
// few hundred events for a batch of an hour or a day: far below Temporal's 51,200, where the timer loop of runs
// recorded before reached 5 events and more per poll (see workflows.TestTimerLoopGrowsWithTheBatch).
func TestBatchHistoryStaysBounded(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	events := map[string]int64{}
	commands := map[string]int{} // the events of what the workflow did: all but its workflow tasks
	for _, c := range []struct {
		chunks int
		d      time.Duration
		factor float64
	}{{8, 24 * time.Hour, 7200}, {8, time.Hour, 600}, {1, time.Hour, 600}} {
		name := fmt.Sprintf("%dx%v", c.chunks, c.d)
		t.Run(name, func(t *testing.T) {
			clk := ratelimit.Scaled(start, c.factor)
			s := newStackWith(t, sim.Config{Now: clk.Now, Batch: sim.BatchConfig{ProcessingTime: c.d, Window: c.d + time.Hour}},
				stackOptions{})
			w, err := workerhost.New(s.client, workerhost.Config{Store: s.store, Getenv: func(string) string { return "" },
				SimURL: s.simURL, OutputRoot: s.out, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			requests := int(c.d / time.Minute)
			res := s.run(t, "bounded", dayGrid(c.chunks, requests))
			if res.Summary.Cells != c.chunks*requests || res.Summary.OK+res.Summary.Unparsed != res.Summary.Cells {
				t.Fatalf("summary %+v, want %d cells answered", res.Summary, c.chunks*requests)
			}
			if took := clk.Now().Sub(start); took < c.d {
				t.Errorf("the run ended %v into the simulator's time, before its batches' %v", took, c.d)
			}
			d, err := s.client.DescribeWorkflowExecution(withTimeout(t, 10*time.Second), "bounded", "")
			if err != nil {
				t.Fatal(err)
			}
			n := d.GetWorkflowExecutionInfo().GetHistoryLength()
			events[name] = n
			it := s.client.GetWorkflowHistory(withTimeout(t, 10*time.Second), "bounded", "", false, 0)
			for it.HasNext() {
				e, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				switch e.GetEventType() {
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED,
					enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED,
					enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				default:
					commands[name]++
				}
			}
			t.Logf("%d chunks x %v, a request a minute: %d history events, %d of them not workflow tasks", c.chunks, c.d, n, commands[name])
			if n >= 2000 {
				t.Errorf("%d history events, want fewer than 2,000", n)
			}
		})
	}
	day, hour := events["8x24h0m0s"], events["8x1h0m0s"]
	if day == 0 || hour == 0 {
		t.Fatalf("counts %v: a run failed", events)
	}
	// What the workflow did (activities, markers) is the same for a day as for an hour; only how many workflow
	// tasks the activities' completions fell into varies with timing (3 events each).
	if d, h := commands["8x24h0m0s"], commands["8x1h0m0s"]; d != h {
		t.Errorf("8 chunks: %d events besides workflow tasks for a day, %d for an hour; want the same", d, h)
	}
	if diff := day - hour; diff < -48 || diff > 48 {
		t.Errorf("8 chunks: %d events for a day, %d for an hour; want a few workflow tasks apart", day, hour)
	}
}

// TestShortBatchCollectedSoon runs a batch that takes 20 s, and one that takes 20.5 s, at the default poll_every of
// a minute, on the real clock: AwaitBatch polls them 5, 10, 15, 20, 25 s after the start (no wait over a quarter of
// the time so far), so each is collected within seconds of its end, not at the first minute (nor at 40 s, as the
// 20.5 s batch was when the first waits doubled). It logs how long the run's batch took from its creation to the
// run's end (docs/performance.md).
func TestShortBatchCollectedSoon(t *testing.T) {
	for _, d := range []time.Duration{20 * time.Second, 20500 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			s := newStackWith(t, sim.Config{Batch: sim.BatchConfig{ProcessingTime: d}}, stackOptions{})
			s.batchWorker(t)
			res := s.run(t, "short", dayGrid(1, 10))
			ended := time.Now()
			if res.Summary.OK+res.Summary.Unparsed != 10 {
				t.Fatalf("summary %+v, want 10 cells answered", res.Summary)
			}
			bs := s.sim.Batches()
			if len(bs) != 1 {
				t.Fatalf("%d batches, want 1", len(bs))
			}
			t.Logf("a %v batch: %v from its creation to the run's end", d, ended.Sub(bs[0].Created).Round(100*time.Millisecond))
		})
	}
}
