package activities

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// antKey is the Anthropic key of the tests: it matches no key pattern, so only exact redaction hides it.
const antKey = "ant-PLAIN-SECRET-0123456789"

// fakeAnthropic is Anthropic's Messages API: it checks the headers, keeps each cell's body, answers "2. Yes",
// and for persona p1 of item 2 refuses the request with the key echoed in the message.
type fakeAnthropic struct {
	mu     sync.Mutex
	bodies map[string]map[string]any
	paths  map[string]int
	bad    []string
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	cell := anthropicCell(body)
	f.mu.Lock()
	f.bodies[cell] = body
	f.paths[r.URL.Path]++
	if r.Header.Get("x-api-key") != antKey || r.Header.Get("anthropic-version") == "" || r.Header.Get("Authorization") != "" {
		f.bad = append(f.bad, fmt.Sprintf("%s: headers %v", cell, r.Header))
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(cell, "/2/p1") {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt refused for key %s"}}`, r.Header.Get("x-api-key"))
		return
	}
	_, _ = io.WriteString(w, `{"type":"message","role":"assistant","content":[{"type":"text","text":"2. Yes"}],`+
		`"usage":{"input_tokens":10,"output_tokens":2}}`)
}

// anthropicCell names the cell of a Messages API request of testSpec by what its body says, in the form of a
// cell id (m/7/<item>/<persona>): Anthropic requests carry no cell header. Item N asks "Question N?"; persona pK
// is named PK in the system prompt.
func anthropicCell(body map[string]any) string {
	item := regexp.MustCompile(`Question (\d+)\?`).FindStringSubmatch(fmt.Sprint(body["messages"]))
	persona := regexp.MustCompile(`\bP(\d+)\b`).FindStringSubmatch(fmt.Sprint(body["system"]))
	if item == nil || persona == nil {
		return "unknown"
	}
	return fmt.Sprintf("m/7/%s/p%s", item[1], persona[1])
}

// TestAnthropicPass: a pass of a model of provider anthropic calls the Messages API (x-api-key and
// anthropic-version, the system prompt apart, no seed), records answers as an OpenAI-format pass does, a refused
// request with the key out of its message, and keys its cache entries by the Anthropic endpoint: a rerun is
// served from the cache without a call.
func TestAnthropicPass(t *testing.T) {
	fake := &fakeAnthropic{bodies: map[string]map[string]any{}, paths: map[string]int{}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	spec := testSpec(srv.URL, 3, 2)
	spec.Models[0].Provider = experiment.ProviderAnthropic
	spec.Models[0].Params.MaxTokens = 8
	spec.ApplyDefaults()
	h := newHarness(t, spec)
	h.acts.Models = llm.NewRegistry(http.DefaultClient, func(k string) string {
		if k == experiment.DefaultAnthropicKeyEnv {
			return antKey
		}
		return ""
	}, "")
	res, err := h.runPass(ratelimit.Limits{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 6 || res.Failed != 1 {
		t.Errorf("pass result %+v, want 6 cells done, 1 failed", res)
	}
	if len(fake.bad) > 0 || fake.paths["/v1/messages"] != 6 || len(fake.paths) != 1 || len(fake.bodies) != 6 || fake.bodies["unknown"] != nil {
		t.Errorf("requests: paths %v, bad %v; want 6 to /v1/messages with x-api-key and anthropic-version", fake.paths, fake.bad)
	}
	body := fake.bodies["m/7/1/p0"]
	if _, seed := body["seed"]; seed || body["max_tokens"] != 8.0 || body["model"] != "fake" || !strings.Contains(fmt.Sprint(body["system"]), "P0") {
		t.Errorf("body %v: want max_tokens 8, the system prompt apart and no seed", body)
	}
	if msgs, _ := body["messages"].([]any); len(msgs) != 1 {
		t.Errorf("messages %v, want the one user turn (the system prompt is apart)", body["messages"])
	}
	recs := h.records()
	ok := recs[0]
	if ok.Status != store.StatusOK || ok.OptionID != "2" || ok.PromptTokens != 10 || ok.CompletionTokens != 2 || ok.CostUSD != usage.Dollars(14e-6) {
		t.Errorf("answered cell %+v, want option 2, 10+2 tokens at $1/$2 per million", ok)
	}
	bad := recs[3] // item 2, persona p1
	if bad.Status != store.StatusFailed || bad.ErrorClass != string(errclass.InvalidRequest) || bad.ErrorCode != "invalid_request_error" ||
		!strings.Contains(bad.ErrorMessage, "prompt refused for key [REDACTED]") {
		t.Errorf("refused cell %+v, want InvalidRequest invalid_request_error with the key redacted", bad)
	}
	for i, r := range recs {
		if b, _ := json.Marshal(r); strings.Contains(string(b), antKey) {
			t.Errorf("record %d carries the key: %s", i, b)
		}
	}

	// The cache key is the Anthropic endpoint's, not the OpenAI-format key of the same URL.
	m := spec.Models[0]
	msgs, _ := spec.Render(spec.Cell(0), nil)
	req := newPreparer(&spec, m, nil, nil, true).finish(spec.Cell(0), msgs, pictures{}).req
	openAI := m
	openAI.Provider = experiment.ProviderOpenAI
	found, err := respcache.Lookup(t.Context(), h.store, []store.CacheKey{respcache.Key(respcache.Endpoint(m), req), respcache.Key(respcache.Endpoint(openAI), req)})
	if err != nil {
		t.Fatal(err)
	}
	if _, hit := found.Answers[respcache.Key(respcache.Endpoint(m), req)]; !hit || len(found.Answers) != 1 {
		t.Errorf("cache holds %d of the two keys; want the anthropic endpoint's key and not the OpenAI one", len(found.Answers))
	}

	// A second run of the spec is answered by the cache: the 5 answers without a call, the refused cell again.
	raw, _ := json.Marshal(spec)
	if _, err := h.acts.PrepareRun(t.Context(), wire.PrepareInput{RunID: "rerun", Spec: raw}); err != nil {
		t.Fatal(err)
	}
	h.reset()
	v, err := h.env.ExecuteActivity(h.acts.RunSeedPass, wire.PassInput{RunID: "rerun", Pass: spec.Passes()[0], Limits: ratelimit.Limits{Concurrency: 2}})
	var again wire.PassResult
	if err == nil {
		err = v.Get(&again)
	}
	if err != nil || again.Cached != 5 || fake.paths["/v1/messages"] != 7 {
		t.Errorf("rerun %+v, %v with %d calls in all; want 5 cached and only the refused cell called again", again, err, fake.paths["/v1/messages"])
	}
}
