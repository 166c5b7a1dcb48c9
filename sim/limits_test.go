package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func decodeError(t *testing.T, body []byte) apiError {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return e.Error
}

func TestRPMLimit(t *testing.T) {
	clock := newFakeClock()
	s, ts := newTestServer(t, Config{RPM: 3, Now: clock.Now})
	body := newChatRequest("sim-chat", 1, ipipPrompt)
	for i := range 3 {
		resp, b := post(t, ts, "/v1/chat/completions", body, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d %s, want 200", i+1, resp.StatusCode, b)
		}
		h := resp.Header
		if h.Get("X-Ratelimit-Limit-Requests") != "3" || h.Get("X-Ratelimit-Remaining-Requests") != strconv.Itoa(2-i) {
			t.Errorf("request %d: limit %q remaining %q, want 3 and %d", i+1,
				h.Get("X-Ratelimit-Limit-Requests"), h.Get("X-Ratelimit-Remaining-Requests"), 2-i)
		}
		if want := (time.Duration(i+1) * 20 * time.Second).String(); h.Get("X-Ratelimit-Reset-Requests") != want {
			t.Errorf("request %d: reset %q, want %q", i+1, h.Get("X-Ratelimit-Reset-Requests"), want)
		}
		if h.Get("X-Ratelimit-Limit-Tokens") != "" {
			t.Errorf("request %d: token headers without a TPM limit", i+1)
		}
	}
	resp, b := post(t, ts, "/v1/chat/completions", body, nil)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("4th request: status %d, want 429", resp.StatusCode)
	}
	if e := decodeError(t, b); e.Type != "requests" || e.Code == nil || *e.Code != "rate_limit_exceeded" {
		t.Errorf("4th request: error %+v, want type requests, code rate_limit_exceeded", e)
	}
	if got := resp.Header.Get("Retry-After"); got != "20" {
		t.Errorf("Retry-After %q, want 20 (one request at 3/min)", got)
	}
	if got := resp.Header.Get("X-Ratelimit-Remaining-Requests"); got != "0" {
		t.Errorf("remaining %q, want 0", got)
	}
	// Another model has its own bucket.
	other := newChatRequest("other", 1, ipipPrompt)
	if resp, _ := post(t, ts, "/v1/chat/completions", other, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("other model: status %d, want 200", resp.StatusCode)
	}

	clock.Advance(19 * time.Second)
	if resp, _ := post(t, ts, "/v1/chat/completions", body, nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("after 19s: status %d, want 429", resp.StatusCode)
	}
	clock.Advance(time.Second)
	if resp, b := post(t, ts, "/v1/chat/completions", body, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("after 20s: status %d %s, want 200", resp.StatusCode, b)
	}
	if c := s.Counters(); c.RateLimited != 2 || c.OK != 5 {
		t.Errorf("counters %+v, want 2 rate limited, 5 OK", c)
	}
	if r := s.Requests()[3]; r.Fault != FaultLimitRequests || r.Status != 429 {
		t.Errorf("log entry of the refused call: %+v", r)
	}
}

func TestTPMLimit(t *testing.T) {
	clock := newFakeClock()
	s, ts := newTestServer(t, Config{TPM: 1200, Burst: 0.5, Now: clock.Now}) // a bucket of 600 tokens, 20 per second
	req := newChatRequest("sim-chat", 1, ipipPrompt)
	//lint:ignore SA1019 the simulator serves the max_tokens that OpenAI-compatible clients send.
	req.MaxTokens = 200
	prompt, err := s.cl100k.chatPromptTokens([]chatMessage{
		{Role: "system", Content: req.Messages[0].Content}, {Role: "user", Content: req.Messages[1].Content}})
	if err != nil {
		t.Fatal(err)
	}
	cost := prompt + 200
	if 2*cost > 600 || 3*cost <= 600 {
		t.Fatalf("test needs 2 calls of %d tokens to fit in 600 and 3 not to", cost)
	}
	for i := range 2 {
		resp, b := post(t, ts, "/v1/chat/completions", req, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: status %d %s", i+1, resp.StatusCode, b)
		}
		if got, want := resp.Header.Get("X-Ratelimit-Remaining-Tokens"), strconv.Itoa(600-(i+1)*cost); got != want {
			t.Errorf("call %d: remaining tokens %q, want %q", i+1, got, want)
		}
		if got := resp.Header.Get("X-Ratelimit-Limit-Tokens"); got != "1200" {
			t.Errorf("limit tokens %q, want 1200", got)
		}
	}
	resp, b := post(t, ts, "/v1/chat/completions", req, nil)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("3rd call: status %d, want 429", resp.StatusCode)
	}
	if e := decodeError(t, b); e.Type != "tokens" || *e.Code != "rate_limit_exceeded" {
		t.Errorf("3rd call: error %+v, want type tokens", e)
	}
	missing := cost - (600 - 2*cost)
	wantWait := time.Duration(float64(missing) / 20 * float64(time.Second))
	if got, want := resp.Header.Get("Retry-After"), strconv.Itoa(int((wantWait+time.Second-1)/time.Second)); got != want {
		t.Errorf("Retry-After %q, want %q", got, want)
	}
	clock.Advance(wantWait)
	if resp, b := post(t, ts, "/v1/chat/completions", req, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("after %v: status %d %s, want 200", wantWait, resp.StatusCode, b)
	}

	//lint:ignore SA1019 the simulator serves the max_tokens that OpenAI-compatible clients send.
	// A call bigger than the bucket can never pass.
	req.MaxTokens = 1000
	resp, b = post(t, ts, "/v1/chat/completions", req, nil)
	if e := decodeError(t, b); resp.StatusCode != 429 || !strings.Contains(e.Message, "Request too large") {
		t.Errorf("oversized call: status %d, error %+v, want 429 request too large", resp.StatusCode, e)
	}
}

func TestFaults(t *testing.T) {
	req := newChatRequest("sim-chat", 1, ipipPrompt)
	tests := []struct {
		name   string
		faults Faults
		check  func(t *testing.T, resp *http.Response, body []byte, err error)
		fault  string
	}{
		{"rate limit", Faults{RateLimit: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
				t.Fatalf("got %v %v, want 429 with Retry-After: 1", resp, err)
			}
			if e := decodeError(t, body); e.Type != "requests" || *e.Code != "rate_limit_exceeded" {
				t.Errorf("error %+v", e)
			}
		}, FaultRateLimit},
		{"quota", Faults{Quota: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "" {
				t.Fatalf("got %v %v, want 429 without Retry-After", resp, err)
			}
			if e := decodeError(t, body); e.Type != "insufficient_quota" || *e.Code != "insufficient_quota" {
				t.Errorf("error %+v", e)
			}
		}, FaultQuota},
		{"500", Faults{ServerError500: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != 500 || decodeError(t, body).Type != "server_error" {
				t.Fatalf("got %v %s %v, want 500 server_error", resp, body, err)
			}
		}, FaultServerError500},
		{"503", Faults{ServerError503: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != 503 {
				t.Fatalf("got %v %v, want 503", resp, err)
			}
		}, FaultServerError503},
		{"hang", Faults{Hang: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err == nil {
				t.Fatalf("got %v %s, want the connection closed", resp, body)
			}
		}, FaultHang},
		{"drop", Faults{Drop: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err == nil {
				t.Fatalf("got %v %s, want the connection closed", resp, body)
			}
		}, FaultDrop},
		{"malformed", Faults{Malformed: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("got %v %v, want 200", resp, err)
			}
			var v map[string]any
			if json.Unmarshal(body, &v) == nil {
				t.Errorf("body %s parses, want malformed JSON", body)
			}
		}, FaultMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newTestServer(t, Config{Faults: tt.faults, HangFor: 20 * time.Millisecond})
			b, _ := json.Marshal(req)
			start := time.Now()
			resp, err := ts.Client().Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(b)))
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			tt.check(t, resp, body, err)
			if tt.fault == FaultHang && time.Since(start) < 20*time.Millisecond {
				t.Errorf("hang ended after %v, want HangFor (20ms)", time.Since(start))
			}
			log := s.Requests()
			if len(log) != 1 || log[0].Fault != tt.fault {
				t.Errorf("log %+v, want one entry with fault %q", log, tt.fault)
			}
			c := s.Counters()
			got := map[string]int64{FaultRateLimit: c.RateLimited, FaultQuota: c.Quota, FaultServerError500: c.ServerErrors,
				FaultServerError503: c.ServerErrors, FaultHang: c.Hangs, FaultDrop: c.Drops, FaultMalformed: c.Malformed}
			if got[tt.fault] != 1 || c.OK != 0 {
				t.Errorf("counters %+v, want one %s", c, tt.fault)
			}
		})
	}
}

func TestMalformedStream(t *testing.T) {
	_, ts := newTestServer(t, Config{Faults: Faults{Malformed: 1}})
	req := newChatRequest("sim-chat", 1, ipipPrompt)
	req.Stream = true
	stream, err := newClient(ts).CreateChatCompletionStream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			t.Fatal("malformed stream ended cleanly")
		}
		if err != nil {
			return // the truncated event
		}
	}
}

func TestHangEndsWithClient(t *testing.T) {
	s, ts := newTestServer(t, Config{Faults: Faults{Hang: 1}}) // HangFor defaults to 5 minutes
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	_, err := newClient(ts).CreateChatCompletion(ctx, newChatRequest("sim-chat", 1, ipipPrompt))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the client's deadline", err)
	}
	ts.Close() // waits for the handler: it must notice the client left rather than hang for 5 minutes
	if c := s.Counters(); c.Hangs != 1 {
		t.Errorf("counters %+v, want 1 hang", c)
	}
}

func TestLatencyRespectsClient(t *testing.T) {
	s, ts := newTestServer(t, Config{Latency: Latency{Fixed: time.Hour}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := newClient(ts).CreateChatCompletion(ctx, newChatRequest("sim-chat", 1, ipipPrompt)); err == nil {
		t.Fatal("call with an hour of latency succeeded")
	}
	ts.Close()
	if c := s.Counters(); c.Cancelled != 1 {
		t.Errorf("counters %+v, want 1 cancelled", c)
	}
}

func TestLatency(t *testing.T) {
	s, err := New(Config{Latency: Latency{Fixed: 10 * time.Millisecond, Jitter: 30 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi bool
	for range 200 {
		d := s.latency()
		if d < 0 || d > 40*time.Millisecond {
			t.Fatalf("latency %v outside [0, 40ms]", d)
		}
		lo = lo || d == 0
		hi = hi || d > 30*time.Millisecond
	}
	if !lo || !hi {
		t.Errorf("200 draws of 10ms ± 30ms: clamped at 0 %v, above 30ms %v; want both", lo, hi)
	}
}

func TestFaultsAreDeterministic(t *testing.T) {
	run := func(seed int64) []string {
		s, ts := newTestServer(t, Config{FaultSeed: seed, Faults: Faults{RateLimit: 0.2, ServerError500: 0.2, Malformed: 0.2}})
		for i := range 30 {
			post(t, ts, "/v1/chat/completions", newChatRequest("sim-chat", i, ipipPrompt), nil)
		}
		var faults []string
		for _, r := range s.Requests() {
			faults = append(faults, r.Fault)
		}
		return faults
	}
	a, b, c := run(1), run(1), run(2)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("same seed, different faults:\n%v\n%v", a, b)
	}
	if strings.Join(a, ",") == strings.Join(c, ",") {
		t.Errorf("seeds 1 and 2 gave the same faults %v", a)
	}
	n := 0
	for _, f := range a {
		if f != "" {
			n++
		}
	}
	if n < 9 || n > 27 {
		t.Errorf("%d of 30 calls faulted at a total rate of 0.6", n)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{RPM: -1},
		{Faults: Faults{Hang: 1.5}},
		{Faults: Faults{Drop: 0.6, Hang: 0.6}},
		{Latency: Latency{Fixed: -time.Second}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", cfg)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	yml := write("sim.yaml", `
latency: {fixed: 300ms, jitter: 200ms}
rpm: 500
tpm: 200000
burst: 0.5
faults: {rate_limit: 0.01, server_error_503: 0.02, hang: 0.001, length: 0.03, content_filter: 0.04}
fail_cells: [m/1/q7/p3, m/2/q7/p3]
refuse_json_schema: true
context_window: 2048
sampling: seeded
fault_seed: 7
hang_for: 1m
rate_limit_retry_after: 20s
models: [gpt-4o-mini, text-embedding-3-small]
outages: [{after: 10s, for: 90s}, {after: 5m, for: 20s, kind: html, status: 504}, {after: 10m, for: 1m, kind: refuse}]
served_model: snap-a
system_fingerprint: fp_a
snapshot_change: {from_seed: 3, served_model: snap-b}
`)
	cfg, err := LoadConfig(yml)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Latency: Latency{300 * time.Millisecond, 200 * time.Millisecond}, RPM: 500, TPM: 200000, Burst: 0.5,
		Faults: Faults{RateLimit: 0.01, ServerError503: 0.02, Hang: 0.001, Length: 0.03, ContentFilter: 0.04}, FaultSeed: 7, HangFor: time.Minute}
	models := cfg.Models
	cfg.Models = nil
	if strings.Join(cfg.FailCells, ",") != "m/1/q7/p3,m/2/q7/p3" {
		t.Errorf("LoadConfig: fail cells %q, want the file's two", cfg.FailCells)
	}
	if cfg.Latency != want.Latency || cfg.RPM != want.RPM || cfg.TPM != want.TPM || cfg.Burst != want.Burst ||
		cfg.Faults != want.Faults || cfg.FaultSeed != want.FaultSeed || cfg.HangFor != want.HangFor ||
		cfg.RateLimitRetryAfter != 20*time.Second || !cfg.RefuseJSONSchema || cfg.ContextWindow != 2048 ||
		cfg.Sampling != SamplingSeeded || strings.Join(models, ",") != "gpt-4o-mini,text-embedding-3-small" {
		t.Errorf("LoadConfig = %+v (models %v), want %+v", cfg, models, want)
	}

	if got, want := fmt.Sprint(cfg.Outages), fmt.Sprint([]Outage{{After: 10 * time.Second, For: 90 * time.Second},
		{After: 5 * time.Minute, For: 20 * time.Second, Kind: OutageHTML, Status: 504},
		{After: 10 * time.Minute, For: time.Minute, Kind: OutageRefuse}}); got != want {
		t.Errorf("LoadConfig: outages %s, want %s", got, want)
	}
	if cfg.ServedModel != "snap-a" || cfg.SystemFingerprint != "fp_a" || cfg.SnapshotChange == nil ||
		*cfg.SnapshotChange != (SnapshotChange{FromSeed: 3, ServedModel: "snap-b"}) {
		t.Errorf("LoadConfig: served %q %q, change %+v", cfg.ServedModel, cfg.SystemFingerprint, cfg.SnapshotChange)
	}

	js := write("sim.json", `{"rpm": 60, "latency": {"fixed": "5ms"}}`)
	if cfg, err := LoadConfig(js); err != nil || cfg.RPM != 60 || cfg.Latency.Fixed != 5*time.Millisecond {
		t.Errorf("LoadConfig(json) = %+v, %v", cfg, err)
	}

	for name, text := range map[string]string{
		"unknown.yaml":  "rpm: 5\nrmp: 6\n",
		"duration.yaml": "hang_for: forever\n",
		"rate.yaml":     "faults: {drop: 2}\n",
		"outage.yaml":   "outages: [{after: 1s, for: soon}]\n",
		"kind.yaml":     "outages: [{for: 1s, kind: reset}]\n",
	} {
		if _, err := LoadConfig(write(name, text)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("LoadConfig(%s): err %v, want an error naming the file", name, err)
		}
	}
	for name, want := range map[string]string{
		"outage.yaml": `outages[0].for: "soon" is not a duration`,
		"kind.yaml":   `outages[0].kind "reset"`,
	} {
		if _, err := LoadConfig(filepath.Join(dir, name)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadConfig(%s): err %v, want it to say %q", name, err, want)
		}
	}
}

func TestFailCells(t *testing.T) {
	// Every other request is malformed at random; the failing cell gets its 500 regardless.
	s, ts := newTestServer(t, Config{FailCells: []string{"m/1/q2/p1"}, Faults: Faults{Malformed: 0.5}, FaultSeed: 3})
	req := newChatRequest("sim-chat", 1, ipipPrompt)
	for range 3 {
		resp, body := post(t, ts, "/v1/chat/completions", req, map[string]string{CellHeader: "m/1/q2/p1"})
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("failing cell: status %d %s, want 500", resp.StatusCode, body)
		}
		if e := decodeError(t, body); e.Type != "server_error" || e.Message == "" {
			t.Errorf("failing cell: error %+v, want a server_error with a message", e)
		}
	}
	for range 4 {
		if resp, body := post(t, ts, "/v1/chat/completions", req, map[string]string{CellHeader: "m/1/q1/p1"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("other cell: status %d %s, want 200", resp.StatusCode, body)
		}
	}
	failed := 0
	for _, r := range s.Requests() {
		switch {
		case r.Cell == "m/1/q2/p1" && (r.Status != 500 || r.Fault != FaultFailCell):
			t.Errorf("failing cell logged %+v, want status 500, fault %q", r, FaultFailCell)
		case r.Cell == "m/1/q2/p1":
			failed++
		case r.Fault == FaultFailCell:
			t.Errorf("other cell logged %+v", r)
		}
	}
	if c := s.Counters(); failed != 3 || c.ServerErrors != 3 {
		t.Errorf("%d failing-cell entries, counters %+v; want 3 server errors", failed, c)
	}

	if _, err := New(Config{FailCells: []string{""}}); err == nil {
		t.Error("New accepted an empty fail cell, which would fail every request without a cell header")
	}
}

// stepClock is a clock that moves one second forward on every reading, so the order of readings shows in the
// times they return.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

// flushRecorder records the clock's time of the last Flush.
type flushRecorder struct {
	*httptest.ResponseRecorder
	clock   *stepClock
	flushed time.Time
}

func (f *flushRecorder) Flush() {
	f.ResponseRecorder.Flush()
	f.flushed = f.clock.Now()
}

func TestRequestDoneAfterFlush(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		faults Faults
		status int
	}{
		{"answer", false, Faults{}, 200},
		{"stream", true, Faults{}, 200},
		{"503", false, Faults{ServerError503: 1}, 503},
		{"429", false, Faults{RateLimit: 1}, 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			s, err := New(Config{Now: clock.Now, Faults: tc.faults})
			if err != nil {
				t.Fatal(err)
			}
			req := newChatRequest("sim-chat", 1, ipipPrompt)
			req.Stream = tc.stream
			b, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			w := &flushRecorder{ResponseRecorder: httptest.NewRecorder(), clock: clock}
			s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(string(b))))
			log := s.Requests()
			if w.Code != tc.status || len(log) != 1 {
				t.Fatalf("status %d, log %+v; want %d and one entry", w.Code, log, tc.status)
			}
			r := log[0]
			if w.flushed.IsZero() || !r.Done.After(w.flushed) || !r.Time.Before(w.flushed) {
				t.Errorf("arrived %v, flushed %v, done %v: want done after the last flush", r.Time, w.flushed, r.Done)
			}
		})
	}
}

func TestRequestDoneWhenClientLeaves(t *testing.T) {
	clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s, ts := newTestServer(t, Config{Now: clock.Now, Latency: Latency{Fixed: time.Hour}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := newClient(ts).CreateChatCompletion(ctx, newChatRequest("sim-chat", 1, ipipPrompt)); err == nil {
		t.Fatal("call with an hour of latency succeeded")
	}
	ts.Close() // waits for the handler
	log := s.Requests()
	if len(log) != 1 || log[0].Status != statusClientClosed || !log[0].Done.After(log[0].Time) {
		t.Errorf("log %+v, want one entry with status %d and done after its arrival", log, statusClientClosed)
	}
}

func TestInjected429sRetryAfter(t *testing.T) {
	_, ts := newTestServer(t, Config{Faults: Faults{RateLimit: 1}, RateLimitRetryAfter: 20 * time.Second})
	resp, b := post(t, ts, "/v1/chat/completions", newChatRequest("sim-chat", 1, ipipPrompt), nil)
	if e := decodeError(t, b); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "20" ||
		!strings.Contains(e.Message, "try again in 20s") {
		t.Errorf("status %d, Retry-After %q, error %+v; want 429 with Retry-After: 20", resp.StatusCode,
			resp.Header.Get("Retry-After"), e)
	}
}
