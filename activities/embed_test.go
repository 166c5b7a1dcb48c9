package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// embedLog serves the simulator and records the inputs of every embeddings request.
type embedLog struct {
	h  http.Handler
	mu sync.Mutex
	// inputs holds each request's texts, in arrival order.
	inputs [][]string
}

func (l *embedLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Input          []string `json:"input"`
		EncodingFormat string   `json:"encoding_format"`
	}
	_ = json.Unmarshal(body, &req)
	if req.EncodingFormat != "base64" {
		http.Error(w, `{"error":{"message":"want encoding_format base64"}}`, http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.inputs = append(l.inputs, req.Input)
	l.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	l.h.ServeHTTP(w, r)
}

func (l *embedLog) requests() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.inputs)
}

const embedModel = "text-embedding-3-small"

func embedSpec(url string, texts []string, maxInputs, maxTokens int) experiment.Spec {
	s := experiment.Spec{Name: "embed test", Kind: experiment.KindEmbed,
		Models: []experiment.Model{{ID: "m", Name: embedModel, BaseURL: url + "/v1",
			Price: &experiment.Price{InputPerMTok: 0.02}}},
		Embed: &experiment.EmbedSettings{Texts: experiment.EmbedItems, MaxInputsPerRequest: maxInputs, MaxTokensPerRequest: maxTokens}}
	for i, t := range texts {
		s.Questionnaire.Items = append(s.Questionnaire.Items, experiment.Item{ID: fmt.Sprint("t", i), Text: t})
	}
	s.ApplyDefaults()
	return s
}

func newEmbedHarness(t *testing.T, texts []string, maxInputs, maxTokens int) (*harness, *embedLog) {
	t.Helper()
	return newEmbedHarnessOn(t, sim.Config{}, texts, maxInputs, maxTokens)
}

// newEmbedHarnessOn is newEmbedHarness against a simulator configured so.
func newEmbedHarnessOn(t *testing.T, cfg sim.Config, texts []string, maxInputs, maxTokens int) (*harness, *embedLog) {
	t.Helper()
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lg := &embedLog{h: srv}
	ts := httptest.NewServer(lg)
	t.Cleanup(ts.Close)
	h := newHarness(t, embedSpec(ts.URL, texts, maxInputs, maxTokens))
	tok, err := llm.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	h.acts.Tokenizer = tok
	return h, lg
}

// TestEmbedPacking: requests respect both packing limits, each distinct text is sent once and its vector recorded
// for every cell that has it, and a text too long for any request fails alone.
func TestEmbedPacking(t *testing.T) {
	long := strings.Repeat("many words in a row ", 30)
	texts := []string{"Am the life of the party.", "Feel little concern for others.", "Am always prepared.",
		"Am the life of the party.", long, "Get stressed out easily.", "Have a rich vocabulary.",
		"Don't talk a lot.", "Feel little concern for others.", "Am interested in people."}
	const maxInputs, maxTokens = 3, 20
	h, lg := newEmbedHarness(t, texts, maxInputs, maxTokens)
	res, err := h.runPass(ratelimit.Limits{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != len(texts) || res.OK != len(texts)-1 || res.Failed != 1 {
		t.Errorf("result %+v, want %d done, 1 failed", res, len(texts))
	}
	sent := map[string]int{}
	for i, in := range lg.requests() {
		tokens := 0
		for _, x := range in {
			sent[x]++
			tokens += h.acts.Tokenizer.Count(embedModel, x)
		}
		if len(in) > maxInputs || tokens > maxTokens {
			t.Errorf("request %d: %d texts, %d tokens; limits %d and %d", i, len(in), tokens, maxInputs, maxTokens)
		}
	}
	for _, x := range texts {
		want := 1
		if x == long {
			want = 0
		}
		if sent[x] != want {
			t.Errorf("text %q sent %d times, want %d", x, sent[x], want)
		}
	}
	if n := len(lg.requests()); n >= len(texts)-3 {
		t.Errorf("%d requests for %d distinct texts: not packed", n, len(texts)-3)
	}
	recs := h.records()
	for i, x := range texts {
		r := recs[i]
		if x == long {
			if r.Status != store.StatusFailed || r.ErrorClass != errclass.TextTooLong || !strings.Contains(r.ErrorMessage, "max_tokens_per_request (20)") {
				t.Errorf("long text: record %+v, want a TextTooLong failure naming the limit", r)
			}
			continue
		}
		v, err := results.DecodeVector(r.Raw)
		if err != nil || r.Status != store.StatusOK {
			t.Fatalf("text %d: status %s, vector error %v", i, r.Status, err)
		}
		if want := sim.Embedding(embedModel, x, sim.DefaultDimensions); !slices.Equal(v, want) {
			t.Errorf("text %d: the recorded vector is not the simulator's", i)
		}
	}
}

// TestEmbedInvalidCachedVectorsAreMisses: a second run is served from the cache, except for entries that fail
// validation (not finite, wrong length, bad checksum): those texts are embedded again and their entries replaced.
func TestEmbedInvalidCachedVectorsAreMisses(t *testing.T) {
	texts := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	h, lg := newEmbedHarness(t, texts, 2, 100)
	if _, err := h.runPass(ratelimit.Limits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	first := len(lg.requests())
	ctx := context.Background()
	endpoint := respcache.Endpoint(h.spec.Models[0])
	key := func(text string) store.CacheKey { return respcache.VectorKey(endpoint, embedModel, text, 0) }
	good := sim.Embedding(embedModel, "beta", sim.DefaultDimensions)
	nan := slices.Clone(good)
	nan[3] = float32(math.NaN())
	bad := []store.CacheEntry{
		respcache.VectorEntry(key("beta"), embedModel, "x", respcache.Vector{Values: nan, PromptTokens: 1}, time.Now()),
		respcache.VectorEntry(key("gamma"), embedModel, "x", respcache.Vector{Values: good[:10], PromptTokens: 1}, time.Now()),
	}
	corrupt := respcache.VectorEntry(key("delta"), embedModel, "x", respcache.Vector{Values: good, PromptTokens: 1}, time.Now())
	corrupt.Value[len(corrupt.Value)-1] ^= 0xff
	bad = append(bad, corrupt)
	if err := h.store.Write(ctx, "x", store.Batch{Cache: bad}); err != nil {
		t.Fatal(err)
	}

	raw, err := json.Marshal(h.spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.acts.PrepareRun(ctx, wire.PrepareInput{RunID: "run2", Spec: raw}); err != nil {
		t.Fatal(err)
	}
	h.reset()
	v, err := h.env.ExecuteActivity(h.acts.RunSeedPass, wire.PassInput{RunID: "run2", Pass: h.spec.Passes()[0],
		Limits: ratelimit.Limits{Concurrency: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var res wire.PassResult
	if err := v.Get(&res); err != nil {
		t.Fatal(err)
	}
	if res.Cached != 2 || res.OK != 5 {
		t.Errorf("second run: %+v, want 2 cached (alpha, epsilon) and 5 ok", res)
	}
	var again []string
	for _, in := range lg.requests()[first:] {
		again = append(again, in...)
	}
	slices.Sort(again)
	if want := []string{"beta", "delta", "gamma"}; !slices.Equal(again, want) {
		t.Errorf("second run embedded %v, want %v (the invalid entries)", again, want)
	}
	recs, err := h.store.Records(ctx, "run2", 0, len(texts))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		got, err := results.DecodeVector(r.Raw)
		if err != nil || !slices.Equal(got, sim.Embedding(embedModel, texts[i], sim.DefaultDimensions)) {
			t.Errorf("run2 text %s: wrong vector (cached %v, error %v)", texts[i], r.Cached, err)
		}
	}
	// The replaced entries are valid now.
	entries, err := h.store.CacheGet(ctx, []store.CacheKey{key("beta"), key("gamma"), key("delta")})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d entries, want 3", len(entries))
	}
	for _, e := range entries {
		if _, err := respcache.ReadVector(e, e.Key, sim.DefaultDimensions); err != nil {
			t.Errorf("entry not replaced: %v", err)
		}
	}
}

// TestAnEmbedPassWaitsOutAnOutage: embeddings requests go through the same breaker as chat calls. The provider is
// down for the first 600 ms; with run.max_attempts 2 every text is embedded all the same, since no failure of the
// outage is charged, and the outage costs a few requests, not a retry of every batch.
func TestAnEmbedPassWaitsOutAnOutage(t *testing.T) {
	var texts []string
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("Statement number %d about myself.", i))
	}
	cfg := sim.Config{Outages: []sim.Outage{{After: 0, For: 600 * time.Millisecond, Status: 503}}}
	h, lg := newEmbedHarnessOn(t, cfg, texts, 2, 8191)
	h.spec.Run.MaxAttempts = 2
	h.acts.Breakers = breaker.NewSet(ratelimit.SystemClock(), breaker.Policy{ProbeFirst: 20 * time.Millisecond,
		ProbeMax: 100 * time.Millisecond})
	raw, err := json.Marshal(h.spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.acts.PrepareRun(context.Background(), wire.PrepareInput{RunID: "run2", Spec: raw}); err != nil {
		t.Fatal(err)
	}
	p := h.spec.Passes()[0]
	v, err := h.env.ExecuteActivity(h.acts.RunSeedPass, wire.PassInput{RunID: "run2", Pass: p, Limits: ratelimit.Limits{Concurrency: 4}})
	var res wire.PassResult
	if err == nil {
		err = v.Get(&res)
	}
	if err != nil || res.OK != 40 || res.Failed != 0 {
		t.Fatalf("result %+v, %v; want all 40 texts embedded after the outage", res, err)
	}
	// 20 requests of 2 texts; during the outage: at most 4 in flight and 4 more before 8 distinct batches failed
	// (fewer: the pass has 20), then one probe per step (20, 40, 80, then every 80-120 ms over 600 ms: about 10).
	// The outage runs on the real clock, so a loaded machine shifts where the probes fall; 4 more are allowed
	// for that. A retry of every batch instead would be 20 more at least.
	if n := len(lg.requests()); n > 20+8+10+4 {
		t.Errorf("%d requests, want the 20 batches and a few during the outage", n)
	}
	if c := lg.h.(*sim.Server).Counters(); c.Outage == 0 {
		t.Errorf("the simulator answered no request with its outage (%+v): the test tests nothing", c)
	}
}
