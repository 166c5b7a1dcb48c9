package sim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOutageConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outages []Outage
		want    string // "" for a valid config
	}{
		{"503 by default", []Outage{{After: time.Second, For: time.Minute}}, ""},
		{"429 wall", []Outage{{For: time.Minute, Status: 429}}, ""},
		{"html 502", []Outage{{For: time.Minute, Kind: OutageHTML}}, ""},
		{"refuse", []Outage{{For: time.Minute, Kind: OutageRefuse}}, ""},
		{"two windows back to back", []Outage{{After: time.Minute, For: time.Minute}, {For: time.Minute}}, ""},
		{"negative after", []Outage{{After: -time.Second, For: time.Minute}}, "outages[0].after -1s: want a duration >= 0"},
		{"zero for", []Outage{{After: time.Second}}, "outages[0].for 0s: want a positive duration"},
		{"negative for", []Outage{{For: -time.Second}}, "outages[0].for -1s"},
		{"unknown kind", []Outage{{For: time.Minute, Kind: "reset"}}, `outages[0].kind "reset": want one of ["status" "html" "refuse"]`},
		{"status not an error", []Outage{{For: time.Minute, Status: 200}}, `outages[0].status 200: want one of [429 500 502 503 504] for kind "status"`},
		{"html 429", []Outage{{For: time.Minute, Kind: OutageHTML, Status: 429}}, `for kind "html"`},
		{"refuse with a status", []Outage{{For: time.Minute, Kind: OutageRefuse, Status: 503}}, "a refused connection has no status"},
		{"overlap", []Outage{{For: time.Minute}, {After: 30 * time.Second, For: time.Minute, Kind: OutageHTML}},
			"outages 503 for 1m0s from 0s after the first call and 502 HTML for 1m0s from 30s after the first call overlap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Outages: tc.outages})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New: %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// outageAnswer is what a chat call is expected to get during the outage.
type outageAnswer struct {
	status      int
	contentType string
	body        string // the body contains it
	// dropped: the connection is closed without a response.
	dropped bool
}

// TestOutageWindow walks an injected clock through an outage: answers before it, the outage's own answer from
// its first instant to the last before its end (chat and embeddings alike, /v1/models untouched), answers again
// from its end, and the log and counters of each.
func TestOutageWindow(t *testing.T) {
	const after, lasts = 10 * time.Second, 90 * time.Second
	for _, tc := range []struct {
		name   string
		outage Outage
		want   outageAnswer
	}{
		{"503 default", Outage{}, outageAnswer{status: 503, contentType: "application/json",
			body: `"type":"server_error"`}},
		{"500", Outage{Status: 500}, outageAnswer{status: 500, contentType: "application/json",
			body: `The server had an error`}},
		{"429 wall", Outage{Status: 429}, outageAnswer{status: 429, contentType: "application/json",
			body: `"code":"rate_limit_exceeded"`}},
		{"502 html", Outage{Kind: OutageHTML}, outageAnswer{status: 502, contentType: "text/html",
			body: "<html>\r\n<head><title>502 Bad Gateway</title></head>"}},
		{"504 html", Outage{Kind: OutageHTML, Status: 504}, outageAnswer{status: 504, contentType: "text/html",
			body: "<center><h1>504 Gateway Timeout</h1></center>\r\n<hr><center>nginx</center>"}},
		{"refuse on a bare handler", Outage{Kind: OutageRefuse}, outageAnswer{dropped: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			o := tc.outage
			o.After, o.For = after, lasts
			// RPM on, so that the limit's headers are there outside the outage and must be missing inside it.
			s, ts := newTestServer(t, Config{Outages: []Outage{o}, RPM: 10000, Now: clock.Now})
			chat := newChatRequest("gpt-4o-mini", 1, ipipPrompt)
			embed := map[string]any{"model": "text-embedding-3-small", "input": "hello"}
			cell := map[string]string{CellHeader: "m/1/q1/p1"}
			answered := func(when string) {
				t.Helper()
				for _, path := range []string{"/v1/chat/completions", "/v1/embeddings"} {
					body := any(chat)
					if path == "/v1/embeddings" {
						body = embed
					}
					resp, data := post(t, ts, path, body, cell)
					if resp.StatusCode != 200 || resp.Header.Get("X-Ratelimit-Limit-Requests") == "" {
						t.Errorf("%s, %s: status %d, limit header %q, body %.200s; want 200 with the limit's headers",
							when, path, resp.StatusCode, resp.Header.Get("X-Ratelimit-Limit-Requests"), data)
					}
				}
			}
			failed := func(when string) {
				t.Helper()
				for _, path := range []string{"/v1/chat/completions", "/v1/embeddings"} {
					body := any(chat)
					if path == "/v1/embeddings" {
						body = embed
					}
					if tc.want.dropped {
						if resp, err := tryPost(t, ts, path, body); err == nil {
							t.Errorf("%s, %s: status %d, want the connection closed without a response", when, path, resp.StatusCode)
						}
						continue
					}
					resp, data := post(t, ts, path, body, cell)
					if resp.StatusCode != tc.want.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.want.contentType) ||
						!strings.Contains(string(data), tc.want.body) {
						t.Errorf("%s, %s: status %d, content type %q, body %.200s; want %d, %s, containing %q", when, path,
							resp.StatusCode, resp.Header.Get("Content-Type"), data, tc.want.status, tc.want.contentType, tc.want.body)
					}
					for k := range resp.Header {
						if k == "Retry-After" || k == "Retry-After-Ms" || strings.HasPrefix(k, "X-Ratelimit-") {
							t.Errorf("%s, %s: header %s: %q, want none saying when to retry", when, path, k, resp.Header.Get(k))
						}
					}
				}
			}

			answered("the first call")
			clock.Advance(after - time.Nanosecond)
			answered("just before the outage")
			clock.Advance(time.Nanosecond)
			failed("at the outage's start")
			resp, err := ts.Client().Get(ts.URL + "/v1/models")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("/v1/models during the outage: status %d, want 200", resp.StatusCode)
			}
			clock.Advance(lasts - time.Nanosecond)
			failed("just before the outage's end")
			clock.Advance(time.Nanosecond)
			answered("at the outage's end")

			if first, ok := s.FirstCall(); !ok || !first.Equal(newFakeClock().Now()) {
				t.Errorf("FirstCall = %v, %v; want the first call's arrival %v", first, ok, newFakeClock().Now())
			}
			var outage, ok int
			for _, r := range s.Requests() {
				switch {
				case r.Fault == FaultOutage:
					outage++
					if r.Cell != "m/1/q1/p1" && !tc.want.dropped {
						t.Errorf("outage entry %+v: cell missing", r)
					}
					if r.Status != tc.want.status {
						t.Errorf("outage entry %+v: status %d, want %d", r, r.Status, tc.want.status)
					}
				case r.Answered():
					ok++
				}
			}
			c := s.Counters()
			if outage != 4 || ok != 6 || c.Outage != 4 || c.OK != 6 || c.ServerErrors+c.RateLimited != 0 {
				t.Errorf("log: %d outage entries, %d answered; counters %+v; want 4 outage calls (counted as Outage "+
					"only) and 6 answered", outage, ok, c)
			}
		})
	}
}

// tryPost is post for a request that may get no response.
func tryPost(t *testing.T, ts *httptest.Server, path string, body any) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+path, bytes.NewReader(mustJSON(t, body)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.Client().Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// TestOutageKeepsFaultSequence: the calls outside an outage get the same seeded faults as without it, however
// many calls the outage swallowed.
func TestOutageKeepsFaultSequence(t *testing.T) {
	faults := Faults{ServerError503: 0.3, ServerError500: 0.2, RateLimit: 0.1}
	faultsOf := func(outages []Outage, during int) []string {
		clock := newFakeClock()
		s, ts := newTestServer(t, Config{Faults: faults, FaultSeed: 11, Outages: outages, Now: clock.Now})
		call := func() { post(t, ts, "/v1/chat/completions", newChatRequest("gpt-4o-mini", 1, ipipPrompt), nil) }
		for range 15 {
			call()
		}
		clock.Advance(time.Minute)
		for range during {
			call()
		}
		clock.Advance(time.Minute)
		for range 15 {
			call()
		}
		var out []string
		for _, r := range s.Requests() {
			if r.Fault != FaultOutage {
				out = append(out, r.Fault+"/"+http.StatusText(r.Status))
			}
		}
		return out
	}
	want := faultsOf(nil, 0)
	got := faultsOf([]Outage{{After: time.Minute, For: time.Minute}}, 7)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("faults outside the outage:\n%v\nwant those without it:\n%v", got, want)
	}
	faulted := 0
	for _, f := range want {
		if !strings.HasPrefix(f, "/") {
			faulted++
		}
	}
	if len(want) != 30 || faulted == 0 || faulted == len(want) {
		t.Errorf("%d calls, %d with a fault: the comparison above proves nothing", len(want), faulted)
	}
}

// TestServeRefuses: Serve closes the port for a refuse window (ECONNREFUSED, and connections kept alive from
// before are closed too) and listens on the same port after it. The window is on an injected clock, so what is
// seen in and after it does not depend on how fast the machine is.
func TestServeRefuses(t *testing.T) {
	clock := newFakeClock()
	s, err := New(Config{Outages: []Outage{{After: time.Minute, For: time.Minute, Kind: OutageRefuse}}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	changes := make(chan bool, 4)
	sv, err := serve(s, ln, func(up bool) { changes <- up })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sv.Close() })
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	call := func() (int, error) {
		req, err := http.NewRequest(http.MethodPost, sv.URL()+"/chat/completions",
			bytes.NewReader(mustJSON(t, newChatRequest("gpt-4o-mini", 1, ipipPrompt))))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	waitChange := func(want bool) {
		t.Helper()
		select {
		case up := <-changes:
			if up != want {
				t.Fatalf("listener up = %v, want %v", up, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the listener did not change to up = %v within 10s", want)
		}
	}
	dial := func() error {
		c, err := net.DialTimeout("tcp", sv.Addr(), 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}

	if st, err := call(); err != nil || st != 200 {
		t.Fatalf("first call: %d, %v; want 200", st, err)
	}
	clock.Advance(time.Minute)
	waitChange(false)
	if err := dial(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial during the outage: %v, want ECONNREFUSED", err)
	}
	// The connection kept alive from the first call was closed with the listener: a call on it fails (with EOF
	// when the client had not yet seen the close and reused it; a POST is not retried), and a call that dials is
	// refused.
	st, err := call()
	if err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
		st, err = call() // the pooled connection's close was seen by this first call; this one dials
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("call during the outage: %d, %v; want ECONNREFUSED", st, err)
	}
	clock.Advance(time.Minute - time.Nanosecond)
	if err := dial(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial just before the outage's end: %v, want ECONNREFUSED", err)
	}
	clock.Advance(time.Nanosecond)
	waitChange(true)
	if st, err := call(); err != nil || st != 200 {
		t.Errorf("call after the outage: %d, %v; want 200 on the same port %s", st, err, sv.Addr())
	}
	if err := sv.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}

	closed := make(chan error, 1)
	go func() { closed <- sv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s")
	}
	if err := dial(); err == nil {
		t.Error("dial after Close: connected, want the port closed")
	}
}

// Close and Shutdown end a Served that waits for its first call, or sits in a refuse window.
func TestServeStops(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inside bool // stop it during the refuse window
		stop   func(*Served) error
	}{
		{"close before the first call", false, (*Served).Close},
		{"shutdown before the first call", false, func(sv *Served) error { return sv.Shutdown(context.Background()) }},
		{"close in the window", true, (*Served).Close},
		{"shutdown in the window", true, func(sv *Served) error { return sv.Shutdown(context.Background()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			s, err := New(Config{Outages: []Outage{{For: time.Hour, Kind: OutageRefuse}}, Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			downs := make(chan bool, 2)
			sv, err := serve(s, ln, func(up bool) { downs <- up })
			if err != nil {
				t.Fatal(err)
			}
			if tc.inside {
				// The first call starts the window at once; its own connection is closed under it.
				_, _ = http.Post(sv.URL()+"/embeddings", "application/json", strings.NewReader(`{"model":"e","input":"x"}`))
				select {
				case <-downs:
				case <-time.After(10 * time.Second):
					t.Fatal("the listener did not go down within 10s")
				}
			}
			stopped := make(chan error, 1)
			go func() { stopped <- tc.stop(sv) }()
			select {
			case err := <-stopped:
				if err != nil {
					t.Errorf("stop: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("stop did not return within 10s")
			}
			if c, err := net.DialTimeout("tcp", sv.Addr(), 5*time.Second); err == nil {
				c.Close()
				t.Error("dial after stop: connected, want the port closed")
			}
		})
	}
}

func TestServeNeedsTCPForRefuse(t *testing.T) {
	s, err := New(Config{Outages: []Outage{{For: time.Minute, Kind: OutageRefuse}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", t.TempDir()+"/sim.sock")
	if err != nil {
		t.Skipf("no unix sockets here: %v", err)
	}
	defer ln.Close()
	if _, err := Serve(s, ln); err == nil || !strings.Contains(err.Error(), "needs a TCP listener") {
		t.Errorf("Serve on a unix socket: %v, want an error saying refuse needs TCP", err)
	}
}
