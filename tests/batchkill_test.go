package tests

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
)

// batchKillPoint is a moment of a batch pass at which a process is killed: the simulator's request that
// marks it, and whether the kill comes before the request is served or after it was (its answer then never
// reaches the worker, which died first).
type batchKillPoint struct {
	name  string
	match func(r *http.Request) bool
	after bool
	// collecting: half the result file is sent, the kill comes once the worker recorded its first page of
	// results, and the rest of the file goes nowhere.
	collecting bool
	// dropMetadata: the provider keeps no batch's metadata, as some OpenAI-format gateways do.
	dropMetadata bool
}

var batchKillPoints = []batchKillPoint{
	// SubmitBatch lists the account's batches before it uploads anything.
	{name: "before upload", match: func(r *http.Request) bool { return r.Method == http.MethodGet && r.URL.Path == "/v1/batches" }},
	{name: "after upload", after: true, match: func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/v1/files" }},
	// The batch exists and is paid for, and the worker never learns its id.
	{name: "after create", after: true, match: func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/v1/batches" }},
	// The same through a gateway that drops metadata: the batch is found again by its input file.
	{name: "after create without metadata", after: true, dropMetadata: true,
		match: func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/v1/batches" }},
	{name: "while waiting", match: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/batches/")
	}},
	{name: "while collecting", collecting: true, match: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/files/") && strings.HasSuffix(r.URL.Path, "/content")
	}},
}

// geminiKillPoints are the kill points of a batch pass in Gemini's format. The kill grid's batches are small
// enough to go inline in their create request (under 20 MB), so there is no upload to be killed around; a poll
// asks for the batch without its answers (a partial response), and the collect for the batch with them.
var geminiKillPoints = []batchKillPoint{
	// SubmitBatch lists the account's batches before it creates one.
	{name: "before create", match: func(r *http.Request) bool { return r.Method == http.MethodGet && r.URL.Path == "/v1beta/batches" }},
	// The batch exists and is paid for, and the worker never learns its name.
	{name: "after create", after: true, match: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":batchGenerateContent")
	}},
	{name: "while waiting", match: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1beta/batches/") && r.URL.Query().Has("fields")
	}},
	{name: "while collecting", collecting: true, match: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1beta/batches/") && !r.URL.Query().Has("fields")
	}},
}

// batchKillGrid is the grid of the kill matrix: one pass of 2,000 cells in two batches of 1,000, so that a
// collect killed half way has recorded a page of results (500) and not the rest. Batches take 2 s. gemini puts
// the model on provider gemini (the simulator's Gemini API), else on the OpenAI format.
func batchKillGrid(simURL string, gemini bool) experiment.Spec {
	s := gridSpec(1, 1, 40, 50)
	s.Name = "batch kills"
	s.Models[0].Provider, s.Models[0].BaseURL = "sim", simURL
	if gemini {
		s.Models[0].Provider, s.Models[0].BaseURL = experiment.ProviderGemini, geminiBase(simURL)
		s.Models[0].APIKeyEnv = experiment.DefaultGeminiKeyEnv
	}
	s.Models[0].Price = &experiment.Price{InputPerMTok: 1, OutputPerMTok: 2}
	s.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: 1000,
		PollEvery: experiment.Duration(time.Second)}
	return s
}

// TestBatchPassSurvivesKills is the batch pass's kill matrix: a worker process, or the Temporal server's, is
// killed with SIGKILL at each step of a batch pass (before the upload, after it, after the create whose answer
// the worker never reads, while the batch runs, and half way through collecting its results) and started
// again, and once more after the create through a provider that drops metadata. Every run must end with one batch
// per chunk at the provider, one uploaded file per chunk and none left, every cell run once by the provider and
// recorded once, and the cell columns of a synchronous run at half its cost. The same matrix runs in Gemini's
// format (sub-tests "gemini ..."), at its kill points.
func TestBatchPassSurvivesKills(t *testing.T) {
	starter, worker := starterBin(t), workerBin(t)
	// The reference: the same grid run synchronously in this process. A synchronous call of provider gemini
	// sends the same chat completion to the same simulator, so the one reference serves both formats.
	ref := newStack(t, sim.Config{})
	refSpec := batchKillGrid(ref.simURL, false)
	refSpec.Models[0].Batch = nil
	want := rowsOf(t, ref.run(t, "batch-kill-reference", refSpec).OutputDir)
	if len(want) != refSpec.NumCells() {
		t.Fatalf("reference run: %d rows, want %d", len(want), refSpec.NumCells())
	}
	for _, victim := range []string{"worker", "server"} {
		for _, kp := range batchKillPoints {
			t.Run(victim+" killed "+kp.name, func(t *testing.T) {
				t.Parallel()
				runBatchKill(t, starter, worker, victim, kp, false, want)
			})
		}
		for _, kp := range geminiKillPoints {
			t.Run("gemini "+victim+" killed "+kp.name, func(t *testing.T) {
				t.Parallel()
				runBatchKill(t, starter, worker, victim, kp, true, want)
			})
		}
	}
}

// batchKill kills its victim once, when the first request matching its point reaches the simulator.
type batchKill struct {
	point batchKillPoint
	next  http.Handler
	// waitRecorded waits until the worker recorded some results of the run (for a kill while collecting).
	waitRecorded func() error

	once   sync.Once
	mu     sync.Mutex
	victim *proc
	fired  chan struct{} // closed after the kill
	err    error         // what went wrong in the handler, reported by the test
}

func (k *batchKill) setVictim(p *proc) {
	k.mu.Lock()
	k.victim = p
	k.mu.Unlock()
}

// kill kills the victim and waits for it to exit.
func (k *batchKill) kill() {
	k.mu.Lock()
	p := k.victim
	k.mu.Unlock()
	_ = p.cmd.Process.Kill()
	<-p.done
	close(k.fired)
}

func (k *batchKill) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mine := false
	if k.point.match(r) {
		k.once.Do(func() { mine = true })
	}
	switch {
	case !mine:
		k.next.ServeHTTP(w, r)
	case k.point.collecting:
		rec := httptest.NewRecorder()
		k.next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		half := bytes.IndexByte(body[len(body)*7/10:], '\n') + len(body)*7/10 + 1
		_, _ = w.Write(body[:half])
		_ = http.NewResponseController(w).Flush()
		if err := k.waitRecorded(); err != nil {
			k.mu.Lock()
			k.err = err
			k.mu.Unlock()
		}
		k.kill()
		// The rest of the file goes to a dead connection, or to a worker that no longer exists.
	case k.point.after:
		rec := httptest.NewRecorder()
		k.next.ServeHTTP(rec, r)
		k.kill()
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	default:
		k.kill()
		k.next.ServeHTTP(w, r)
	}
}

func runBatchKill(t *testing.T, starter, worker, victim string, kp batchKillPoint, gemini bool, want []results.Row) {
	dir := t.TempDir()
	s, err := sim.New(sim.Config{Batch: sim.BatchConfig{ProcessingTime: 2 * time.Second, DropMetadata: kp.dropMetadata}})
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "results.db")
	var runID string
	var idMu sync.Mutex
	k := &batchKill{point: kp, next: s, fired: make(chan struct{})}
	k.waitRecorded = func() error {
		idMu.Lock()
		id := runID
		idMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			if n, err := recordedCells(ctx, dbPath, id); err == nil && n >= 500 {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the worker recorded no page of results within a minute of receiving most of a result file")
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	srv := httptest.NewServer(k)
	t.Cleanup(srv.Close)
	simURL := srv.URL + "/v1"

	spec := batchKillGrid(simURL, gemini)
	writeSpecJSON(t, dir, spec)
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startServer := func() *proc { return startDevServer(t, dir, starter, port) }
	startWorker := func() *proc {
		return startProcEnv(t, dir, worker, []string{experiment.DefaultGeminiKeyEnv + "=" + geminiKey},
			"--address", addr, "--store", dbPath, "--output-root", filepath.Join(dir, "out"), "--metrics-addr", "")
	}
	server := startServer()
	wk := startWorker()
	if victim == "worker" {
		k.setVictim(wk)
	} else {
		k.setVictim(server)
	}
	// The run id is known before the first batch request: the starter prints it when it starts the run, and the
	// simulator sees nothing of the run before the worker plans it.
	idMu.Lock()
	runID = startDetached(t, dir, starter, addr)
	idMu.Unlock()

	select {
	case <-k.fired:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run never reached %q", kp.name)
	}
	if victim == "worker" {
		startWorker()
	} else {
		startServer()
	}

	ctx := withTimeout(t, 3*time.Minute)
	c, err := client.DialContext(ctx, client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var final enums.WorkflowExecutionStatus
	poll(t, 3*time.Minute, 200*time.Millisecond, "the run to end", func() bool {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		d, err := c.DescribeWorkflowExecution(dctx, runID, "")
		if err != nil {
			return false
		}
		final = d.GetWorkflowExecutionInfo().GetStatus()
		return final != enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	k.mu.Lock()
	herr := k.err
	k.mu.Unlock()
	if herr != nil {
		t.Error(herr)
	}
	if final != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("run %s ended %v", runID, final)
	}

	// At the provider: one batch per chunk, one input file per chunk, every cell run once.
	bs := s.Batches()
	format := sim.BatchOpenAI
	if gemini {
		format = sim.BatchGemini
	}
	for _, b := range bs {
		if b.Format != format {
			t.Errorf("batch %s of format %s, want %s", b.ID, b.Format, format)
		}
	}
	if len(bs) != 2 {
		t.Errorf("%d batches at the provider, want one per chunk (2)", len(bs))
	}
	ran := map[string]int{}
	for _, b := range bs {
		for _, id := range b.Ran {
			ran[id]++
		}
	}
	for id, n := range ran {
		if n != 1 {
			t.Errorf("cell %s ran %d times", id, n)
		}
	}
	if len(ran) != spec.NumCells() {
		t.Errorf("%d cells ran at the provider, want %d", len(ran), spec.NumCells())
	}
	if n := len(s.Uploads()); !gemini && n != 2 {
		t.Errorf("%d batch input files uploaded, want one per chunk (2)", n)
	}
	if files := s.Files(); len(files) != 0 {
		t.Errorf("files left at the provider after the run: %v (each collected batch's are deleted)", files)
	}

	// Recorded once each, with the synchronous run's cell columns at half its cost.
	got := rowsOf(t, filepath.Join(dir, "out", runID))
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	seen := map[string]bool{}
	for i := range got {
		if seen[got[i].CellID] {
			t.Errorf("cell %s has two rows", got[i].CellID)
		}
		seen[got[i].CellID] = true
		g, w := got[i], want[i]
		if d := g.CostUSD - w.CostUSD/2; d > 1 || d < -1 || w.CostUSD == 0 { // each rounded once to the picodollar
			t.Errorf("row %d: cost %v, sync %v", i, g.CostUSD, w.CostUSD)
		}
		g.CostUSD, w.CostUSD = 0, 0
		// The reference answered as an OpenAI-shaped server, with a system_fingerprint; Gemini sends none.
		g.SystemFingerprint, w.SystemFingerprint = "", ""
		if gc, wc := results.CellColumns(g), results.CellColumns(w); !reflect.DeepEqual(gc, wc) {
			t.Errorf("row %d:\n batch %v\n  sync %v", i, gc, wc)
			break
		}
	}
}

// recordedCells counts the run's records in the SQLite store at path, which a worker process writes.
func recordedCells(ctx context.Context, path, runID string) (int, error) {
	st, err := store.OpenSQLite(ctx, path)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	recs, err := st.Records(ctx, runID, 0, 1<<30)
	return len(recs), err
}
