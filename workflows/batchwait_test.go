package workflows

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/wire"
)

// longBatchSpec is one pass of chunks×requests cells in batch mode on a simulator at url, one chunk per
// requests cells.
func longBatchSpec(url string, chunks, requests int) experiment.Spec {
	s := gridSpec(1, 1, chunks, requests)
	s.Models[0].Provider, s.Models[0].BaseURL, s.Models[0].Name = "openai", url+"/v1", "sim-chat"
	s.Run.Cache = experiment.CacheOff
	s.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: requests}
	return s
}

// scheduled counts what a test environment's workflow scheduled: activity attempts by type, and timers. Each
// is at least 3 history events on a real server (scheduled, started, completed) or 2 (started, fired), besides
// the workflow tasks that wake the workflow for them.
type scheduled struct {
	mu     sync.Mutex
	acts   map[string]int
	timers int
}

func countScheduled(env *testsuite.TestWorkflowEnvironment) *scheduled {
	c := &scheduled{acts: map[string]int{}}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.acts[info.ActivityType.Name]++
	})
	env.SetOnTimerScheduledListener(func(string, time.Duration) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.timers++
	})
	return c
}

// events is the least number of history events the counted commands make.
func (c *scheduled) events() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 2 * c.timers
	for _, k := range c.acts {
		n += 3 * k
	}
	return n
}

func (c *scheduled) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acts[name]
}

// TestDayLongBatchesComplete: 8 chunks whose batches progress every minute for 24 hours (1,440 requests each,
// over a 24-hour processing time) complete in one run, every cell recorded, with a few AwaitBatch per chunk and
// no PollBatch, timer per poll; the simulator and the activities share a clock 7,200 times as fast as the real
// one. The test environment does not keep a history, so the events are counted from what the workflow
// scheduled (tests/batchwait_test.go measures them on a real server).
func TestDayLongBatchesComplete(t *testing.T) {
	const chunks, requests = 8, 1440
	clk := ratelimit.Scaled(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), 7200)
	s, err := sim.New(sim.Config{Now: clk.Now, Batch: sim.BatchConfig{ProcessingTime: 24 * time.Hour, Window: 25 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	st := tempStore(t)
	acts := &activities.Activities{Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir(), Clock: clk}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(5 * time.Minute)
	activities.Register(env, acts)
	c := countScheduled(env)
	started := clk.Now()
	env.ExecuteWorkflow(ExperimentWorkflow, input(t, longBatchSpec(srv.URL, chunks, requests), "day-long"))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.Cells != chunks*requests || res.Summary.OK+res.Summary.Unparsed != chunks*requests {
		t.Errorf("summary %+v, want %d cells answered", res.Summary, chunks*requests)
	}
	if n := len(s.Batches()); n != chunks {
		t.Errorf("%d batches, want %d", n, chunks)
	}
	if took := clk.Now().Sub(started); took < 24*time.Hour {
		t.Errorf("the run took %v of the simulator's time, want the batches' 24 hours", took)
	}
	t.Logf("%d chunks x 24 h: %d AwaitBatch, %d PollBatch, %d timers: at least %d events from them",
		chunks, c.count(wire.AwaitBatch.Name), c.count(wire.PollBatch.Name), c.timers, c.events())
	if n := c.count(wire.AwaitBatch.Name); n == 0 || n > 4*chunks || c.count(wire.PollBatch.Name) != 0 {
		t.Errorf("%d AwaitBatch and %d PollBatch for %d chunks, want at most 4 AwaitBatch per chunk and no PollBatch",
			n, c.count(wire.PollBatch.Name), chunks)
	}
}

// TestTimerLoopGrowsWithTheBatch: the loop of runs recorded before wire.ChangeBatchAwait (DefaultVersion) adds a
// timer and a PollBatch per poll, so its history grows with the batch's duration: an hour of a batch that
// progresses every minute is some 60 polls, four hours four times as many; at 5 events or more a poll, 8 chunks
// of 24 hours would pass Temporal's 51,200. The simulator runs on the test environment's clock here.
func TestTimerLoopGrowsWithTheBatch(t *testing.T) {
	polls := map[time.Duration]int{}
	for _, d := range []time.Duration{time.Hour, 4 * time.Hour} {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.OnGetVersion(wire.ChangeBatchAwait, workflow.DefaultVersion, batchAwaitV1).Return(workflow.DefaultVersion)
		s, err := sim.New(sim.Config{Now: env.Now, Batch: sim.BatchConfig{ProcessingTime: d, Window: d + time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s)
		acts := &activities.Activities{Store: tempStore(t), Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
			OutputRoot: t.TempDir()}
		activities.Register(env, acts)
		c := countScheduled(env)
		env.ExecuteWorkflow(ExperimentWorkflow, input(t, longBatchSpec(srv.URL, 1, int(d/time.Minute)), "timer-loop"))
		srv.Close()
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		polls[d] = c.count(wire.PollBatch.Name)
		t.Logf("1 chunk x %v in the timer loop: %d PollBatch, %d timers: at least %d events from them", d,
			polls[d], c.timers, c.events())
		if c.count(wire.AwaitBatch.Name) != 0 {
			t.Errorf("%d AwaitBatch in the timer loop", c.count(wire.AwaitBatch.Name))
		}
	}
	if polls[time.Hour] < 50 || polls[4*time.Hour] < 3*polls[time.Hour] {
		t.Errorf("polls %v: want about one a minute, growing with the batch's duration", polls)
	}
}
