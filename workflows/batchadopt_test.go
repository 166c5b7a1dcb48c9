package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// rivalAfterFirstCreate sends the first Anthropic batch create that reaches it, then creates a rival batch of as
// many requests on the same account, then loses the first create's answer: the worker died right after its create,
// and another client created a batch of the same size before the retry listed. The rival's custom ids are the
// chunk's when twin is set (another run of the same spec), else foreign ones.
type rivalAfterFirstCreate struct {
	twin bool
	mu   sync.Mutex
	lost int
}

func (l *rivalAfterFirstCreate) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages/batches" {
		return http.DefaultTransport.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := http.DefaultTransport.RoundTrip(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || l.lost > 0 {
		return resp, err
	}
	l.lost++
	_ = resp.Body.Close()
	var in struct {
		Requests []map[string]any `json:"requests"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	if !l.twin {
		for _, q := range in.Requests {
			q["custom_id"] = "other-" + q["custom_id"].(string)
		}
	}
	rival, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, r.URL.String(), bytes.NewReader(rival))
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	rr, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	_ = rr.Body.Close()
	if rr.StatusCode != http.StatusOK {
		return nil, errors.New("the rival create was refused: " + rr.Status)
	}
	return nil, errors.New("connection reset by peer (after the create)")
}

// anthropicKeys gives the Anthropic key variable a key.
func anthropicKeys(k string) string {
	if k == experiment.DefaultAnthropicKeyEnv {
		return "sk-ant-test-key-0123456789"
	}
	return ""
}

// TestAnthropicAmbiguityRecordsWhatWasPaid: a submission whose create's answer was lost, and which then finds a
// rival batch of the same size beside its own, waits for both and records the 500 answers of its own, paid for
// once: a rival with foreign custom ids has nothing of it recorded; a twin with the chunk's custom ids (another
// run of the same cells) has its answers recorded too, each cell once, and the chunk is never submitted again. No
// candidate is deleted: the twin may be that other run's, which has yet to collect it.
func TestAnthropicAmbiguityRecordsWhatWasPaid(t *testing.T) {
	for _, twin := range []bool{false, true} {
		name := map[bool]string{false: "foreign rival", true: "twin"}[twin]
		t.Run(name, func(t *testing.T) {
			s, err := sim.New(sim.Config{Batch: sim.BatchConfig{}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s)
			defer srv.Close()
			st := tempStore(t)
			rival := &rivalAfterFirstCreate{twin: twin}
			acts := &activities.Activities{Store: st, Models: llm.NewRegistry(&http.Client{Transport: rival}, anthropicKeys, ""),
				OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond, Clock: fastClock()}
			spec := gridSpec(1, 1, 100, 5) // 500 cells, one chunk
			spec.Models[0].Provider, spec.Models[0].BaseURL, spec.Models[0].Name = experiment.ProviderAnthropic, srv.URL+"/v1", "sim-chat"
			spec.Models[0].Params.MaxTokens = 8
			spec.Models[0].Price = &experiment.Price{InputPerMTok: 1, OutputPerMTok: 2}
			spec.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch, MaxRequests: 500}
			spec.Run.Cache = experiment.CacheOff
			var collected []wire.BatchCollected
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			activities.Register(spyCandidates{env, &collected}, acts)
			env.ExecuteWorkflow(ExperimentWorkflow, input(t, spec, "ambiguous"))
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			var res wire.Result
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}

			if rival.lost != 1 {
				t.Fatalf("%d create answers lost, want the first: the test did not test a lost create", rival.lost)
			}
			bs := s.Batches()
			if len(bs) != 2 {
				t.Fatalf("%d batches, want 2 (ours and the rival): the chunk was paid for again", len(bs))
			}
			if res.Summary.Cells != 500 || res.Summary.Failed != 0 || res.Summary.OK+res.Summary.Unparsed != 500 {
				t.Errorf("summary %+v, want 500 cells answered", res.Summary)
			}
			recs, err := st.Records(context.Background(), "ambiguous", 0, 500)
			if err != nil {
				t.Fatal(err)
			}
			answered := 0
			for _, r := range recs {
				if r.Status != store.StatusFailed {
					answered++
				}
			}
			if len(recs) != 500 || answered != 500 {
				t.Errorf("%d records, %d answered; want the 500 paid answers", len(recs), answered)
			}
			// No candidate is deleted: one whose results are all the chunk's may be another run's of the same cells.
			for _, b := range bs {
				if b.Deleted {
					t.Errorf("batch %s (custom ids %s…) deleted; want every candidate left at the provider", b.ID, b.CustomIDs[0])
				}
			}
			wantAdopted := map[bool]int{false: 1, true: 2}[twin]
			if len(collected) != 1 || collected[0].Recorded != 500 || len(collected[0].Adopted) != wantAdopted || collected[0].Again.Len() != 0 {
				t.Errorf("CollectCandidates returned %+v, want 500 cells recorded once from %d candidates", collected, wantAdopted)
			}
			if !slices.ContainsFunc(bs, func(b sim.Batch) bool { return strings.HasPrefix(b.CustomIDs[0], "other-") }) == !twin {
				t.Errorf("no foreign rival among %d batches: the test did not test one", len(bs))
			}
		})
	}
}

// spyCandidates registers the activities with env, keeping what each CollectCandidates returned.
type spyCandidates struct {
	*testsuite.TestWorkflowEnvironment
	out *[]wire.BatchCollected
}

func (s spyCandidates) RegisterActivityWithOptions(a any, o activity.RegisterOptions) {
	if fn, ok := a.(func(context.Context, wire.BatchCandidatesInput) (wire.BatchCollected, error)); ok && o.Name == wire.CollectCandidates.Name {
		var mu sync.Mutex
		a = func(ctx context.Context, in wire.BatchCandidatesInput) (wire.BatchCollected, error) {
			got, err := fn(ctx, in)
			if err == nil {
				mu.Lock()
				*s.out = append(*s.out, got)
				mu.Unlock()
			}
			return got, err
		}
	}
	s.TestWorkflowEnvironment.RegisterActivityWithOptions(a, o)
}

// loseFirstPost loses the answer of the first POST to path that reaches the server, after the server acted on it.
type loseFirstPost struct {
	path string
	mu   sync.Mutex
	lost int
}

func (l *loseFirstPost) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || r.URL.Path != l.path {
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

// TestOpenAIGatewayWithoutMetadata runs a batch spec against an OpenAI-format endpoint that drops every batch's
// metadata, with the first create's answer lost (the worker died right after it): the retry finds the batch by
// its input file and adopts it, so every chunk is one batch and every request runs once. After each collect the
// batch's files are deleted at the provider.
func TestOpenAIGatewayWithoutMetadata(t *testing.T) {
	s, err := sim.New(sim.Config{Batch: sim.BatchConfig{DropMetadata: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	lose := &loseFirstPost{path: "/v1/batches"}
	acts := &activities.Activities{Store: tempStore(t), Models: llm.NewRegistry(&http.Client{Transport: lose}, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond, Clock: fastClock()}
	res := runWith(t, acts, simSpec(srv.URL, true), "no-metadata")
	if lose.lost != 1 {
		t.Fatalf("%d create answers lost, want the first: the test did not test a lost create", lose.lost)
	}
	bs := s.Batches()
	if len(bs) != 6 {
		t.Errorf("%d batches, want 6: one per chunk, the lost create's adopted", len(bs))
	}
	for _, b := range bs {
		if len(b.Metadata) != 0 {
			t.Errorf("batch %s kept metadata %v: the gateway did not drop it", b.ID, b.Metadata)
		}
	}
	checkRanOnce(t, bs, 40)
	if res.Summary.Failed != 0 || res.Summary.Cells != 40 {
		t.Errorf("summary %+v, want 40 cells answered", res.Summary)
	}
	if files := s.Files(); len(files) != 0 {
		t.Errorf("files left at the provider after the run: %v", files)
	}
	if n := len(s.Deletions()); n != 12 {
		t.Errorf("%d files deleted, want 12: each batch's input and output", n)
	}
}

// TestBatchKeepFiles: batch.keep_files: true leaves every batch's input and output file at the provider.
func TestBatchKeepFiles(t *testing.T) {
	s, err := sim.New(sim.Config{Batch: sim.BatchConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	acts := &activities.Activities{Store: tempStore(t), Models: llm.NewRegistry(http.DefaultClient, func(string) string { return "" }, ""),
		OutputRoot: t.TempDir(), HeartbeatEvery: 10 * time.Millisecond, Clock: fastClock()}
	spec := simSpec(srv.URL, true)
	spec.Models[0].Batch.KeepFiles = true
	res := runWith(t, acts, spec, "keep")
	if res.Summary.Failed != 0 || res.Summary.Cells != 40 {
		t.Errorf("summary %+v, want 40 cells answered", res.Summary)
	}
	if d := s.Deletions(); len(d) != 0 {
		t.Errorf("deleted %v although keep_files is set", d)
	}
	if files := s.Files(); len(files) != 12 {
		t.Errorf("%d files at the provider, want 12: each batch's input and output", len(files))
	}
}
