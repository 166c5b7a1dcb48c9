package workflows

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/sim"
)

// loseFirstGeminiCreate loses the answer of the first Gemini batch create that reaches the server: the batch
// exists and the attempt fails without its name, as when a worker dies after its create.
type loseFirstGeminiCreate struct {
	mu   sync.Mutex
	lost int
}

func (l *loseFirstGeminiCreate) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, ":batchGenerateContent") {
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

// geminiSimSpec is simSpec with the model on the simulator's Gemini API.
func geminiSimSpec(url string, batchMode bool) experiment.Spec {
	s := simSpec(url, batchMode)
	s.Models[0].Provider, s.Models[0].BaseURL = experiment.ProviderGemini, url+"/v1beta"
	s.Models[0].APIKeyEnv = experiment.DefaultGeminiKeyEnv
	return s
}

// TestGeminiBatchRun runs a spec with a model of provider gemini through ExperimentWorkflow with the real
// activities, synchronously (Gemini's OpenAI-compatible endpoint) and in batch mode (Gemini's Batch API): the
// batch run has the same records at half the cost and one batch per chunk, although the first create's answer is
// lost and the submission attempted again (and adopts the batch it made, by its display name).
func TestGeminiBatchRun(t *testing.T) {
	s, err := sim.New(sim.Config{Batch: sim.BatchConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	st := tempStore(t)
	lose := &loseFirstGeminiCreate{}
	keys := func(k string) string {
		if k == experiment.DefaultGeminiKeyEnv {
			return "gem-test-key-0123456789"
		}
		return ""
	}
	acts := &activities.Activities{Store: st, Models: llm.NewRegistry(&http.Client{Transport: lose}, keys, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond, Clock: fastClock()}
	syncRes := runWith(t, acts, geminiSimSpec(srv.URL, false), "sync-run")
	if n := len(s.Batches()); n != 0 {
		t.Fatalf("the synchronous run made %d batches", n)
	}
	batchRes := runWith(t, acts, geminiSimSpec(srv.URL, true), "batch-run")
	if lose.lost != 1 {
		t.Fatalf("%d create answers lost, want the first: the test did not test a lost create", lose.lost)
	}
	bs := s.Batches()
	if len(bs) != 6 {
		t.Errorf("%d batches, want 6: one per chunk, the lost create's adopted", len(bs))
	}
	for _, b := range bs {
		if b.Format != sim.BatchGemini {
			t.Errorf("batch %s of format %s, want Gemini's", b.ID, b.Format)
		}
	}
	checkRanOnce(t, bs, 40)
	checkHalfPrice(t, st, "sync-run", "batch-run", 40)
	if syncRes.Summary.Failed != 0 || batchRes.Summary.Failed != 0 || batchRes.Summary.Cells != 40 {
		t.Errorf("summaries: sync %+v, batch %+v", syncRes.Summary, batchRes.Summary)
	}
	if got, want := batchRes.Summary.CostUSD, syncRes.Summary.CostUSD/2; (got-want).Float() > 1e-9 || (want-got).Float() > 1e-9 || want == 0 {
		t.Errorf("batch run cost %v, want half of %v", got, syncRes.Summary.CostUSD)
	}
}
