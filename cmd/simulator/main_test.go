package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/silicolab/silico/sim"
)

// startRun runs the command with args and returns its base URL and a function that stops it and returns run's error.
func startRun(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, pw, io.Discard)
		pw.CloseWithError(errors.New("run returned"))
		done <- err
	}()
	stop := func() error {
		cancel()
		go func() { _, _ = io.Copy(io.Discard, pr) }() // run's remaining output, if any
		return <-done
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("run %v printed no URL: %v (run: %v)", args, err, <-done)
	}
	return strings.TrimSpace(line), stop
}

func TestServesAndStops(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	url, stop := startRun(t, "--addr", "127.0.0.1:0", "--latency", "0", "--jitter", "0", "--fault-429", "0",
		"--models", "a, b", "--request-log", logPath)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("URL %q, want http://127.0.0.1:port", url)
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || len(list.Data) != 2 || list.Data[0].ID != "a" || list.Data[1].ID != "b" {
		t.Errorf("models %+v (err %v), want a, b", list, err)
	}
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions",
		strings.NewReader(`{"model":"a","seed":1,"messages":[{"role":"user","content":"1. Yes\n2. No"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(sim.CellHeader, "a/1/q1/p1")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("chat: status %d, want 200", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatalf("run after stop: %v", err)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var last sim.Request
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Cell != "a/1/q1/p1" || last.Status != 200 {
		t.Errorf("request log %s (err %v), want the chat call of cell a/1/q1/p1", data, err)
	}
}

func TestHangingCallDoesNotBlockStop(t *testing.T) {
	url, stop := startRun(t, "--addr", "127.0.0.1:0", "--latency", "0", "--jitter", "0", "--fault-429", "0",
		"--fault-hang", "1", "--grace", "50ms")
	errc := make(chan error, 1)
	wrote := make(chan struct{})
	go func() {
		// The stop must meet the call in flight: the request is on the wire before stop is called, so the server
		// reads it and hangs rather than closing an idle connection.
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPost,
			url+"/v1/chat/completions", strings.NewReader(`{"model":"a","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			errc <- err
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-wrote:
	case err := <-errc:
		t.Fatalf("the call failed before it was sent: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not sent within 10s")
	}
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stop took %v", d)
	}
	if err := <-errc; err == nil {
		t.Error("hanging call got a response")
	}
}

func TestConfigAndFlags(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(cfgPath, []byte("rpm: 1\nmodels: [from-file]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file sets rpm 1 and no latency; --models overrides the file's list.
	url, stop := startRun(t, "--addr", "127.0.0.1:0", "--config", cfgPath, "--models", "from-flag")
	defer stop()
	body := `{"model":"a","messages":[{"role":"user","content":"hi"}]}`
	codes := []int{}
	for range 2 {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if codes[0] != 200 || codes[1] != 429 {
		t.Errorf("statuses %v, want [200 429] with the file's rpm 1", codes)
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "from-flag") || strings.Contains(string(b), "from-file") {
		t.Errorf("models %s, want the flag's list", b)
	}
}

func TestUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("rpm: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"extra"},
		{"--fault-hang", "2"},
		{"--fault-content-filter", "1.5"},
		{"--config", bad},
		{"--config", filepath.Join(t.TempDir(), "missing.yaml")},
		{"--outage-kind", "html"},
		{"--outage-for", "-1s"},
		{"--outage-for", "1m", "--outage-kind", "reset"},
		{"--outage-for", "1m", "--outage-status", "200"},
		{"--outage-for", "1m", "--outage-kind", "refuse", "--outage-status", "503"},
	} {
		err := run(t.Context(), args, io.Discard, io.Discard)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("run(%v) = %v, want a usage error", args, err)
		}
	}
}

// TestNoFaultsByDefault: without fault flags every call succeeds; faults are opt-in.
func TestNoFaultsByDefault(t *testing.T) {
	url, stop := startRun(t, "--addr", "127.0.0.1:0", "--latency", "0", "--jitter", "0")
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run after stop: %v", err)
		}
	}()
	statuses := map[int]int{}
	for i := range 500 {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"model":"gpt-4o-mini","seed":%d,"messages":[{"role":"user","content":"1. Yes\n2. No"}]}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses[resp.StatusCode]++
	}
	if statuses[http.StatusOK] != 500 {
		t.Errorf("statuses %v, want 500 × 200 with the default flags", statuses)
	}
}

// TestFinishReasonFaultFlags: --fault-length and --fault-content-filter give chat answers those finish reasons.
func TestFinishReasonFaultFlags(t *testing.T) {
	for flag, want := range map[string]string{"--fault-length": "length", "--fault-content-filter": "content_filter"} {
		url, stop := startRun(t, "--addr", "127.0.0.1:0", "--latency", "0", "--jitter", "0", flag, "1")
		resp, err := http.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"a","seed":1,"messages":[{"role":"user","content":"1. Yes\n2. No"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err := stop(); err != nil {
			t.Errorf("run after stop: %v", err)
		}
		if err != nil || resp.StatusCode != http.StatusOK || len(body.Choices) != 1 || body.Choices[0].FinishReason != want {
			t.Errorf("%s 1: status %d, %+v (%v); want 200 with finish_reason %s", flag, resp.StatusCode, body, err, want)
		}
	}
}

func TestFailCellFlag(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	url, stop := startRun(t, "--addr", "127.0.0.1:0", "--latency", "0", "--jitter", "0", "--fault-429", "0",
		"--fail-cell", "a/1/q1/p1", "--fail-cell", "a/1/q2/p1", "--request-log", logPath)
	status := map[string]int{}
	for _, cell := range []string{"a/1/q1/p1", "a/1/q2/p1", "a/1/q3/p1"} {
		req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions",
			strings.NewReader(`{"model":"a","seed":1,"messages":[{"role":"user","content":"1. Yes\n2. No"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(sim.CellHeader, cell)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		status[cell] = resp.StatusCode
	}
	if err := stop(); err != nil {
		t.Fatalf("run after stop: %v", err)
	}
	if status["a/1/q1/p1"] != 500 || status["a/1/q2/p1"] != 500 || status["a/1/q3/p1"] != 200 {
		t.Errorf("statuses %v, want 500 for the two failing cells and 200 for the other", status)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 {
		t.Fatalf("request log has %d lines, want 3:\n%s", len(lines), data)
	}
	for _, l := range lines {
		var r sim.Request
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if wantFault := r.Cell != "a/1/q3/p1"; (r.Fault == sim.FaultFailCell) != wantFault || r.Done.Before(r.Time) || r.Done.IsZero() {
			t.Errorf("request log line %s: want fault %q only on the failing cells, and done set, not before time", l, sim.FaultFailCell)
		}
	}
}

// TestOutageFlags: an outage from the first call on, for an hour, answers every model call as its kind says, and
// the model list as usual.
func TestOutageFlags(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		status      int
		contentType string
		body        string
	}{
		{"503 by default", nil, 503, "application/json", `"type":"server_error"`},
		{"429 wall", []string{"--outage-status", "429"}, 429, "application/json", `"code":"rate_limit_exceeded"`},
		{"html", []string{"--outage-kind", "html"}, 502, "text/html", "<title>502 Bad Gateway</title>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--addr", "127.0.0.1:0", "--latency", "0", "--jitter", "0", "--outage-for", "1h"}, tc.args...)
			url, stop := startRun(t, args...)
			defer func() {
				if err := stop(); err != nil {
					t.Errorf("run after stop: %v", err)
				}
			}()
			for _, path := range []string{"/v1/chat/completions", "/v1/embeddings"} {
				resp, err := http.Post(url+path, "application/json",
					strings.NewReader(`{"model":"a","input":"x","messages":[{"role":"user","content":"hi"}]}`))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.contentType) ||
					!strings.Contains(string(b), tc.body) || resp.Header.Get("Retry-After") != "" {
					t.Errorf("%s: %d %q %s (Retry-After %q), want %d %s containing %q and no Retry-After", path,
						resp.StatusCode, resp.Header.Get("Content-Type"), b, resp.Header.Get("Retry-After"),
						tc.status, tc.contentType, tc.body)
				}
			}
			resp, err := http.Get(url + "/v1/models")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("/v1/models during the outage: %d, want 200", resp.StatusCode)
			}
		})
	}
}

// TestOutageRefuseFlag: with --outage-kind refuse the command closes its port once the first call has come, and
// stops cleanly while it is closed.
func TestOutageRefuseFlag(t *testing.T) {
	url, stop := startRun(t, "--addr", "127.0.0.1:0", "--latency", "0", "--jitter", "0", "--outage-for", "1h",
		"--outage-kind", "refuse")
	addr := strings.TrimPrefix(url, "http://")
	// The first call starts the outage; it loses its connection.
	if resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"a","messages":[{"role":"user","content":"hi"}]}`)); err == nil {
		resp.Body.Close()
		t.Errorf("first call: %d, want its connection closed", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
		if err == nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial %s: %v 10s into the outage, want ECONNREFUSED", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Errorf("run after stop in the outage: %v", err)
	}
}

func TestVersionAndHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"--version"}, &out, io.Discard); err != nil {
		t.Fatalf("--version: %v", err)
	}
	if got := out.String(); !strings.HasPrefix(got, "simulator ") || !strings.Contains(got, "go1.") {
		t.Errorf("--version printed %q, want \"simulator <version> … go1.x\"", got)
	}
	out.Reset()
	if err := run(t.Context(), []string{"--help"}, &out, io.Discard); err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, f := range []string{"--addr", "--fault-429", "--outage-kind", "--version"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("--help does not list %s:\n%s", f, out.String())
		}
	}
}

// TestVersionNamesTheRevision builds the simulator from this checkout with VCS stamping on and checks that
// --version prints the checkout's HEAD revision. It skips outside a git clone (a worktree's .git is a file the
// toolchain does not read, and a source archive has none).
func TestVersionNamesTheRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !fi.IsDir() {
		t.Skip("a git worktree or no .git directory: the toolchain stamps no revision")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "simulator")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("simulator --version: %v", err)
	}
	if want := "revision " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("--version printed %q; want it to name %s", out, want)
	}
}
