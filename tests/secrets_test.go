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
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/workerhost"
	"github.com/silicolab/silico/workflows"
)

// The secrets of the test. Neither may appear anywhere but in the Authorization header. The second is not shaped
// like an OpenAI key, so only exact redaction of the configured key can hide it.
const (
	secretEnv1 = "SILICO_TEST_KEY"
	secret1    = "sk-test-SECRET-123"
	secretEnv2 = "SILICO_OTHER_KEY"
	secret2    = "tok-OTHER-SECRET-456"
)

// secretMarkers are substrings of the secrets: a partly redacted key is still a leak.
var secretMarkers = []string{"SECRET-123", "SECRET-456"}

// keyEcho wraps the simulator as a provider that checks keys: it records every Authorization header, answers
// 401 echoing the key under /auth/, and 400 echoing the key for the cells of persona p1 (as providers do,
// "Incorrect API key provided: ..."), so the key reaches error messages unless silico removes it.
type keyEcho struct {
	next http.Handler
	mu   sync.Mutex
	auth map[string]int
}

func (k *keyEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := r.Header.Get("Authorization")
	k.mu.Lock()
	k.auth[h]++
	k.mu.Unlock()
	key := strings.TrimPrefix(h, "Bearer ")
	echo := func(status int, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("Incorrect API key provided: %s. Header was %q.", key, h),
			"type":    "invalid_request_error", "code": code, "param": nil}})
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/auth/"):
		echo(http.StatusUnauthorized, "invalid_api_key")
	case strings.HasSuffix(r.Header.Get("X-Silico-Cell"), "/p1"):
		echo(http.StatusBadRequest, "bad_key_in_prompt")
	default:
		k.next.ServeHTTP(w, r)
	}
}

func (k *keyEcho) count(h string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.auth[h]
}

// TestSecretsNeverLeak runs a grid on provider "openai" with keys from the worker's environment, through a
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
	echo := &keyEcho{next: simSrv, auth: map[string]int{}}
	hs := httptest.NewServer(echo)
	t.Cleanup(hs.Close)

	dir := t.TempDir()
	storePath := filepath.Join(dir, "results.db")
	st, err := store.OpenSQLite(context.Background(), storePath)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{secretEnv1: secret1, secretEnv2: secret2}
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

	// m0: key 1, answered (server errors injected, persona p1 refused with the key echoed);
	// m1: key 2, the same; m2: key 1 on an endpoint that refuses it (401 with the key echoed).
	spec := gridSpec(3, 2, 4, 3)
	spec.Name = "secrets"
	for i, m := range []struct{ env, path string }{{secretEnv1, "/v1"}, {secretEnv2, "/v1"}, {secretEnv1, "/auth/v1"}} {
		spec.Models[i].Provider = "openai"
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
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: workflows.TaskQueue},
		workflows.ExperimentWorkflow, specInput(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.Result
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

	places := map[string][]byte{"workflow history": hist.Bytes(), "worker logs": logs.Bytes(), "simulator request log": reqLog.Bytes()}
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
