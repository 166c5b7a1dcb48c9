package activities

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// fakeModel is an OpenAI-compatible chat endpoint that answers "1. No" unless a rule says otherwise, and records
// every request by the cell id the runner sends.
type fakeModel struct {
	mu       sync.Mutex
	delay    time.Duration
	inFlight int
	peak     int
	cells    []string
	messages map[string][]experiment.Message
	// rule may answer a cell with an HTTP error (status, body, headers) or a custom text.
	rule func(cell string, n int) (status int, body string, hdr map[string]string, text string)
	seen map[string]int
	// barrier, when set, holds every request until that many are in flight at once (or 10 s have passed), so
	// that a pass allowed that many calls at once reaches exactly that peak.
	barrier int
	full    chan struct{} // closed when barrier requests were first in flight together
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []experiment.Message `json:"messages"`
		Seed     *int64               `json:"seed"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	cell := r.Header.Get("X-Silico-Cell")
	f.mu.Lock()
	f.inFlight++
	f.peak = max(f.peak, f.inFlight)
	f.cells = append(f.cells, cell)
	if f.messages == nil {
		f.messages = map[string][]experiment.Message{}
		f.seen = map[string]int{}
	}
	f.messages[cell] = req.Messages
	f.seen[cell]++
	n := f.seen[cell]
	if f.barrier > 0 && f.full == nil {
		f.full = make(chan struct{})
	}
	if f.barrier > 0 && f.inFlight == f.barrier {
		select {
		case <-f.full:
		default:
			close(f.full)
		}
	}
	full := f.full
	f.mu.Unlock()
	if full != nil {
		select {
		case <-full:
		case <-time.After(10 * time.Second):
		}
	}
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if req.Seed == nil {
		http.Error(w, `{"error":{"message":"seed missing"}}`, 400)
		return
	}
	time.Sleep(f.delay)
	text := "1. No"
	if f.rule != nil {
		status, body, hdr, t := f.rule(cell, n)
		if status != 0 {
			for k, v := range hdr {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
			return
		}
		if t != "" {
			text = t
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "x", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
	})
}

func (f *fakeModel) requested() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cells...)
}

func testSpec(url string, items, personas int) experiment.Spec {
	return experimenttest.Grid(1, 1, items, personas, experimenttest.Name("pass test"), experimenttest.FirstSeed(7),
		experimenttest.BaseURL(url+"/v1"), experimenttest.Model(func(_ int, m *experiment.Model) {
			// Provider sim: the fake reads each request's cell from its X-Silico-Cell header, which only the
			// simulator gets.
			m.ID, m.Name, m.Provider = "m", "fake", experiment.ProviderSim
			m.Price = &experiment.Price{InputPerMTok: 1, OutputPerMTok: 2}
		}), experimenttest.Defaults())
}

type harness struct {
	t     *testing.T
	acts  *Activities
	store *store.SQLite
	env   *testsuite.TestActivityEnvironment
	spec  experiment.Spec
}

func newHarness(t *testing.T, spec experiment.Spec) *harness {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	acts := &Activities{Store: st, Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		HeartbeatEvery: 10 * time.Millisecond}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acts.PrepareRun(ctx, wire.PrepareInput{RunID: "run", Spec: raw}); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, acts: acts, store: st, spec: spec}
	h.reset()
	return h
}

func (h *harness) reset() {
	var s testsuite.WorkflowTestSuite
	h.env = s.NewTestActivityEnvironment()
	h.env.RegisterActivity(h.acts)
}

func (h *harness) runPass(limits ratelimit.Limits) (wire.PassResult, error) {
	p := h.spec.Passes()[0]
	v, err := h.env.ExecuteActivity(h.acts.RunSeedPass, wire.PassInput{RunID: "run", Pass: p, Limits: limits})
	var res wire.PassResult
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

func (h *harness) records() map[int]store.Record {
	recs, err := h.store.Records(context.Background(), "run", 0, h.spec.NumCells())
	if err != nil {
		h.t.Fatal(err)
	}
	out := make(map[int]store.Record, len(recs))
	for _, r := range recs {
		out[r.Index] = r
	}
	return out
}

func TestPassCallsRunConcurrently(t *testing.T) {
	// The server holds the calls until 8 are in flight, then answers each after 30 ms, in which a ninth call
	// would arrive if the pass sent more than its limit.
	fm := &fakeModel{delay: 30 * time.Millisecond, barrier: 8}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	h := newHarness(t, testSpec(srv.URL, 4, 8))
	res, err := h.runPass(ratelimit.Limits{Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 32 || res.OK != 32 || res.Called != 32 {
		t.Errorf("result %+v, want 32 cells done and ok", res)
	}
	if fm.peak != 8 {
		t.Errorf("peak calls in flight %d, want exactly the limit of 8", fm.peak)
	}
	recs := h.records()
	r := recs[5]
	if r.Status != store.StatusOK || r.OptionID != "1" || r.PromptTokens != 10 || r.CostUSD <= 0 {
		t.Errorf("record 5 = %+v", r)
	}
}

// cellIndex is the index of the cell whose id is id.
func (h *harness) cellIndex(id string) int {
	for i := range h.spec.NumCells() {
		if h.spec.CellID(h.spec.Cell(i)) == id {
			return i
		}
	}
	h.t.Fatalf("no cell %s", id)
	return -1
}

func TestRateLimitWaitsRetryAfterWithoutUsingTries(t *testing.T) {
	var mu sync.Mutex
	var arrivals []time.Time
	fm := &fakeModel{}
	fm.rule = func(cell string, n int) (int, string, map[string]string, string) {
		if strings.HasSuffix(cell, "/2/p1") {
			mu.Lock()
			arrivals = append(arrivals, time.Now())
			mu.Unlock()
			if n <= 2 {
				return 429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`,
					map[string]string{"Retry-After": "1"}, ""
			}
		}
		return 0, "", nil, ""
	}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	spec := testSpec(srv.URL, 4, 4)
	spec.Run.MaxAttempts = 1 // a rate limit must not use a try: one try is enough
	h := newHarness(t, spec)
	res, err := h.runPass(ratelimit.Limits{Concurrency: 2})
	if err != nil {
		t.Fatalf("a pass with two 429s must finish in its attempt: %v", err)
	}
	if res.OK != 16 || res.Retried != 2 {
		t.Errorf("result %+v, want 16 ok and 2 retried", res)
	}
	r := h.records()[h.cellIndex("m/7/2/p1")]
	if r.Status != store.StatusOK || r.Attempts != 3 || r.Tries != 1 {
		t.Errorf("rate-limited cell = %+v, want ok after 3 requests and 1 try (429s are not tries)", r)
	}
	if len(arrivals) != 3 {
		t.Fatalf("rate-limited cell requested %d times, want 3", len(arrivals))
	}
	for i := 1; i < 3; i++ {
		if gap := arrivals[i].Sub(arrivals[i-1]); gap < time.Second {
			t.Errorf("request %d of the cell came %v after a 429 with Retry-After: 1", i+1, gap)
		}
	}
	// Every other cell was asked once.
	seen := map[string]int{}
	for _, c := range fm.requested() {
		seen[c]++
	}
	for c, n := range seen {
		if n != 1 && c != "m/7/2/p1" {
			t.Errorf("cell %s requested %d times", c, n)
		}
	}
}

func TestACellThatAlwaysFailsUsesItsTriesAndTheOthersFinish(t *testing.T) {
	fm := &fakeModel{delay: 5 * time.Millisecond}
	fm.rule = func(cell string, _ int) (int, string, map[string]string, string) {
		if cell == "m/7/3/p2" {
			return 500, `{"error":{"message":"failed to decode the output","type":"server_error"}}`, nil, ""
		}
		return 0, "", nil, ""
	}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	spec := testSpec(srv.URL, 5, 4)
	spec.Run.MaxAttempts = 3
	h := newHarness(t, spec)
	res, err := h.runPass(ratelimit.Limits{Concurrency: 4})
	if err != nil {
		t.Fatalf("one failing cell must not fail the attempt: %v", err)
	}
	if res.OK != 19 || res.Failed != 1 || res.Done != 20 {
		t.Errorf("result %+v, want 19 ok and 1 failed", res)
	}
	r := h.records()[h.cellIndex("m/7/3/p2")]
	if r.Status != store.StatusFailed || r.ErrorClass != "ServerError" || r.Attempts != 3 || r.Tries != 3 || r.LatencyMS <= 0 ||
		!strings.Contains(r.ErrorMessage, "500") || !strings.Contains(r.ErrorMessage, "failed to decode the output") {
		t.Errorf("failing cell = %+v; want ServerError after 3 tries, with its latency, the status and the message", r)
	}
	if n := fm.seen["m/7/3/p2"]; n != 3 {
		t.Errorf("failing cell requested %d times, want 3", n)
	}
}

// outageModel answers every request with 503 while down is set, and counts the requests it refused so.
type outageModel struct {
	fakeModel
	down    atomic.Bool
	refused atomic.Int64
}

func newOutageModel() *outageModel {
	m := &outageModel{}
	m.rule = func(string, int) (int, string, map[string]string, string) {
		if m.down.Load() {
			m.refused.Add(1)
			return 503, `{"error":{"message":"service unavailable","code":"service_unavailable"}}`, nil, ""
		}
		return 0, "", nil, ""
	}
	return m
}

// TestAnOutageIsWaitedOutInsideTheAttempt: the provider answers 503 to everything for a while. The breaker opens
// after a few distinct cells failed, the pass waits in its attempt sending one probe at a time, and when the
// provider is back every cell is answered in the same attempt: no cell was charged a try (run.max_attempts is
// 2, which the outage's requests would use up many times over), and the outage cost a handful of requests.
func TestAnOutageIsWaitedOutInsideTheAttempt(t *testing.T) {
	fm := newOutageModel()
	fm.down.Store(true)
	srv := httptest.NewServer(fm)
	defer srv.Close()
	spec := testSpec(srv.URL, 4, 4)
	spec.Run.MaxAttempts = 2
	h := newHarness(t, spec)
	h.acts.Breakers = breaker.NewSet(ratelimit.SystemClock(), breaker.Policy{ProbeFirst: 20 * time.Millisecond,
		ProbeMax: 100 * time.Millisecond})
	const outage = 800 * time.Millisecond
	var up sync.WaitGroup
	up.Go(func() {
		time.Sleep(outage)
		fm.down.Store(false)
	})
	defer up.Wait()
	res, err := h.runPass(ratelimit.Limits{Concurrency: 8})
	if err != nil {
		t.Fatalf("the outage ended the attempt: %v", err)
	}
	if res.OK != 16 || res.Failed != 0 {
		t.Fatalf("result %+v, want all 16 cells answered after the outage", res)
	}
	for i, r := range h.records() {
		if r.Status != store.StatusOK {
			t.Errorf("cell %d = %+v, want answered", i, r)
		}
	}
	// At most the 16 cells go before 8 distinct failures trip the breaker, then one probe per backoff step: 16,
	// 32, 64, then at least every 80 ms (100 ms less its jitter) until the 800 ms are over: at most 16+3+10.
	// Retrying cell by cell for that long would have sent several times as many.
	if n := fm.refused.Load(); n < 8 || n > 16+3+10 {
		t.Errorf("%d requests during the outage, want the tripping ones and about one per probe step", n)
	}
	t.Logf("%d requests refused during a %v outage; %d in all", fm.refused.Load(), outage, len(fm.requested()))
}

func TestTriesCarryAcrossAttempts(t *testing.T) {
	fm := &fakeModel{}
	fm.rule = func(cell string, _ int) (int, string, map[string]string, string) {
		if cell == "m/7/1/p0" {
			return 502, `{"error":{"message":"bad gateway"}}`, nil, ""
		}
		return 0, "", nil, ""
	}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	spec := testSpec(srv.URL, 1, 2)
	spec.Run.MaxAttempts = 3
	h := newHarness(t, spec)
	// The previous attempt's last heartbeat: cell 0 already failed twice.
	h.env.SetHeartbeatDetails(wire.PassProgress{Tries: map[int]wire.Tries{0: {Transient: 2, Sent: 2}}, LastFinished: time.Now()})
	if _, err := h.runPass(ratelimit.Limits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	r := h.records()[0]
	if r.Status != store.StatusFailed || r.Attempts != 3 || fm.seen["m/7/1/p0"] != 1 {
		t.Errorf("cell 0 = %+v after %d requests in this attempt; want failed after its third try (one request here)", r, fm.seen["m/7/1/p0"])
	}
}

func TestAnEndpointThatNeverAnswersFailsFastNamingBaseURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close() // nothing listens there any more: every connection is refused
	// Fail fast means: refusals charge no cell a try, and the model is given up once the endpoint has refused for
	// unreachableFor, long before the cells' tries or the stall timeout would end the pass. So the tries are
	// made plentiful, and the connections are counted: each cell may be sent only as often as its retry delays
	// fit into unreachableFor, plus the send that finds the time up.
	spec := testSpec(url, 3, 2)
	spec.Run.MaxAttempts = 1000
	h := newHarness(t, spec)
	var dials atomic.Int64
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}}}
	h.acts.Models = llm.NewRegistry(hc, func(string) string { return "" }, "")
	// A generous deadline, only so that a pass that does not fail fast ends the test instead of hanging it.
	bg, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.env.SetWorkerOptions(worker.Options{BackgroundActivityContext: bg})
	maxSends := 1
	for at := time.Duration(0); at < unreachableFor; maxSends++ {
		at += cellRetryDelay(maxSends)
	}
	_, err = h.runPass(ratelimit.Limits{Concurrency: 4})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errclass.Unreachable || !app.NonRetryable() {
		t.Fatalf("got %v, want non-retryable Unreachable", err)
	}
	recs := h.records()
	if len(recs) != 6 {
		t.Fatalf("%d cells recorded, want all 6", len(recs))
	}
	if n := dials.Load(); n < 6 || n > int64(6*maxSends) {
		t.Errorf("%d connections tried for 6 cells; want each cell tried, none more than %d times", n, maxSends)
	}
	for _, r := range recs {
		if r.ErrorClass != errclass.Unreachable || r.ErrorCode != llm.CodeConnectionRefused || !strings.Contains(r.ErrorMessage, url+"/v1") {
			t.Errorf("cell %d = %+v; want Unreachable, connection_refused, naming %s/v1", r.Index, r, url)
		}
		if r.Tries != 0 || r.Attempts < 1 || r.Attempts > maxSends {
			t.Errorf("cell %d: %d tries charged in %d requests; want none charged in 1 to %d", r.Index, r.Tries, r.Attempts, maxSends)
		}
	}
}

func TestAStalledPassGivesUpWithTheLastCause(t *testing.T) {
	fm := &fakeModel{}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	spec := testSpec(srv.URL, 1, 2)
	spec.Run.StallTimeout = experiment.Duration(time.Minute)
	h := newHarness(t, spec)
	h.env.SetHeartbeatDetails(wire.PassProgress{LastFinished: time.Now().Add(-2 * time.Minute), LastClass: "RateLimited",
		LastMessage: "Rate limit reached for requests"})
	_, err := h.runPass(ratelimit.Limits{Concurrency: 2})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errclass.Stalled || !app.NonRetryable() {
		t.Fatalf("got %v, want non-retryable Stalled", err)
	}
	for _, r := range h.records() {
		if r.ErrorClass != "RateLimited" || !strings.Contains(r.ErrorMessage, "Rate limit reached for requests") ||
			!strings.Contains(r.ErrorMessage, "1m0s") {
			t.Errorf("cell %d = %+v; want the last cause and the stall timeout", r.Index, r)
		}
	}
	if len(fm.requested()) != 0 {
		t.Errorf("a stalled pass sent %d requests", len(fm.requested()))
	}
}

func TestPermanentFailuresStayOnTheirCell(t *testing.T) {
	fm := &fakeModel{}
	fm.rule = func(cell string, _ int) (int, string, map[string]string, string) {
		if strings.HasSuffix(cell, "/1/p0") {
			return 400, `{"error":{"message":"context too long","type":"invalid_request_error"}}`, nil, ""
		}
		return 0, "", nil, ""
	}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	h := newHarness(t, testSpec(srv.URL, 2, 2))
	res, err := h.runPass(ratelimit.Limits{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := h.records()[0]
	if r.Status != store.StatusFailed || r.ErrorClass != "InvalidRequest" || res.Failed != 1 || res.OK != 3 {
		t.Errorf("record %+v result %+v; want cell 0 failed InvalidRequest and the others ok", r, res)
	}
}

// TestAccountRefusalsFailThePassAndRecordEveryCell: a used-up quota and a refused key end the model (errclass's
// table says so of both, and the pass reads it from there): the pass fails non-retryable with the class and every
// cell is recorded.
func TestAccountRefusalsFailThePassAndRecordEveryCell(t *testing.T) {
	for _, tc := range []struct {
		class, body string
		status      int
	}{
		{errclass.QuotaExhausted, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, 429},
		{errclass.Auth, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, 401},
	} {
		t.Run(tc.class, func(t *testing.T) {
			fm := &fakeModel{}
			fm.rule = func(cell string, _ int) (int, string, map[string]string, string) {
				if strings.HasSuffix(cell, "/2/p0") {
					return tc.status, tc.body, nil, ""
				}
				return 0, "", nil, ""
			}
			srv := httptest.NewServer(fm)
			defer srv.Close()
			h := newHarness(t, testSpec(srv.URL, 3, 2))
			_, err := h.runPass(ratelimit.Limits{Concurrency: 1})
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != tc.class || !app.NonRetryable() {
				t.Fatalf("got %v, want non-retryable %s", err, tc.class)
			}
			recs := h.records()
			if len(recs) != 6 {
				t.Fatalf("%d cells recorded, want all 6", len(recs))
			}
			if recs[2].ErrorClass != tc.class || recs[5].ErrorClass != tc.class || recs[1].Status != store.StatusOK {
				t.Errorf("records %+v; want cells 0 and 1 answered and cells 2 to 5 recorded %s", recs, tc.class)
			}
			// The cell refused shows its request (not a try: the refusal is the account's); the cells never sent
			// show none.
			if recs[2].Attempts != 1 || recs[2].Tries != 0 || recs[5].Attempts != 0 || recs[5].Tries != 0 {
				t.Errorf("refused cell %+v, unsent cell %+v; want attempts 1 tries 0, and 0 0", recs[2], recs[5])
			}
		})
	}
}

func TestRaiseStopsDispatchingAtTheFirstFailure(t *testing.T) {
	fm := &fakeModel{}
	fm.rule = func(cell string, _ int) (int, string, map[string]string, string) {
		if strings.HasSuffix(cell, "/2/p0") {
			return 404, `{"error":{"message":"model not found"}}`, nil, ""
		}
		return 0, "", nil, ""
	}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	spec := testSpec(srv.URL, 4, 2)
	spec.Run.OnError = experiment.OnErrorRaise
	h := newHarness(t, spec)
	res, err := h.runPass(ratelimit.Limits{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstFailure != 2 || res.Failed != 1 || len(fm.requested()) != 3 {
		t.Errorf("result %+v after %d calls; want the stop at cell 2 after 3 calls", res, len(fm.requested()))
	}
}

func TestCumulativeMemoryPerPersona(t *testing.T) {
	fm := &fakeModel{}
	fm.rule = func(cell string, n int) (int, string, map[string]string, string) {
		switch {
		case strings.HasSuffix(cell, "/1/p1") && n == 1:
			return 500, `{"error":{"message":"boom"}}`, nil, "" // transient: tried again before item 2 starts
		case strings.HasSuffix(cell, "/1/p0"):
			return 0, "", nil, "2. Yes {persona_description} }{"
		case strings.HasSuffix(cell, "/2/p0"):
			return 400, `{"error":{"message":"filtered"}}`, nil, ""
		}
		return 0, "", nil, ""
	}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	spec := testSpec(srv.URL, 3, 2)
	spec.Run.Cumulative = true
	h := newHarness(t, spec)
	if _, err := h.runPass(ratelimit.Limits{Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	msgs := fm.messages["m/7/3/p0"]
	// p0 at item 3: system, item 1 (user, assistant), item 2 failed so not remembered, item 3 user.
	if len(msgs) != 4 || msgs[2].Role != "assistant" || msgs[2].Content != "2. Yes {persona_description} }{" {
		t.Fatalf("p0's third prompt = %+v", msgs)
	}
	if !strings.Contains(msgs[1].Content, "Question 1?") || !strings.Contains(msgs[3].Content, "Question 3?") {
		t.Errorf("history out of order: %+v", msgs)
	}
	if first := fm.messages["m/7/1/p0"]; len(first) != 2 {
		t.Errorf("the first prompt must be the plain prompt, got %d messages", len(first))
	}
	// p1's item 1 failed once and was answered on its second try: its answer is in p1's memory.
	p1 := fm.messages["m/7/3/p1"]
	if len(p1) != 6 || !strings.Contains(p1[1].Content, "Question 1?") || p1[2].Content != "1. No" ||
		!strings.Contains(p1[3].Content, "Question 2?") || p1[4].Content != "1. No" {
		t.Errorf("p1's third prompt = %+v; want its own two answers", p1)
	}
	if fm.seen["m/7/1/p1"] != 2 {
		t.Errorf("p1's first item requested %d times, want 2", fm.seen["m/7/1/p1"])
	}
}

func TestProviderHeadersPauseThePass(t *testing.T) {
	// The first answer says the request budget of the window is used up and resets in 300ms: the pass must send
	// nothing more until then.
	var mu sync.Mutex
	var arrivals []time.Time
	fm := &fakeModel{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		first := len(arrivals) == 1
		mu.Unlock()
		if first {
			w.Header().Set("x-ratelimit-remaining-requests", "0")
			w.Header().Set("x-ratelimit-reset-requests", "300ms")
		}
		fm.ServeHTTP(w, r)
	}))
	defer srv.Close()
	h := newHarness(t, testSpec(srv.URL, 1, 3))
	if _, err := h.runPass(ratelimit.Limits{Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if len(arrivals) != 3 {
		t.Fatalf("%d requests, want 3", len(arrivals))
	}
	if gap := arrivals[1].Sub(arrivals[0]); gap < 250*time.Millisecond {
		t.Errorf("second request %v after the first; the provider asked for a 300ms pause", gap)
	}
}

func TestRetriesCountAcrossAttempts(t *testing.T) {
	fm := &fakeModel{}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	h := newHarness(t, testSpec(srv.URL, 1, 2))
	// The previous attempt's last heartbeat said three calls were retried.
	h.env.SetHeartbeatDetails(wire.PassProgress{Retried: 3})
	res, err := h.runPass(ratelimit.Limits{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Retried != 3 || res.Done != 2 {
		t.Errorf("result %+v, want the 3 earlier retries carried and 2 cells done", res)
	}
}

func TestCallsInFlightLandWhenTheAttemptIsCancelled(t *testing.T) {
	// The attempt's context ends (here its deadline; in production a heartbeat that failed while the Temporal
	// server restarted) while four calls are in flight: they are paid for, so they must land and be recorded,
	// and nothing more may be sent.
	fm := &fakeModel{delay: time.Second}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	h := newHarness(t, testSpec(srv.URL, 3, 4))
	bg, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.env.SetWorkerOptions(worker.Options{BackgroundActivityContext: bg}) // the attempt's context derives from it
	// Cancel once the four calls of the first wave are on the wire (or after 10 s, which fails the test below).
	var watcher sync.WaitGroup
	watcher.Go(func() {
		for deadline := time.Now().Add(10 * time.Second); len(fm.requested()) < 4 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	})
	_, err := h.runPass(ratelimit.Limits{Concurrency: 4})
	watcher.Wait()
	if err == nil {
		t.Fatal("the cancelled attempt succeeded")
	}
	recs := h.records()
	if len(fm.requested()) != 4 || len(recs) != 4 {
		t.Fatalf("%d requests sent and %d recorded; want the 4 in flight at the cancel, all recorded", len(fm.requested()), len(recs))
	}
	for i, r := range recs {
		if r.Status != store.StatusOK {
			t.Errorf("cell %d = %+v, want its answer", i, r)
		}
	}
}
