package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
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

// scriptDriver answers the n-th poll with script(n) (n from 1), or with fail(n) when that is not nil, and counts
// the polls.
type scriptDriver struct {
	mu     sync.Mutex
	polls  int
	script func(n int) wire.BatchInfo
	fail   func(n int) error
}

func (d *scriptDriver) Poll(ctx context.Context, id string) (wire.BatchInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.polls++
	if d.fail != nil {
		if err := d.fail(d.polls); err != nil {
			return wire.BatchInfo{}, err
		}
	}
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

// TestAwaitBatchSchedule: a batch just created is polled 5, 10, 15, 20 and 25 s after the start, then no wait is
// longer than a quarter of the time waited so far: the waits grow by a quarter while nothing changes, up to
// MaxPollEvery; a poll that sees the counts change brings them back to poll_every; the activity returns at the
// first status change, with the poll count, having heartbeated every poll.
func TestAwaitBatchSchedule(t *testing.T) {
	var changeAt, statusAt int // set once the waits reached MaxPollEvery
	var mu sync.Mutex
	d := &scriptDriver{script: func(n int) wire.BatchInfo {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case statusAt > 0 && n >= statusAt:
			return batchAt(wire.BatchStatusFinalizing, 100)
		case changeAt > 0 && n >= changeAt:
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
	var waits []time.Duration
	waited := time.Duration(0)
	for i := 0; ; i++ {
		got := clk.next(t)
		waits = append(waits, got)
		if i < 5 && got != 5*time.Second {
			t.Fatalf("wait %d: %v, want 5s (all: %v)", i+1, got, waits)
		}
		if limit := max(5*time.Second, waited/4); got > limit || (i > 0 && got < waits[i-1] && changeAt == 0) {
			t.Fatalf("wait %d: %v after %v waited, want the last wait or more, at most %v (all: %v)", i+1, got, waited, limit, waits)
		}
		waited += got
		if changeAt == 0 && got == experiment.MaxPollEvery {
			mu.Lock()
			changeAt = len(waits) + 1 // the next poll sees the counts change, and the one after the status
			statusAt = changeAt + 2
			mu.Unlock()
			continue
		}
		if changeAt > 0 && len(waits) == changeAt+1 {
			if got != time.Minute {
				t.Errorf("wait after the counts changed: %v, want poll_every", got)
			}
		}
		if statusAt > 0 && len(waits) == statusAt {
			break
		}
		if len(waits) > 100 {
			t.Fatalf("the waits never reached MaxPollEvery: %v", waits)
		}
	}
	// Nothing changed for 40 minutes of waits before they reached 10 minutes: a quarter at a time.
	if waited < 40*time.Minute {
		t.Errorf("the waits reached MaxPollEvery after %v", waited)
	}
	w, err := result()
	if err != nil {
		t.Fatal(err)
	}
	if w.Batch.Status != wire.BatchStatusFinalizing || w.Polls != statusAt || d.count() != statusAt || time.Duration(w.Waited) != waited {
		t.Errorf("returned %s after %d polls (%d made) and %v waited, want finalizing after %d and %v",
			w.Batch.Status, w.Polls, d.count(), time.Duration(w.Waited), statusAt, waited)
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

// TestAwaitBatchCollectsSoonAfterTheEnd: whenever a batch ends, its end is seen within a quarter of the time it
// ran (or 5 s): one that ends 20.5 s after its creation, polled at 5, 10, 20 and 40 s when the first waits
// doubled, was collected at 41 s. Batches of one status, ending at times from seconds to a day.
func TestAwaitBatchCollectsSoonAfterTheEnd(t *testing.T) {
	for _, end := range []time.Duration{3 * time.Second, 20500 * time.Millisecond, 95 * time.Second, 17 * time.Minute,
		3*time.Hour + 7*time.Second, 23 * time.Hour} {
		t.Run(end.String(), func(t *testing.T) {
			clk := newWaitClock(t)
			var mu sync.Mutex
			at := time.Duration(0) // the time of the poll being answered
			d := &scriptDriver{script: func(int) wire.BatchInfo {
				mu.Lock()
				defer mu.Unlock()
				if at >= end {
					return batchAt(wire.BatchStatusCompleted, 100)
				}
				return batchAt(wire.BatchStatusInProgress, 0)
			}}
			in := wire.BatchAwaitInput{BatchRef: wire.BatchRef{ID: "batch_1"}, Batch: batchAt(wire.BatchStatusInProgress, 0),
				PollEvery: experiment.Duration(time.Minute)}
			result := watch(t, context.Background(), d, clk, in, nil)
			for {
				mu.Lock()
				ended := at >= end
				mu.Unlock()
				if ended {
					break
				}
				got := clk.next(t)
				mu.Lock()
				at += got
				mu.Unlock()
			}
			w, err := result()
			if err != nil || w.Batch.Status != wire.BatchStatusCompleted {
				t.Fatalf("returned %+v, %v", w, err)
			}
			if late := at - end; late > max(5*time.Second, end/4) {
				t.Errorf("a batch that ended at %v was seen at %v: %v late, want at most %v", end, at, late, max(5*time.Second, end/4))
			}
		})
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
// goes on from their poll count, interval and time waited (here: backed off to 4 minutes after an hour, doubled to
// 8 by an unchanged poll), not from the input's.
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
		Every: experiment.Duration(4 * time.Minute), Waited: experiment.Duration(time.Hour)})
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

// errNoSuchBatch is the error a driver's Poll returns for a batch the provider does not know.
var errNoSuchBatch = fmt.Errorf("retrieve batch batch_1: %w", &llm.Error{Class: errclass.InvalidRequest, Status: http.StatusNotFound,
	Message: "No such batch: batch_1"})

// TestAwaitBatchTakesAMissingBatchAsLost: polls the provider answers 404 do not fail the activity (a gateway may
// fail now and then): they are counted in the heartbeat, with the failure; a poll that finds the batch starts the
// count over; once 5 polls in a row over at least 2 minutes found it missing, the batch is lost, a non-retryable
// failure of class BatchLost.
func TestAwaitBatchTakesAMissingBatchAsLost(t *testing.T) {
	d := &scriptDriver{script: func(int) wire.BatchInfo { return batchAt(wire.BatchStatusInProgress, 0) },
		fail: func(n int) error {
			if n == 3 {
				return nil // found again once
			}
			return errNoSuchBatch
		}}
	clk := newWaitClock(t)
	in := wire.BatchAwaitInput{BatchRef: wire.BatchRef{ID: "batch_1"}, Batch: batchAt(wire.BatchStatusInProgress, 0),
		PollEvery: experiment.Duration(time.Minute)}
	w, beats, waited, err := watchToEnd(t, d, clk, in)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errclass.BatchLost || !app.NonRetryable() ||
		!strings.Contains(app.Message(), "batch batch_1 lost") || !strings.Contains(app.Message(), "No such batch") {
		t.Fatalf("returned %+v, %v; want a non-retryable BatchLost", w, err)
	}
	missing := d.count() - 3 // those after the one that found it
	if missing < 5 || time.Duration(w.Waited-w.MissingFrom) < 2*time.Minute || time.Duration(w.Waited) != waited {
		t.Errorf("lost after %d polls missing over %v (%v waited in all)", missing, time.Duration(w.Waited-w.MissingFrom), waited)
	}
	if beats[1].Missing != 2 || beats[2].Missing != 0 || beats[2].Failure != "" || beats[3].Missing != 1 ||
		!strings.Contains(beats[3].Failure, "No such batch") {
		t.Errorf("heartbeats %+v: want the polls missing counted, and a poll that found it starting over", beats[:4])
	}
	// One poll short of the bound is not lost.
	if lost(wire.BatchWatch{Missing: 4, Waited: experiment.Duration(time.Hour)}) ||
		lost(wire.BatchWatch{Missing: 50, Waited: experiment.Duration(time.Hour), MissingFrom: experiment.Duration(time.Hour - time.Minute)}) {
		t.Error("lost before the bound")
	}
}

// TestAwaitBatchGivesUpAnUnknownState: a batch in a state silico does not know is polled (with the provider's
// word in its heartbeat) for 2 hours of waits, then given up: a non-retryable failure of class BatchStateUnknown
// that names the state. Any known state before then would have ended the wait.
func TestAwaitBatchGivesUpAnUnknownState(t *testing.T) {
	unknown := batchAt(wire.BatchStatusUnknown, 0)
	unknown.State = "JOB_STATE_WAITING_FOR_GODOT"
	d := &scriptDriver{script: func(int) wire.BatchInfo { return unknown }}
	clk := newWaitClock(t)
	in := wire.BatchAwaitInput{BatchRef: wire.BatchRef{ID: "batch_1"}, Batch: unknown, PollEvery: experiment.Duration(time.Minute),
		Polls: 3, Waited: experiment.Duration(20 * time.Second)}
	w, beats, waited, err := watchToEnd(t, d, clk, in)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errclass.BatchStateUnknown || !app.NonRetryable() ||
		!strings.Contains(app.Message(), `"JOB_STATE_WAITING_FOR_GODOT"`) {
		t.Fatalf("returned %+v, %v; want a non-retryable BatchStateUnknown naming the state", w, err)
	}
	if waited < 2*time.Hour || waited > 2*time.Hour+experiment.MaxPollEvery {
		t.Errorf("given up after %v of waits, want 2h", waited)
	}
	if len(beats) == 0 || beats[0].Batch.State != "JOB_STATE_WAITING_FOR_GODOT" {
		t.Errorf("heartbeats do not show the state: %+v", beats)
	}
}

// watchToEnd runs watchBatch from in until it returns, firing every wait it asks for, and returns its outcome, its
// heartbeats and the time it waited.
func watchToEnd(t *testing.T, d batchDriver, clk *waitClock, in wire.BatchAwaitInput) (wire.BatchWatch, []wire.BatchWatch, time.Duration, error) {
	t.Helper()
	var beats []wire.BatchWatch
	done := make(chan struct{})
	var w wire.BatchWatch
	var err error
	go func() {
		defer close(done)
		w, err = watchBatch(context.Background(), d, clk, in, wire.BatchWatch{Batch: in.Batch, Polls: in.Polls, Every: in.PollEvery,
			Waited: in.Waited, UnknownFrom: in.Waited}, false, func(x wire.BatchWatch) { beats = append(beats, x) })
	}()
	waited := time.Duration(0)
	for {
		select {
		case c := <-clk.waits:
			waited += c.d
			c.fire <- time.Time{}
		case <-done:
			return w, beats, waited, err
		case <-time.After(10 * time.Second):
			t.Fatal("the activity neither waited nor returned within 10 s")
		}
	}
}
