package activities

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

// observed is an Observer that keeps what it hears.
type observed struct {
	mu        sync.Mutex
	outcomes  map[string]int
	used      usage.Usage
	retried   int
	queued    int // the sum of the deltas: what the pass reports waiting now
	maxQueued int
	looked    store.CacheTally
}

func (r *observed) Call(_, outcome string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outcomes == nil {
		r.outcomes = map[string]int{}
	}
	r.outcomes[outcome]++
}

func (r *observed) Used(_ string, u usage.Usage) { r.mu.Lock(); r.used.Add(u); r.mu.Unlock() }
func (r *observed) Retried(string)               { r.mu.Lock(); r.retried++; r.mu.Unlock() }
func (r *observed) Looked(_ string, t store.CacheTally) {
	r.mu.Lock()
	r.looked.Add(t)
	r.mu.Unlock()
}

func (r *observed) Breaker(string, breaker.State) {}

func (r *observed) Queued(_ string, d int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queued += d
	r.maxQueued = max(r.maxQueued, r.queued)
}

// TestObserverHearsEveryCall checks the metrics' source against the model server's own count: every request is
// one Call with its outcome, every retry one Retried, the answers' usage adds up to the store's, and the cells
// waiting for the limiter are reported while they wait and back to zero when the pass ends.
func TestObserverHearsEveryCall(t *testing.T) {
	fm := &fakeModel{delay: 20 * time.Millisecond}
	fm.rule = func(cell string, n int) (int, string, map[string]string, string) {
		switch {
		case strings.HasSuffix(cell, "/2/p1") && n == 1:
			return 429, `{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`, map[string]string{"Retry-After": "0"}, ""
		case strings.HasSuffix(cell, "/3/p2") && n <= 2:
			return 500, `{"error":{"message":"boom"}}`, nil, ""
		}
		return 0, "", nil, ""
	}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	spec := testSpec(srv.URL, 4, 4)
	spec.Run.Cache = "off"
	h := newHarness(t, spec)
	rec := &observed{}
	h.acts.Observe = rec
	if _, err := h.runPass(ratelimit.Limits{Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	total := 0
	for _, n := range rec.outcomes {
		total += n
	}
	if sent := len(fm.requested()); total != sent || rec.outcomes["ok"] != 16 || rec.outcomes["RateLimited"] != 1 || rec.outcomes["ServerError"] != 2 {
		t.Errorf("outcomes %v (%d calls); the server saw %d requests: want 16 ok, 1 RateLimited, 2 ServerError", rec.outcomes, total, sent)
	}
	if rec.retried != 3 {
		t.Errorf("retried %d, want 3", rec.retried)
	}
	c, err := h.store.Counts(context.Background(), "run")
	if err != nil {
		t.Fatal(err)
	}
	if rec.used.PromptTokens != c.PromptTokens || rec.used.CompletionTokens != c.CompletionTokens || rec.used.CostUSD != c.CostUSD {
		t.Errorf("usage heard %+v, the store counts %+v", rec.used, c.Usage)
	}
	if rec.queued != 0 || rec.maxQueued == 0 {
		t.Errorf("cells waiting: %d at the end (want 0), at most %d (want some: one call at a time, 16 cells)", rec.queued, rec.maxQueued)
	}
}
