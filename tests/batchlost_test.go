package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
)

// forgetFirstBatch is a provider that loses the first batch it creates: every later poll of it is a 404, as the
// embedded simulator answered after a kill -9 of its starter took its batches with it.
type forgetFirstBatch struct {
	next http.Handler
	mu   sync.Mutex
	lost string
}

func (f *forgetFirstBatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	lost := f.lost
	f.mu.Unlock()
	if lost != "" && r.Method == http.MethodGet && r.URL.Path == "/v1/batches/"+lost {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"message":"No such batch: `+lost+`","type":"invalid_request_error"}}`)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/batches" {
		f.next.ServeHTTP(w, r)
		return
	}
	rec := &recorder{header: http.Header{}}
	f.next.ServeHTTP(rec, r)
	var created struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(rec.body.Bytes(), &created) == nil && created.ID != "" {
		f.mu.Lock()
		if f.lost == "" {
			f.lost = created.ID
		}
		f.mu.Unlock()
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
}

// recorder keeps a handler's answer for the test to read before it is passed on.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(s int) { r.status = s }

// TestBatchLostOnTemporal runs a grid in batch mode on a Temporal server whose provider loses the first batch it
// creates: its polls get 404 until it is taken as lost (5 polls over 2 minutes of the worker's clock, which runs
// 60 times as fast as the real one), its chunk is submitted again as a fresh try, and every cell is answered.
// With -record-histories its history is the replay test's batch-lost.json (a run behind
// wire.ChangeBatchBounded).
func TestBatchLostOnTemporal(t *testing.T) {
	forget := &forgetFirstBatch{}
	s := newStackWith(t, sim.Config{Batch: sim.BatchConfig{ProcessingTime: time.Second}}, stackOptions{
		wrap: func(h http.Handler) http.Handler { forget.next = h; return forget }})
	s.batchWorkerWith(t, func(string) string { return "" }, ratelimit.Scaled(time.Now(), 60))
	res := s.run(t, "batch-lost", batchGrid(12))
	if res.Summary.Cells != 60 || res.Summary.Failed != 0 {
		t.Fatalf("summary %+v, want 60 cells answered", res.Summary)
	}
	bs := s.sim.Batches()
	if len(bs) != 7 {
		t.Errorf("%d batches, want 6 chunks and the lost one's resubmission", len(bs))
	}
	resubmitted := 0
	for _, b := range bs {
		if b.Metadata["silico_try"] == "1" {
			resubmitted++
		}
	}
	if forget.lost == "" || resubmitted != 1 {
		t.Errorf("lost %q, %d resubmitted: want the first batch lost and its chunk submitted again once", forget.lost, resubmitted)
	}
	if *historyDir != "" {
		writeHistory(t, s.client, "batch-lost", filepath.Join(*historyDir, "batch-lost.json"))
	}
}
