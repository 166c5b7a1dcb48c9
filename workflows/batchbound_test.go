package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// checkRecords holds the records of a run to want: each cell's class ("" for an answer) by cell index, every other
// cell answered.
func checkRecords(t *testing.T, recs []store.Record, want map[int]string) {
	t.Helper()
	for _, r := range recs {
		class := ""
		if r.Status == store.StatusFailed {
			class = r.ErrorClass
		}
		if class != want[r.Index] {
			t.Errorf("cell %d: %q (%s), want %q", r.Index, class, r.ErrorMessage, want[r.Index])
		}
	}
}

// TestGeminiResultsInEveryShape: a Gemini batch's failed results are recorded whether the provider writes their
// status under "error", under "status" or as a google.rpc.Status at the top of the result, with the class a
// synchronous call gets; a result in no documented shape records its cell BatchUnreadable; every other cell is
// answered. With the status under "status" the collect failed (the line had "neither response nor error") and was
// retried for ever: no cell of the chunk was recorded.
func TestGeminiResultsInEveryShape(t *testing.T) {
	for _, shape := range []string{sim.GeminiStatusError, sim.GeminiStatusField, sim.GeminiStatusTop} {
		t.Run(shape, func(t *testing.T) {
			spec := geminiSimSpec("", true)
			bad, odd := spec.CellID(spec.Cell(2)), spec.CellID(spec.Cell(9))
			f := newFailEnv(t, sim.BatchConfig{FailLines: map[string]int{bad: 400}, OddLines: []string{odd},
				GeminiStatusShape: shape})
			spec.Models[0].BaseURL = f.url + "/v1beta"
			recs := f.run(t, spec, "shapes-run")
			checkRecords(t, recs, map[int]string{2: errclass.InvalidRequest, 9: errclass.BatchUnreadable})
			for _, r := range recs {
				if r.Index == 9 && (r.ErrorCode != "unreadable_result" || !strings.Contains(r.ErrorMessage, "neither a response nor a status") ||
					r.Tries != 1) {
					t.Errorf("the odd cell: %+v", r)
				}
			}
			checkRanOnce(t, f.sim.Batches(), 40)
		})
	}
}

// TestGeminiJobStateNames: a Gemini endpoint that names its batches' states as Google's SDKs and Vertex AI do
// (JOB_STATE_*) runs as one that names them BATCH_STATE_*: every cell answered, one batch per chunk. Every
// submission failed on "unknown state" before, and was retried until its attempts ran out.
func TestGeminiJobStateNames(t *testing.T) {
	spec := geminiSimSpec("", true)
	f := newFailEnv(t, sim.BatchConfig{ProcessingTime: time.Hour, GeminiJobStates: true})
	spec.Models[0].BaseURL = f.url + "/v1beta"
	checkRecords(t, f.run(t, spec, "job-states-run"), nil)
	bs := f.sim.Batches()
	if len(bs) != 6 || bs[0].Status != "JOB_STATE_SUCCEEDED" {
		t.Errorf("%d batches (the first %s), want 6 that succeeded", len(bs), bs[0].Status)
	}
	checkRanOnce(t, bs, 40)
}

// forgetful is a provider (or a gateway in front of it) that answers 404 to every poll of the batches it forgot:
// the first batch created, or every batch of the chunk named by chunk ("" : none of a chunk, only the first).
type forgetful struct {
	mu      sync.Mutex
	chunk   string
	forgot  map[string]bool
	creates int
}

func (f *forgetful) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/batches/") {
		f.mu.Lock()
		gone := f.forgot[strings.TrimPrefix(r.URL.Path, "/v1/batches/")]
		f.mu.Unlock()
		if gone {
			return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{"Content-Type": {"application/json"}},
				Body:    io.NopCloser(strings.NewReader(`{"error":{"message":"No such batch","type":"invalid_request_error"}}`)),
				Request: r}, nil
		}
	}
	var body []byte
	if r.Method == http.MethodPost && r.URL.Path == "/v1/batches" {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || body == nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	var created struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(data, &created)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates++
	if (f.chunk == "" && f.creates == 1) || (f.chunk != "" && strings.Contains(string(body), `"silico_chunk":"`+f.chunk+`"`)) {
		if f.forgot == nil {
			f.forgot = map[string]bool{}
		}
		f.forgot[created.ID] = true
	}
	return resp, nil
}

// TestBatchLostIsSubmittedAgain: a batch the provider answers 404 for on every poll (it forgot it, as the
// embedded simulator did after a kill -9 of its starter) is taken as lost after 5 polls over 2 minutes, and its
// chunk is submitted again as a fresh try (a key of its own, silico_try 1), which the user is told on the chunk's
// progress; every cell is answered. It was polled for ever before.
func TestBatchLostIsSubmittedAgain(t *testing.T) {
	fg := &forgetful{}
	f := newFailEnvClient(t, sim.BatchConfig{ProcessingTime: time.Minute}, &http.Client{Transport: fg})
	spec := simSpec(f.url, true)
	checkRecords(t, f.run(t, spec, "lost-run"), nil)
	bs := f.sim.Batches()
	var lost sim.Batch
	for _, b := range bs {
		if fg.forgot[b.ID] {
			lost = b
		}
	}
	if len(bs) != 7 || len(fg.forgot) != 1 || lost.Metadata["silico_try"] != "" {
		t.Fatalf("%d batches, %d forgotten, want 6 chunks and the lost one's resubmission", len(bs), len(fg.forgot))
	}
	again := 0
	for _, b := range bs {
		if b.ID != lost.ID && b.Metadata["silico_chunk"] == lost.Metadata["silico_chunk"] && b.Metadata["silico_pass"] == lost.Metadata["silico_pass"] {
			again++
			if b.Metadata["silico_try"] != "1" || b.Metadata["silico_round"] != "0" {
				t.Errorf("the resubmission's metadata %v, want try 1 of round 0", b.Metadata)
			}
		}
	}
	if again != 1 {
		t.Errorf("the lost chunk was submitted again %d times, want once", again)
	}
	noted := false
	for _, b := range f.progress(t).Batches {
		if strings.Contains(b.Note, "batch "+lost.ID+" lost") && strings.Contains(b.Note, "submitted again") {
			noted = true
		}
	}
	if !noted {
		t.Errorf("no batch's progress says %s was lost: %+v", lost.ID, f.progress(t).Batches)
	}
	// The Web UI's run details say it too.
	v, err := f.env.QueryWorkflow("__temporal_workflow_metadata")
	var md sdkpb.WorkflowMetadata
	if err == nil {
		err = v.Get(&md)
	}
	if err != nil || !strings.Contains(md.GetCurrentDetails(), "batch "+lost.ID+" lost") {
		t.Errorf("the run's details %q (%v) do not say %s was lost", md.GetCurrentDetails(), err, lost.ID)
	}
}

// TestBatchLostForGood: a chunk whose every batch the provider loses is submitted again twice, then its cells are
// recorded BatchLost with the reason; the other chunks are answered.
func TestBatchLostForGood(t *testing.T) {
	fg := &forgetful{chunk: "1"}
	f := newFailEnvClient(t, sim.BatchConfig{ProcessingTime: time.Minute}, &http.Client{Transport: fg})
	spec := simSpec(f.url, true)
	spec.Seeds = spec.Seeds[:1] // one pass, chunks 0, 1 and 2: 7, 7 and 6 cells
	recs := f.run(t, spec, "lost-for-good-run")
	want := map[int]string{}
	for i := 7; i < 14; i++ {
		want[i] = errclass.BatchLost
	}
	checkRecords(t, recs, want)
	for _, r := range recs[7:14] {
		if r.ErrorCode != "batch_lost" || r.Tries != 3 || !strings.HasPrefix(r.ErrorMessage, "3 of the chunk's batches were lost: batch ") {
			t.Errorf("cell %d: %+v", r.Index, r)
		}
	}
	if n := len(f.sim.Batches()); n != 5 {
		t.Errorf("%d batches, want 2 chunks' and 3 of the lost chunk", n)
	}
}

// pausing answers every poll of a batch still in progress with a status no one documents.
type pausing struct{}

func (pausing) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/v1/batches/") {
		return resp, err
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	data = bytes.ReplaceAll(data, []byte(`"status":"in_progress"`), []byte(`"status":"on_hold"`))
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// TestBatchUnknownStateIsGivenUp: a batch whose state silico does not know is followed, not guessed at, for 2
// hours; then it is cancelled and its cells recorded BatchStateUnknown, naming the state.
func TestBatchUnknownStateIsGivenUp(t *testing.T) {
	f := newFailEnvClient(t, sim.BatchConfig{ProcessingTime: 10 * time.Hour}, &http.Client{Transport: pausing{}})
	spec := simSpec(f.url, true)
	recs := f.run(t, spec, "unknown-state-run")
	for _, r := range recs {
		if r.Status != store.StatusFailed || r.ErrorClass != errclass.BatchStateUnknown || r.ErrorCode != "unknown_state" ||
			!strings.Contains(r.ErrorMessage, `"on_hold"`) {
			t.Errorf("cell %d: %+v", r.Index, r)
		}
	}
	for _, b := range f.sim.Batches() {
		if b.Status != "cancelled" && b.Status != "cancelling" {
			t.Errorf("batch %s is %s, want it cancelled", b.ID, b.Status)
		}
	}
}

// TestBatchNotRunCountsItsTries: cells no round's batch ran (each expired before it reached them) are recorded
// BatchNotRun with the provider's reason as their error_code and as many tries and requests as batches carried
// them; they had tries 0 and no code.
func TestBatchNotRunCountsItsTries(t *testing.T) {
	f := newFailEnv(t, sim.BatchConfig{ProcessingTime: 10 * time.Hour, Window: time.Minute})
	spec := simSpec(f.url, true)
	recs := f.run(t, spec, "expired-run")
	rounds := spec.Run.MaxAttempts
	for _, r := range recs {
		if r.Status != store.StatusFailed || r.ErrorClass != errclass.BatchNotRun || r.ErrorCode != "batch_expired" ||
			r.Tries != rounds || r.Attempts != rounds || !strings.Contains(r.ErrorMessage, "the last time: batch_expired") {
			t.Errorf("cell %d: %+v, want BatchNotRun batch_expired after %d tries", r.Index, r, rounds)
		}
	}
	if n := len(f.sim.Batches()); n != 6*rounds {
		t.Errorf("%d batches, want %d rounds of 6 chunks", n, rounds)
	}
	checkNoFilesLeft(t, f.sim)
}

// failingCreates answers every batch create with a 500.
type failingCreates struct{}

func (failingCreates) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/batches" {
		return &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{"Content-Type": {"application/json"}},
			Body:    io.NopCloser(strings.NewReader(`{"error":{"message":"The server had an error","type":"server_error"}}`)),
			Request: r}, nil
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestBatchSubmissionGivesUp: a submission that fails every attempt is given up once its bounded attempts are
// used (about 25 minutes), and the chunk's cells are recorded with the last failure; nothing retries for ever.
func TestBatchSubmissionGivesUp(t *testing.T) {
	f := newFailEnvClient(t, sim.BatchConfig{}, &http.Client{Transport: failingCreates{}})
	spec := simSpec(f.url, true)
	spec.Seeds = spec.Seeds[:1]
	var attempts sync.Map // activity id -> attempts seen
	f.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == wire.SubmitBatch.Name {
			attempts.Store(info.ActivityID, info.Attempt)
		}
	})
	recs := f.run(t, spec, "submit-fails-run")
	for _, r := range recs {
		if r.ErrorClass != errclass.BatchNotRun || r.ErrorCode != "submit_failed" ||
			!strings.Contains(r.ErrorMessage, "the chunk's batch could not be submitted") || !strings.Contains(r.ErrorMessage, "500") {
			t.Errorf("cell %d: %+v", r.Index, r)
		}
	}
	n := 0
	attempts.Range(func(_, v any) bool {
		n++
		if v.(int32) != batchAttempts {
			t.Errorf("a submission gave up after %d attempts, want %d", v, batchAttempts)
		}
		return true
	})
	if n != 3 {
		t.Errorf("%d submissions, want one per chunk", n)
	}
}
