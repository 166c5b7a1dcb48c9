package activities

import (
	"errors"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
)

// newSimHarness is a harness whose model is a simulator configured with cfg, with a breaker that probes within
// tens of milliseconds, and the grid of testSpec(items, personas).
func newSimHarness(t *testing.T, cfg sim.Config, items, personas int, edit func(*experiment.Spec)) (*harness, *sim.Server) {
	t.Helper()
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	spec := testSpec(ts.URL, items, personas)
	edit(&spec)
	h := newHarness(t, spec)
	h.acts.Breakers = breaker.NewSet(ratelimit.SystemClock(), breaker.Policy{ProbeFirst: 20 * time.Millisecond,
		ProbeMax: 100 * time.Millisecond})
	return h, srv
}

// checkCounts holds what every record says of its requests: attempts >= tries, and the attempts of all cells add
// up to the chat requests the simulator received (the outage's and the probes included). It returns the records.
func checkCounts(t *testing.T, h *harness, srv *sim.Server) map[int]store.Record {
	t.Helper()
	recs := h.records()
	if len(recs) != h.spec.NumCells() {
		t.Fatalf("%d cells recorded, want %d", len(recs), h.spec.NumCells())
	}
	sum := 0
	for i, r := range recs {
		if r.Attempts < r.Tries {
			t.Errorf("cell %d: attempts %d < tries %d", i, r.Attempts, r.Tries)
		}
		sum += r.Attempts
	}
	sent := 0
	for _, q := range srv.Requests() {
		if strings.HasSuffix(q.Endpoint, "/chat/completions") {
			sent++
		}
	}
	if sum != sent {
		t.Errorf("the records' attempts add up to %d, the simulator received %d chat requests", sum, sent)
	}
	return recs
}

// TestAShortOutageFailsNoCellAtOneTry: with run.max_attempts 1 the first cells a 503 outage meets would use their
// only try before the breaker has seen enough of them to open. They are held, not failed, and every cell is
// answered after the outage with one try charged, though many were sent several times.
func TestAShortOutageFailsNoCellAtOneTry(t *testing.T) {
	cfg := sim.Config{Latency: sim.Latency{Fixed: 2 * time.Millisecond},
		Outages: []sim.Outage{{After: 30 * time.Millisecond, For: 500 * time.Millisecond, Status: 503}}}
	h, srv := newSimHarness(t, cfg, 10, 10, func(s *experiment.Spec) { s.Run.MaxAttempts = 1 })
	res, err := h.runPass(ratelimit.Limits{Concurrency: 8})
	if err != nil {
		t.Fatalf("the outage ended the attempt: %v", err)
	}
	if res.OK != 100 || res.Failed != 0 {
		t.Errorf("result %+v, want all 100 cells answered", res)
	}
	recs := checkCounts(t, h, srv)
	resent := 0
	for i, r := range recs {
		if r.Status != store.StatusOK {
			t.Errorf("cell %d = %s %s: %s (attempts %d, tries %d), want answered", i, r.Status, r.ErrorClass, r.ErrorMessage, r.Attempts, r.Tries)
		}
		if r.Tries != 1 {
			t.Errorf("cell %d: tries %d, want 1 (its answer)", i, r.Tries)
		}
		if r.Attempts > 1 {
			resent++
		}
	}
	if c := srv.Counters(); c.Outage == 0 || resent == 0 {
		t.Errorf("the outage answered %d requests and %d cells were sent more than once: the test tests nothing", c.Outage, resent)
	}
}

// rfc3339UTC finds a date and time in RFC 3339 with the zone Z.
var rfc3339UTC = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// TestCellsGivenUpDuringAnOutageSayOutage: the provider goes down and stays down past run.stall_timeout. The cells
// left are recorded Outage, not the 503's ServerError, with the cause kept in the message and since when in
// RFC 3339 UTC; the cells answered before it keep their answers, and every cell's attempts count its requests.
func TestCellsGivenUpDuringAnOutageSayOutage(t *testing.T) {
	cfg := sim.Config{Latency: sim.Latency{Fixed: 2 * time.Millisecond},
		Outages: []sim.Outage{{After: 20 * time.Millisecond, For: time.Hour, Status: 503}}}
	h, srv := newSimHarness(t, cfg, 10, 10, func(s *experiment.Spec) {
		s.Run.MaxAttempts = 3
		s.Run.StallTimeout = experiment.Duration(time.Second)
	})
	start := time.Now()
	_, err := h.runPass(ratelimit.Limits{Concurrency: 8})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errclass.Stalled || !app.NonRetryable() {
		t.Fatalf("got %v, want non-retryable Stalled", err)
	}
	recs := checkCounts(t, h, srv)
	failed := 0
	for i, r := range recs {
		if r.Status != store.StatusFailed {
			continue
		}
		failed++
		if r.ErrorClass != errclass.Outage || !strings.Contains(r.ErrorMessage, "has been down since") ||
			!strings.Contains(r.ErrorMessage, "503") || !strings.Contains(r.ErrorMessage, "ServerError") {
			t.Errorf("cell %d: %s %q; want wire.Outage naming the 503 and its class", i, r.ErrorClass, r.ErrorMessage)
		}
		m := rfc3339UTC.FindString(r.ErrorMessage)
		since, perr := time.Parse(time.RFC3339, m)
		if perr != nil || since.Before(start.Add(-time.Second)) || since.After(time.Now()) {
			t.Errorf("cell %d: %q: want since when in RFC 3339 UTC, during the test (%v)", i, r.ErrorMessage, perr)
		}
	}
	if failed == 0 || failed == len(recs) {
		t.Errorf("%d of %d cells failed; want those the outage met, not those answered before it", failed, len(recs))
	}
}
