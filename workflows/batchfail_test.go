package workflows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// failEnv is a batch run of the real activities on a simulator that shares the activities' fast clock (see
// newFailEnvClient): a batch runs while its AwaitBatch waits, and the workflow's own timers are skipped.
type failEnv struct {
	env *testsuite.TestWorkflowEnvironment
	sim *sim.Server
	st  *store.SQLite
	url string
}

func newFailEnv(t *testing.T, cfg sim.BatchConfig) *failEnv {
	t.Helper()
	return newFailEnvClient(t, cfg, http.DefaultClient)
}

// newFailEnvClient is newFailEnv whose activities call the simulator through hc.
func newFailEnvClient(t *testing.T, cfg sim.BatchConfig, hc *http.Client) *failEnv {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	f := &failEnv{env: suite.NewTestWorkflowEnvironment(), st: tempStore(t)}
	// The simulator and AwaitBatch share a clock 3,600 times as fast as the real one (an hour's batch a second):
	// AwaitBatch waits on it while the workflow's own timers (the resubmission delays) are skipped by the
	// test environment.
	clk := ratelimit.Scaled(f.env.Now(), 3600)
	s, err := sim.New(sim.Config{Now: clk.Now, Batch: cfg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	f.sim, f.url = s, srv.URL
	keys := func(k string) string {
		if k == experiment.DefaultGeminiKeyEnv {
			return "gem-test-key-0123456789" // for the specs on the simulator's Gemini API (geminiSimSpec)
		}
		return ""
	}
	activities.Register(f.env, &activities.Activities{Store: f.st,
		Models:     llm.NewRegistry(hc, keys, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond, Clock: clk})
	return f
}

// run runs spec to its end and returns its records.
func (f *failEnv) run(t *testing.T, spec experiment.Spec, id string) []store.Record {
	t.Helper()
	f.env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, id))
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	recs, err := f.st.Records(context.Background(), id, 0, spec.NumCells())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != spec.NumCells() {
		t.Fatalf("%d records, want %d", len(recs), spec.NumCells())
	}
	return recs
}

// checkOneUploadPerInput fails when the simulator got the same input file twice: a resubmission of the same
// lines reuses the file already uploaded.
func checkOneUploadPerInput(t *testing.T, s *sim.Server) (uploads int) {
	t.Helper()
	seen := map[string]int{}
	for _, f := range s.Uploads() {
		seen[f.Name]++
		uploads++
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("input %s uploaded %d times, want once", name, n)
		}
	}
	return uploads
}

// promptTokens are the input tokens of cells [from, to) of spec, as the simulator counts them against its
// enqueued-token limit.
func promptTokens(t *testing.T, spec experiment.Spec, from, to int) int {
	t.Helper()
	tok, err := llm.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := from; i < to; i++ {
		msgs, err := spec.Render(spec.Cell(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		n += tok.CountMessages(spec.Models[0].Name, msgs)
	}
	return n
}

// oneChunkLimit is an enqueued-token limit for spec's chunks of 10 cells (two per pass) with room for the largest
// chunk and not for any two: the simulator runs one of their batches at a time.
func oneChunkLimit(t *testing.T, spec experiment.Spec) int {
	t.Helper()
	most, least := 0, -1
	for _, p := range spec.Passes() {
		for _, n := range []int{promptTokens(t, spec, p.Start, p.Start+10), promptTokens(t, spec, p.Start+10, p.End)} {
			most = max(most, n)
			if least < 0 || n < least {
				least = n
			}
		}
	}
	limit := most * 3 / 2
	if 2*least <= limit {
		t.Fatalf("two chunks of %d tokens fit the limit of %d", least, limit)
	}
	return limit
}

// failCodes counts the simulator's batches by the code they failed with ("" for those that did not fail).
func failCodes(bs []sim.Batch) map[string]int {
	out := map[string]int{}
	for _, b := range bs {
		code := ""
		if len(b.Errors) > 0 {
			code = b.Errors[0]
		}
		out[code]++
	}
	return out
}

// TestBatchTokenLimitWaitsForTheOtherBatch: under an enqueued-token limit that holds one chunk's batch at a time,
// the chunks whose batches fail with token_limit_exceeded wait, with the provider's reason in the run's batch
// progress, for the batch in flight to end, then resubmit (reusing their uploaded input, never adopting the failed
// batch) until every cell is answered once; the waits do not count against run.max_attempts (3 here, with four
// chunks of which three fail at least once and one three times). Whichever submission reaches the simulator first,
// one batch runs at a time and the chunks refused wait for it, never split: 4 batches run and 3 + 2 + 1 are refused.
func TestBatchTokenLimitWaitsForTheOtherBatch(t *testing.T) {
	spec := simSpec("", true)
	spec.Models[0].Batch.MaxRequests = 10 // two passes of two chunks of 10
	f := newFailEnv(t, sim.BatchConfig{ProcessingTime: time.Hour, EnqueuedTokens: oneChunkLimit(t, spec)})
	spec.Models[0].BaseURL = f.url + "/v1"
	var mu sync.Mutex
	var waiting []wire.BatchProgress
	looked := false
	// When the first batch that ran is found ended (the end of its AwaitBatch), the three refused chunks are
	// waiting for it: the run's progress must say so, with the provider's reason.
	f.env.SetOnActivityCompletedListener(func(info *activity.Info, result converter.EncodedValue, err error) {
		if info.ActivityType.Name != wire.AwaitBatch.Name || err != nil || looked {
			return
		}
		var got wire.BatchWatch
		if result.Get(&got) != nil || got.Batch.Status != wire.BatchStatusCompleted {
			return
		}
		looked = true
		p := f.progress(t)
		mu.Lock()
		defer mu.Unlock()
		for _, b := range p.Batches {
			if b.Reason != "" {
				waiting = append(waiting, b)
			}
		}
	})
	recs := f.run(t, spec, "token-limit-run")
	for _, r := range recs {
		if r.Status == store.StatusFailed {
			t.Errorf("cell %d: %s: %s", r.Index, r.ErrorClass, r.ErrorMessage)
		}
	}
	bs := f.sim.Batches()
	checkRanOnce(t, bs, 40)
	codes := failCodes(bs)
	if codes[""] != 4 || codes["token_limit_exceeded"] != 6 || len(codes) != 2 {
		t.Errorf("batches by failure %v, want 4 that ran and 3 + 2 + 1 refused over the token limit", codes)
	}
	if n := checkOneUploadPerInput(t, f.sim); n != 4 {
		t.Errorf("%d inputs uploaded, want one per chunk", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waiting) != 3 {
		t.Fatalf("batches waiting when the first batch ended: %+v, want the three refused", waiting)
	}
	for _, b := range waiting {
		if !strings.Contains(b.Reason, "token_limit_exceeded: Enqueued token limit reached for sim-chat") ||
			!strings.Contains(b.Reason, "waiting for 1 other batch(es) of "+spec.Models[0].ID+" to end") {
			t.Errorf("batch %s waits with reason %q", b.Key, b.Reason)
		}
	}
}

// TestBatchTokenLimitSplitsAChunkAlone: a chunk whose batch exceeds the enqueued-token limit with no other batch
// of its model in flight, twice, is too big for the limit: it is split in halves, each a chunk of its own, and
// every cell is answered once.
func TestBatchTokenLimitSplitsAChunkAlone(t *testing.T) {
	spec := simSpec("", true)
	spec.Seeds = spec.Seeds[:1]           // one pass of 20 cells
	spec.Models[0].Batch.MaxRequests = 20 // one chunk
	// Room for either half of the chunk, not for the whole.
	limit := max(promptTokens(t, spec, 0, 10), promptTokens(t, spec, 10, 20)) * 11 / 10
	if whole := promptTokens(t, spec, 0, 20); whole <= limit {
		t.Fatalf("a chunk of %d tokens fits the limit of %d", whole, limit)
	}
	f := newFailEnv(t, sim.BatchConfig{ProcessingTime: time.Hour, EnqueuedTokens: limit})
	spec.Models[0].BaseURL = f.url + "/v1"
	recs := f.run(t, spec, "split-run")
	for _, r := range recs {
		if r.Status == store.StatusFailed {
			t.Errorf("cell %d: %s: %s", r.Index, r.ErrorClass, r.ErrorMessage)
		}
	}
	bs := f.sim.Batches()
	checkRanOnce(t, bs, 20)
	chunks := map[string]int{}
	for _, b := range bs {
		if len(b.Errors) == 0 {
			chunks[b.Metadata["silico_chunk"]] = len(b.CustomIDs)
		}
	}
	if len(chunks) != 2 || chunks["1"] != 10 || chunks["2"] != 10 {
		t.Errorf("chunks that ran %v, want the halves as chunks 1 and 2", chunks)
	}
	checkOneUploadPerInput(t, f.sim)
	// The chunk's own input, kept while its lines were resubmitted, goes when it is split; the halves' go with
	// their batches.
	checkNoFilesLeft(t, f.sim)
}

// checkNoFilesLeft fails when the simulator still holds a file: every upload and result file a run made is
// deleted once the run no longer needs it.
func checkNoFilesLeft(t *testing.T, s *sim.Server) {
	t.Helper()
	for _, f := range s.Files() {
		t.Errorf("file %s (%s, %s) left at the provider", f.ID, f.Name, f.Purpose)
	}
}

// TestBatchRejectedLinesFailTheirCells: a batch failed because of one of its lines records that line's cell
// failed with the provider's reason (errclass.BatchLineRejected) and submits the others again, which are answered.
func TestBatchRejectedLinesFailTheirCells(t *testing.T) {
	spec := simSpec("", true)
	bad := spec.CellID(spec.Cell(3))
	f := newFailEnv(t, sim.BatchConfig{RejectLines: []string{bad}})
	spec.Models[0].BaseURL = f.url + "/v1"
	recs := f.run(t, spec, "rejected-run")
	for _, r := range recs {
		switch {
		case r.Index == 3:
			if r.Status != store.StatusFailed || r.ErrorClass != errclass.BatchLineRejected || r.ErrorCode != "invalid_request" ||
				!strings.Contains(r.ErrorMessage, "line 4: invalid_request: This line's request is invalid") {
				t.Errorf("the rejected cell: %+v", r)
			}
		case r.Status == store.StatusFailed:
			t.Errorf("cell %d: %s: %s", r.Index, r.ErrorClass, r.ErrorMessage)
		}
	}
	bs := f.sim.Batches()
	checkRanOnce(t, bs, 39)
	if codes := failCodes(bs); codes["invalid_request"] != 1 || codes[""] != 6 {
		t.Errorf("batches by failure %v, want the chunk's refused batch and six that ran", codes)
	}
}

// TestBatchOtherFailuresCountAgainstMaxAttempts: a batch failed for any other reason (here a provider that takes
// fewer requests per batch than the chunk has) is submitted again after a growing delay, in the next round, up
// to run.max_attempts; its cells are then recorded errclass.BatchNotRun with the provider's reason, and the same
// lines were uploaded once.
func TestBatchOtherFailuresCountAgainstMaxAttempts(t *testing.T) {
	f := newFailEnv(t, sim.BatchConfig{MaxRequests: 6})
	spec := simSpec(f.url, true) // chunks of 7, 7 and 6: the first two are refused every time
	recs := f.run(t, spec, "refused-run")
	notRun := 0
	for _, r := range recs {
		if r.Status != store.StatusFailed {
			continue
		}
		notRun++
		if r.ErrorClass != errclass.BatchNotRun || !strings.Contains(r.ErrorMessage, "too_many_requests: The batch has 7 requests") ||
			!strings.Contains(r.ErrorMessage, "the provider failed 3 of them as a whole") {
			t.Errorf("cell %d: %s: %s", r.Index, r.ErrorClass, r.ErrorMessage)
		}
	}
	if notRun != 28 {
		t.Errorf("%d cells recorded failed, want the 28 of the four chunks of 7", notRun)
	}
	codes := failCodes(f.sim.Batches())
	if codes["too_many_requests"] != 4*spec.Run.MaxAttempts || codes[""] != 2 {
		t.Errorf("batches by failure %v, want %d refused (max_attempts each of four chunks) and 2 that ran",
			codes, 4*spec.Run.MaxAttempts)
	}
	if n := checkOneUploadPerInput(t, f.sim); n != 6 {
		t.Errorf("%d inputs uploaded, want one per chunk", n)
	}
	// The inputs kept for the rounds are deleted once the rounds are used up.
	checkNoFilesLeft(t, f.sim)
	// Nothing waits once the rounds are used up.
	for _, b := range f.progress(t).Batches {
		if b.Reason != "" {
			t.Errorf("batch %s still shows %q", b.Key, b.Reason)
		}
	}
}

// progress is the run's progress query.
func (f *failEnv) progress(t *testing.T) wire.Progress {
	t.Helper()
	v, err := f.env.QueryWorkflow(wire.QueryProgress)
	if err != nil {
		t.Fatalf("progress query: %v", err)
	}
	var p wire.Progress
	if err := v.Get(&p); err != nil {
		t.Fatalf("progress: %v", err)
	}
	return p
}

// loseResubmitCreate loses the answer of the first OpenAI batch create of a resubmission (a batch key with a try)
// that reaches the server: the batch exists and the attempt fails without its id, as when a worker dies right after
// the create.
type loseResubmitCreate struct {
	mu   sync.Mutex
	lost int
}

func (l *loseResubmitCreate) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/batches" {
		return http.DefaultTransport.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !bytes.Contains(body, []byte(`"silico_try"`)) {
		return resp, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost > 0 {
		return resp, nil
	}
	l.lost++
	_ = resp.Body.Close()
	return nil, errors.New("connection reset by peer (after the create)")
}

// TestBatchResubmissionAdoptsItsLostCreate: the answer of a resubmission's create is lost after the provider made
// the batch; the submission's next attempt adopts that batch (its key has the try) instead of creating a second,
// so every cell still runs once in one batch per chunk.
func TestBatchResubmissionAdoptsItsLostCreate(t *testing.T) {
	spec := simSpec("", true)
	spec.Models[0].Batch.MaxRequests = 10
	lose := &loseResubmitCreate{}
	f := newFailEnvClient(t, sim.BatchConfig{ProcessingTime: time.Hour, EnqueuedTokens: oneChunkLimit(t, spec)},
		&http.Client{Transport: lose})
	spec.Models[0].BaseURL = f.url + "/v1"
	recs := f.run(t, spec, "lost-resubmit-run")
	if lose.lost != 1 {
		t.Fatal("no resubmission's create answer was lost: the test did not test it")
	}
	for _, r := range recs {
		if r.Status == store.StatusFailed {
			t.Errorf("cell %d: %s: %s", r.Index, r.ErrorClass, r.ErrorMessage)
		}
	}
	bs := f.sim.Batches()
	checkRanOnce(t, bs, 40)
	// Which chunks the limit fails depends on the order the submissions reach the simulator; whatever the order,
	// no key (run, pass, chunk, round, try) was created twice (the lost create was adopted), and no chunk was split
	// (the chunks refused while the lost create's retries were under way waited for them).
	if n := checkOneUploadPerInput(t, f.sim); n != 4 {
		t.Errorf("%d inputs uploaded, want one per chunk", n)
	}
	byKey := map[string]string{}
	for _, b := range bs {
		k := fmt.Sprint(b.Metadata)
		if other, dup := byKey[k]; dup {
			t.Errorf("batches %s and %s were both created for %s", other, b.ID, k)
		}
		byKey[k] = b.ID
	}
}
