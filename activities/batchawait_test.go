package activities

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/wire"
)

// waitClock is a clock whose waits the test ends: After hands each wait to the test (on waits) and returns the
// channel the test fires.
type waitClock struct {
	waits chan clockWait
	// stop ends every wait not handed over yet at once, so that a test that failed does not leave the activity
	// blocked.
	stop     chan struct{}
	stopOnce sync.Once
}

// halt ends the waits (see stop).
func (c *waitClock) halt() { c.stopOnce.Do(func() { close(c.stop) }) }

type clockWait struct {
	d    time.Duration
	fire chan time.Time
}

func newWaitClock(t *testing.T) *waitClock {
	c := &waitClock{waits: make(chan clockWait), stop: make(chan struct{})}
	t.Cleanup(c.halt)
	return c
}

func (c *waitClock) Now() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
func (c *waitClock) After(d time.Duration) <-chan time.Time {
	w := clockWait{d: d, fire: make(chan time.Time, 1)}
	select {
	case c.waits <- w:
	case <-c.stop:
		w.fire <- time.Time{}
	}
	return w.fire
}

// next is the activity's next wait, which it fires; the test fails when none comes within 10 s.
func (c *waitClock) next(t *testing.T) time.Duration {
	t.Helper()
	select {
	case w := <-c.waits:
		w.fire <- time.Time{}
		return w.d
	case <-time.After(10 * time.Second):
		t.Fatal("the activity did not wait within 10 s")
		return 0
	}
}

// scriptDriver answers the n-th poll with script(n) (n from 1) and counts the polls.
type scriptDriver struct {
	mu     sync.Mutex
	polls  int
	script func(n int) wire.BatchInfo
}

func (d *scriptDriver) Poll(ctx context.Context, id string) (wire.BatchInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.polls++
	info := d.script(d.polls)
	info.ID = id
	return info, nil
}

func (d *scriptDriver) Cancel(context.Context, string) (wire.BatchInfo, error) {
	return wire.BatchInfo{}, errors.New("not cancelled here")
}

func (d *scriptDriver) Cleanup(context.Context, wire.BatchInfo) error {
	return errors.New("not cleaned up here")
}

func (d *scriptDriver) Collect(context.Context, wire.BatchInfo, func(batchformat.Result) error) error {
	return errors.New("not collected here")
}

func (d *scriptDriver) count() int { d.mu.Lock(); defer d.mu.Unlock(); return d.polls }

func batchAt(status wire.BatchStatus, done int) wire.BatchInfo {
	return wire.BatchInfo{ID: "batch_1", Status: status, Counts: wire.BatchCounts{Total: 100, Succeeded: done}}
}

// watch runs watchBatch in a goroutine the test waits for, with its heartbeats appended to beats; result gives
// its outcome once it returned.
func watch(t *testing.T, ctx context.Context, d batchDriver, clk *waitClock, in wire.BatchAwaitInput, beats *[]wire.BatchWatch) (result func() (wire.BatchWatch, error)) {
	t.Helper()
	type out struct {
		w   wire.BatchWatch
		err error
	}
	done := make(chan out, 1)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		w, err := watchBatch(ctx, d, clk, in, wire.BatchWatch{Batch: in.Batch, Polls: in.Polls, Every: in.PollEvery}, false,
			func(w wire.BatchWatch) {
				if beats != nil {
					*beats = append(*beats, w) // read by the test only after result
				}
			})
		done <- out{w, err}
	})
	t.Cleanup(func() {
		cancel()
		clk.halt()
		wg.Wait()
	})
	return func() (wire.BatchWatch, error) {
		t.Helper()
		select {
		case o := <-done:
			return o.w, o.err
		case <-time.After(10 * time.Second):
			t.Fatal("the activity did not return within 10 s")
			return wire.BatchWatch{}, nil
		}
	}
}

// TestAwaitBatchSchedule: a batch just created is polled after 5 s, 10 s, 20 s, 40 s, 80 s, then every
// poll_every while it progresses, backing off to MaxPollEvery while nothing changes and back to poll_every when
// its counts change; the activity returns at the first status change, with the poll count.
func TestAwaitBatchSchedule(t *testing.T) {
	const changeAt, statusAt = 12, 14
	d := &scriptDriver{script: func(n int) wire.BatchInfo {
		switch {
		case n >= statusAt:
			return batchAt(wire.BatchStatusFinalizing, 100)
		case n >= changeAt:
			return batchAt(wire.BatchStatusInProgress, n) // counts change from here
		default:
			return batchAt(wire.BatchStatusInProgress, 0)
		}
	}}
	clk := newWaitClock(t)
	in := wire.BatchAwaitInput{BatchRef: wire.BatchRef{ID: "batch_1"}, Batch: batchAt(wire.BatchStatusInProgress, 0),
		PollEvery: experiment.Duration(time.Minute)}
	var beats []wire.BatchWatch
	result := watch(t, context.Background(), d, clk, in, &beats)
	s, m := time.Second, time.Minute
	want := []time.Duration{
		5 * s, 5 * s, 10 * s, 20 * s, 40 * s, // the first polls: 5, 10, 20, 40 and 80 s after the start
		1 * m, 2 * m, 4 * m, 8 * m, 10 * m, 10 * m, // nothing changes: the interval doubles up to MaxPollEvery
		10 * m, // poll 12 sees the counts change: poll_every again
		1 * m,  // poll 13 changes the counts again
		1 * m,  // poll 14 the status
	}
	for i, w := range want {
		if got := clk.next(t); got != w {
			t.Fatalf("wait %d: %v, want %v (all: %v)", i+1, got, w, want)
		}
	}
	w, err := result()
	if err != nil {
		t.Fatal(err)
	}
	if w.Batch.Status != wire.BatchStatusFinalizing || w.Polls != statusAt || d.count() != statusAt {
		t.Errorf("returned %s after %d polls (%d made), want finalizing after %d", w.Batch.Status, w.Polls, d.count(), statusAt)
	}
	if len(beats) != statusAt {
		t.Fatalf("%d heartbeats, want one per poll (%d)", len(beats), statusAt)
	}
	for i, b := range beats {
		if b.Polls != i+1 || b.Batch.ID != "batch_1" || b.Batch.Counts != d.script(i+1).Counts {
			t.Errorf("heartbeat %d: %+v, want poll %d's batch", i+1, b, i+1)
		}
	}
}

// TestAwaitBatchReturnsOnTerminal: a batch that ends without passing through another status is returned at
// its first poll, and a poll_every shorter than the first wait is the first wait.
func TestAwaitBatchReturnsOnTerminal(t *testing.T) {
	d := &scriptDriver{script: func(int) wire.BatchInfo { return batchAt(wire.BatchStatusCompleted, 100) }}
	clk := newWaitClock(t)
	in := wire.BatchAwaitInput{BatchRef: wire.BatchRef{ID: "batch_1"}, Batch: batchAt(wire.BatchStatusValidating, 0),
		PollEvery: experiment.Duration(time.Second)}
	result := watch(t, context.Background(), d, clk, in, nil)
	if got := clk.next(t); got != time.Second {
		t.Errorf("first wait %v with poll_every 1s, want 1s", got)
	}
	w, err := result()
	if err != nil || w.Batch.Status != wire.BatchStatusCompleted || d.count() != 1 {
		t.Errorf("returned %+v, %v after %d polls; want completed after one", w, err, d.count())
	}
}

// TestAwaitBatchNoBackoffWhileCancelling: a cancelling batch that does not change is polled every 30 s (or
// poll_every when shorter), never less often, until it is cancelled.
func TestAwaitBatchNoBackoffWhileCancelling(t *testing.T) {
	for _, c := range []struct {
		every, want time.Duration
	}{{time.Minute, 30 * time.Second}, {10 * time.Second, 10 * time.Second}} {
		const ends = 8
		d := &scriptDriver{script: func(n int) wire.BatchInfo {
			if n >= ends {
				return batchAt(wire.BatchStatusCancelled, 40)
			}
			return batchAt(wire.BatchStatusCancelling, 40)
		}}
		clk := newWaitClock(t)
		in := wire.BatchAwaitInput{BatchRef: wire.BatchRef{ID: "batch_1"}, Batch: batchAt(wire.BatchStatusCancelling, 40),
			PollEvery: experiment.Duration(c.every), Polls: 20}
		result := watch(t, context.Background(), d, clk, in, nil)
		for i := range ends {
			if got := clk.next(t); got != c.want {
				t.Fatalf("poll_every %v: wait %d is %v, want %v", c.every, i+1, got, c.want)
			}
		}
		if w, err := result(); err != nil || w.Batch.Status != wire.BatchStatusCancelled {
			t.Errorf("returned %+v, %v; want cancelled", w, err)
		}
	}
}

// TestAwaitBatchStopsOnCancel: the end of the activity's context ends its wait, with the context's error.
func TestAwaitBatchStopsOnCancel(t *testing.T) {
	d := &scriptDriver{script: func(int) wire.BatchInfo { return batchAt(wire.BatchStatusInProgress, 1) }}
	clk := newWaitClock(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := wire.BatchAwaitInput{BatchRef: wire.BatchRef{ID: "batch_1"}, Batch: batchAt(wire.BatchStatusInProgress, 0),
		PollEvery: experiment.Duration(time.Minute)}
	result := watch(t, ctx, d, clk, in, nil)
	clk.next(t) // the first poll
	select {
	case <-clk.waits: // the second wait: not fired
	case <-time.After(10 * time.Second):
		t.Fatal("no second wait within 10 s")
	}
	cancel()
	if _, err := result(); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if d.count() != 1 {
		t.Errorf("%d polls, want 1", d.count())
	}
}

// TestAwaitBatchResumesFromHeartbeat: an attempt that follows one with heartbeat details polls at once, and
// goes on from their poll count and interval (here: backed off to 4 minutes, doubled to 8 by an unchanged poll),
// not from the input's.
func TestAwaitBatchResumesFromHeartbeat(t *testing.T) {
	d := &scriptDriver{script: func(n int) wire.BatchInfo {
		if n >= 2 {
			return batchAt(wire.BatchStatusCompleted, 100)
		}
		return batchAt(wire.BatchStatusInProgress, 30)
	}}
	clk := newWaitClock(t)
	a := &Activities{Clock: clk, HeartbeatEvery: time.Hour}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(func(ctx context.Context, in wire.BatchAwaitInput) (wire.BatchWatch, error) {
		return a.awaitBatch(ctx, d, in)
	}, activity.RegisterOptions{Name: "AwaitBatchFake"})
	env.SetHeartbeatDetails(wire.BatchWatch{Batch: batchAt(wire.BatchStatusInProgress, 30), Polls: 9,
		Every: experiment.Duration(4 * time.Minute)})
	var mu sync.Mutex
	var beats []wire.BatchWatch
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var w wire.BatchWatch
		if details.HasValues() && details.Get(&w) == nil {
			mu.Lock()
			beats = append(beats, w)
			mu.Unlock()
		}
	})
	in := wire.BatchAwaitInput{BatchRef: wire.BatchRef{ID: "batch_1"}, Batch: batchAt(wire.BatchStatusInProgress, 0),
		PollEvery: experiment.Duration(time.Minute)}
	type out struct {
		w   wire.BatchWatch
		err error
	}
	done := make(chan out, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		v, err := env.ExecuteActivity("AwaitBatchFake", in)
		var w wire.BatchWatch
		if err == nil {
			err = v.Get(&w)
		}
		done <- out{w, err}
	})
	defer func() {
		clk.halt()
		wg.Wait()
	}()
	if got := clk.next(t); got != 8*time.Minute {
		t.Errorf("wait after the resumed poll %v, want 8m (the heartbeat's 4m, doubled)", got)
	}
	var o out
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the activity did not return within 10 s")
	}
	if o.err != nil || o.w.Batch.Status != wire.BatchStatusCompleted || o.w.Polls != 11 {
		t.Errorf("returned %+v, %v; want completed after 11 polls (9 before the retry)", o.w, o.err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The SDK sends a heartbeat at once and holds the next ones back for a while (each poll's heartbeat is
	// TestAwaitBatchSchedule's): the first is the state the attempt resumed from.
	if len(beats) == 0 || beats[0].Polls != 9 || beats[0].Batch.ID != "batch_1" {
		t.Errorf("heartbeats %+v, want the resumed state first", beats)
	}
}
