package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// benchBodies are chat requests over a small grid (seeds × items), as the runner sends them.
func benchBodies(b *testing.B) [][]byte {
	b.Helper()
	var bodies [][]byte
	for seed := range 8 {
		for item := range 16 {
			req := newChatRequest("sim-chat", seed, "Item "+strconv.Itoa(item)+". "+ipipPrompt)
			//lint:ignore SA1019 the simulator serves the max_tokens that OpenAI-compatible clients send.
			req.MaxTokens = 16
			body, err := json.Marshal(req)
			if err != nil {
				b.Fatal(err)
			}
			bodies = append(bodies, body)
		}
	}
	return bodies
}

// BenchmarkServeHTTP is the handler's own cost per chat call at zero latency, without a network.
func BenchmarkServeHTTP(b *testing.B) {
	s, err := New(Config{RPM: 1 << 30, TPM: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	bodies := benchBodies(b)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(bodies[i%len(bodies)]))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
		i++
	}
}

// BenchmarkLoopback is a chat call over HTTP on 127.0.0.1, the baseline of the runner's benchmarks.
func BenchmarkLoopback(b *testing.B) {
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	bodies := benchBodies(b)
	client := ts.Client()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			resp, err := client.Post(ts.URL+"/v1/chat/completions", "application/json",
				bytes.NewReader(bodies[i%len(bodies)]))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			i++
		}
	})
}
