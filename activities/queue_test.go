package activities

import (
	"testing"
	"time"

	"github.com/silicolab/silico/ratelimit"
)

// others tells a held cell taken from the queue whether anything but held cells is left: another cell out, ready
// or waiting out a delay. Held cells waiting in the queue do not count, so two held cells never wait on each other.
func TestCellQueueOthersLeavesHeldCellsOut(t *testing.T) {
	q := newCellQueue(ratelimit.SystemClock(), []int{1, 2})
	ctx := t.Context()
	if c, ok := q.next(ctx); !ok || c != 1 {
		t.Fatalf("next = %d, %v; want 1", c, ok)
	}
	if !q.others() {
		t.Fatal("others with cell 2 ready: false")
	}
	if c, ok := q.next(ctx); !ok || c != 2 {
		t.Fatalf("next = %d, %v; want 2", c, ok)
	}
	if !q.others() {
		t.Fatal("others with cell 1 out: false")
	}
	q.hold(1, time.Now().Add(time.Hour))
	if q.others() {
		t.Fatal("others with only a held cell waiting: true")
	}
	q.retry(2, time.Now().Add(time.Hour))
	if !q.others() {
		t.Fatal("others with cell 2 waiting out a retry delay: false")
	}
	// The held cell is ready again at once: taken, it is no longer counted held.
	q = newCellQueue(ratelimit.SystemClock(), []int{4})
	if c, _ := q.next(ctx); c != 4 {
		t.Fatalf("next = %d, want 4", c)
	}
	q.hold(4, time.Now())
	if c, ok := q.next(ctx); !ok || c != 4 || len(q.held) != 0 || q.others() {
		t.Fatalf("next = %d, %v, held %v, others %v; want 4 taken, nothing held, nothing else", c, ok, q.held, q.others())
	}
}
