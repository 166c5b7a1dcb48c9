package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/silicolab/silico/logging"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workerhost"
	"github.com/silicolab/silico/workflows"
)

// The secrets of the test. Neither may appear anywhere but in the Authorization header. The second is not shaped
// like an OpenAI key, so only exact redaction of the configured key can hide it.
const (
	secretEnv1 = "SILICO_TEST_API_KEY"
	secret1    = "sk-test-SECRET-123"
	secretEnv2 = "SILICO_OTHER_API_KEY"
	secret2    = "tok-OTHER-SECRET-456"
	// refusedEnv holds a credential the worker's allow-list (names ending in _API_KEY) does not admit.
	refusedEnv = "SILICO_CLOUD_TOKEN"
	refused    = "cloud-REFUSED-SECRET-789"
)

// secretMarkers are substrings of the secrets: a partly redacted key is still a leak.
var secretMarkers = []string{"SECRET-123", "SECRET-456", "SECRET-789"}

// keyEcho wraps the simulator as a provider that checks keys: it records every Authorization header and echoes
// the key wherever a provider could: a 401 message under /auth/; for persona p1 a 400 whose error code, type,
// param and message all carry it; for persona p2 an HTML error page (item 2) and an answer text (item 3); for
// persona p0 and item 4 a first 503 with the key in every field (retried). So the key reaches every field silico
// records or logs unless silico removes it. Requests under /refused/ must never come.
type keyEcho struct {
	next http.Handler
	mu   sync.Mutex
	auth map[string]int
	// refused counts requests to /refused/, the endpoint of the model whose key variable is not allowed.
	refused int
	// unavailable holds the cells already answered 503 once (with the key in every field): transient
	// failures that are retried, and logged on the way.
	unavailable map[string]bool
}

func (k *keyEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := r.Header.Get("Authorization")
	k.mu.Lock()
	k.auth[h]++
	if strings.HasPrefix(r.URL.Path, "/refused/") {
		k.refused++
	}
	k.mu.Unlock()
	key := strings.TrimPrefix(h, "Bearer ")
	cell := r.Header.Get("X-Silico-Cell")
	echo := func(status int, code, typ, param string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("Incorrect API key provided: %s. Header was %q.", key, h),
			"type":    typ, "code": code, "param": param}})
	}
	k.mu.Lock()
	first503 := strings.HasSuffix(cell, "/4/p0") && !k.unavailable[cell]
	if first503 {
		k.unavailable[cell] = true
	}
	k.mu.Unlock()
	switch {
	case first503:
		echo(http.StatusServiceUnavailable, "overloaded_"+key, "server_error "+h, h)
	case strings.HasPrefix(r.URL.Path, "/auth/"), strings.HasPrefix(r.URL.Path, "/refused/"):
		echo(http.StatusUnauthorized, "invalid_api_key", "invalid_request_error", "")
	case strings.HasSuffix(cell, "/p1"):
		echo(http.StatusBadRequest, "bad_key_"+key, "invalid_request_error "+h, "header "+h)
	case strings.HasSuffix(cell, "/2/p2"):
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = fmt.Fprintf(w, "<html><body><h1>422 Unprocessable</h1><p>request with %s refused</p></body></html>", h)
	case strings.HasSuffix(cell, "/3/p2"):
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "x", "object": "chat.completion", "model": "echo",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "3. You sent " + h}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	default:
		k.next.ServeHTTP(w, r)
	}
}

func (k *keyEcho) count(h string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.auth[h]
}

// TestSecretsNeverLeak runs a grid on OpenAI-compatible endpoints (provider "sim", whose requests carry the cell
// header the echoing provider picks its errors by) with keys from the worker's environment, through a
// provider that echoes the key in its errors and a simulator that injects server errors, and checks that the keys
// appear in none of: workflow history (input included), the worker's logs, the outputs, the results store.
func TestSecretsNeverLeak(t *testing.T) {
	var logs syncBuffer
	zl, err := logging.New(logging.FormatJSON, "debug", &logs)
	if err != nil {
		t.Fatal(err)
	}
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.NewClientWithOptions(client.Options{Logger: logging.Temporal(zl)})

	var reqLog syncBuffer
	simSrv, err := sim.New(sim.Config{Faults: sim.Faults{ServerError500: 0.15}, FaultSeed: 3, RequestLog: &reqLog})
	if err != nil {
		t.Fatal(err)
	}
	echo := &keyEcho{next: simSrv, auth: map[string]int{}, unavailable: map[string]bool{}}
	hs := httptest.NewServer(echo)
	t.Cleanup(hs.Close)

	dir := t.TempDir()
	storePath := filepath.Join(dir, "results.db")
	st, err := store.OpenSQLite(context.Background(), storePath)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{secretEnv1: secret1, secretEnv2: secret2, refusedEnv: refused}
	w, err := workerhost.New(c, workerhost.Config{
		Store:      st,
		Getenv:     func(k string) string { return env[k] },
		OutputRoot: filepath.Join(dir, "out"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stopWorker := func() {
		if !stopped {
			stopped = true
			w.Stop()
			_ = st.Close()
		}
	}
	t.Cleanup(stopWorker)

	// m0: key 1, answered (server errors injected, personas p1 and p2 meet the key echoed);
	// m1: key 2, the same; m2: key 1 on an endpoint that refuses it (401 with the key echoed);
	// m3: a variable outside the worker's allow-list: refused by the worker, nothing sent.
	spec := gridSpec(4, 2, 4, 3)
	spec.Name = "secrets"
	for i, m := range []struct{ env, path string }{{secretEnv1, "/v1"}, {secretEnv2, "/v1"}, {secretEnv1, "/auth/v1"},
		{refusedEnv, "/refused/v1"}} {
		spec.Models[i].Provider = "sim"
		spec.Models[i].BaseURL = hs.URL + m.path
		spec.Models[i].APIKeyEnv = m.env
	}
	spec.Run.MaxConcurrency = 4
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}

	id := "secrets-run"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, specInput(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("run of %d cells in %s: %+v", spec.NumCells(), time.Since(start).Round(time.Millisecond), res.Summary)

	// The keys were sent, each to its model's endpoint.
	if n := echo.count("Bearer " + secret1); n == 0 {
		t.Errorf("no request carried Authorization: Bearer %s", secret1)
	}
	if n := echo.count("Bearer " + secret2); n == 0 {
		t.Errorf("no request carried Authorization: Bearer %s", secret2)
	}
	if n := echo.count(""); n != 0 {
		t.Errorf("%d requests without Authorization", n)
	}
	// The run met every kind of error this test sets up, so the checks below are not vacuous.
	if res.Summary.Failed == 0 {
		t.Fatalf("no failed cells: the key-echoing errors did not happen")
	}
	var retried bool
	for _, e := range readRequestLogBytes(t, reqLog.Bytes()) {
		if e.Status == http.StatusInternalServerError {
			retried = true
		}
	}
	if !retried {
		t.Errorf("no injected server error: raise the fault rate")
	}

	echo.mu.Lock()
	unavailable, refusedCalls := len(echo.unavailable), echo.refused
	echo.mu.Unlock()
	if unavailable == 0 {
		t.Errorf("no cell met the key-echoing 503")
	}
	// The worker refused the variable outside its allow-list: no request, every cell of m3 failed saying why.
	if refusedCalls != 0 || echo.count("Bearer "+refused) != 0 {
		t.Errorf("%d requests reached the endpoint of the model with a refused key variable", refusedCalls)
	}
	var prog wire.Progress
	if v, err := c.QueryWorkflow(ctx, id, "", wire.QueryProgress); err != nil || v.Get(&prog) != nil {
		t.Fatalf("query progress: %v", err)
	}
	status, err := json.Marshal(prog)
	if err != nil {
		t.Fatal(err)
	}

	// History, fetched in full: JSON and the binary form (payload bytes appear there undecoded).
	var hist bytes.Buffer
	iter := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	events := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		events++
		j, err := protojson.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		hist.Write(j)
		hist.Write(b)
	}
	if !bytes.Contains(hist.Bytes(), []byte(secretEnv1)) {
		t.Errorf("history does not name %s: the input was not found in it", secretEnv1)
	}
	t.Logf("%d history events, %d bytes of logs", events, len(logs.Bytes()))

	// Stop the worker and close the store, so that everything it wrote is on disk.
	stopWorker()

	places := map[string][]byte{"workflow history": hist.Bytes(), "worker logs": logs.Bytes(), "simulator request log": reqLog.Bytes(),
		"status (progress query)": status}
	if !strings.Contains(logs.String(), "model call failed") {
		t.Errorf("worker logs have no \"model call failed\" line; the test expects the refused cells to be logged:\n%s", tail(logs.String(), 2000))
	}
	outDir := filepath.Join(dir, "out", id)
	for _, name := range []string{"results.jsonl", "results.csv", "summary.json", "scales.csv"} {
		b, err := os.ReadFile(filepath.Join(outDir, name))
		if err != nil {
			if name == "scales.csv" && os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		places[name] = b
	}
	if !bytes.Contains(places["results.jsonl"], []byte("Incorrect API key provided")) {
		t.Errorf("results.jsonl has no echoed provider message; the test expects the refused cells to carry it")
	}
	// Every echo reached the outputs, redacted: the checks for the secrets below are not vacuous.
	rows := map[string]results.Row{}
	if err := results.ReadJSONL(bytes.NewReader(places["results.jsonl"]), func(r results.Row) error {
		rows[r.CellID] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for cell, want := range map[string]func(r results.Row) bool{
		"m0/100/1/p1": func(r results.Row) bool {
			return r.ErrorClass == "InvalidRequest" && r.ErrorCode == "bad_key_[REDACTED]" && strings.Contains(r.ErrorMessage, "[REDACTED]")
		},
		"m1/101/4/p1": func(r results.Row) bool { return r.ErrorCode == "bad_key_[REDACTED]" },
		"m0/100/2/p2": func(r results.Row) bool {
			return r.ErrorClass == "InvalidRequest" && strings.Contains(r.ErrorMessage, "<html>") && strings.Contains(r.ErrorMessage, "[REDACTED]")
		},
		"m1/100/3/p2": func(r results.Row) bool { return r.Status == "ok" && r.Raw == "3. You sent Bearer [REDACTED]" },
		"m0/100/4/p0": func(r results.Row) bool { return r.Status != "failed" }, // answered after its 503
		"m3/100/1/p0": func(r results.Row) bool {
			return r.Status == "failed" && r.ErrorClass == "Auth" && strings.Contains(r.ErrorMessage, refusedEnv) &&
				strings.Contains(r.ErrorMessage, "allow")
		},
	} {
		if r, ok := rows[cell]; !ok || !want(r) {
			t.Errorf("cell %s = %+v; not the redacted echo the test expects", cell, r)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "results.db") {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			places["store file "+e.Name()] = b
		}
	}
	for where, b := range places {
		for _, m := range secretMarkers {
			if i := bytes.Index(b, []byte(m)); i >= 0 {
				lo, hi := max(0, i-200), min(len(b), i+100)
				t.Errorf("secret %q found in %s: ...%q...", m, where, b[lo:hi])
			}
		}
	}
}

func readRequestLogBytes(t *testing.T, b []byte) []logEntry {
	t.Helper()
	var out []logEntry
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e logEntry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("request log: %v: %q", err, line)
		}
		out = append(out, e)
	}
	return out
}
