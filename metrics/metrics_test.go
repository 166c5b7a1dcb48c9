package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return string(b)
}

func TestSDKMetricsAreServed(t *testing.T) {
	p := NewPrometheus(func(err error) { t.Errorf("register: %v", err) })
	defer p.Close()
	srv := httptest.NewServer(p.HTTP)
	defer srv.Close()

	// What the SDK does with its handler: tagged counters and timers, and the same name with other labels.
	h := p.Handler.WithTags(map[string]string{"task_queue": "silico"})
	h.Counter("temporal_request").Inc(3)
	h.Timer("temporal_activity_execution_latency").Record(250 * time.Millisecond)

	deadline := time.Now().Add(10 * time.Second)
	var body string
	for {
		body = scrape(t, srv.URL)
		if strings.Contains(body, `temporal_request_total{task_queue="silico"} 3`) &&
			strings.Contains(body, "temporal_activity_execution_latency_seconds_bucket") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics not served within the deadline:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRegistriesAreSeparate(t *testing.T) {
	// Two workers in one process (tests, the embedded starter) must not clash in a global registry.
	fail := func(err error) { t.Errorf("register: %v", err) }
	a, b := NewPrometheus(fail), NewPrometheus(fail)
	defer b.Close()
	a.Handler.Counter("only_in_a").Inc(1)
	if err := a.Close(); err != nil { // a last report
		t.Fatal(err)
	}
	srvA := httptest.NewServer(a.HTTP)
	defer srvA.Close()
	if body := scrape(t, srvA.URL); !strings.Contains(body, "only_in_a") {
		t.Fatalf("a does not serve its metric:\n%s", body)
	}
	srv := httptest.NewServer(b.HTTP)
	defer srv.Close()
	if body := scrape(t, srv.URL); strings.Contains(body, "only_in_a") {
		t.Fatalf("b serves a's metric:\n%s", body)
	}
}
