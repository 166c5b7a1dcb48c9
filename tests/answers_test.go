package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/specfile"
)

// With answer mode logprobs every cell carries a distribution over its options that sums to 1, with coverage in
// (0, 1] and an expected score equal to Σ p·score (reverse-keyed items reversed). The distributions are facts of
// the cell: the same at every max_concurrency, and the same when the response cache answers the rerun.
func TestOptionProbabilitiesAreFactsOfTheCell(t *testing.T) {
	s := newStack(t, sim.Config{})
	base := gridSpec(2, 2, 6, 5)
	base.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs}
	const cells = 2 * 2 * 6 * 5

	first := base
	first.Run.MaxConcurrency = 1
	res := s.run(t, "lp-c1", first)
	if res.Summary.OK+res.Summary.Unparsed != cells || res.Summary.Cached != 0 {
		t.Fatalf("first run: %+v", res.Summary)
	}
	rows := readRows(t, res.OutputDir)
	agree := 0
	for _, r := range rows {
		if len(r.Probs) != 5 || r.Coverage == nil || r.ExpectedScore == nil {
			t.Fatalf("cell %s has no distribution: %+v", r.CellID, r)
		}
		var sum, exp float64
		for k, p := range r.Probs {
			sum += p
			w := float64(k + 1)
			if r.Reversed {
				w = 6 - w
			}
			exp += p * w
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("cell %s: probabilities sum to %v", r.CellID, sum)
		}
		if c := *r.Coverage; c <= 0 || c > 1 {
			t.Errorf("cell %s: coverage %v", r.CellID, c)
		}
		if math.Abs(exp-*r.ExpectedScore) > 1e-9 {
			t.Errorf("cell %s: expected score %v, Σ p·w = %v", r.CellID, *r.ExpectedScore, exp)
		}
		if r.TopAgrees != nil && *r.TopAgrees {
			agree++
		}
	}
	// The simulator's most likely label is not always the one it writes, as for real instruction-tuned models.
	if agree == 0 || agree == cells {
		t.Errorf("the most likely option agrees with the written one in %d of %d cells; want some but not all", agree, cells)
	}
	want := cellColumns(t, res.OutputDir)

	wide := base
	wide.Run.MaxConcurrency, wide.Run.Cache = 16, experiment.CacheOff
	res = s.run(t, "lp-c16", wide)
	if got := cellColumns(t, res.OutputDir); !reflect.DeepEqual(got, want) {
		t.Errorf("max_concurrency 16 gives other cell columns than 1")
	}
	calls := len(s.sim.Requests())

	rerun := base
	res = s.run(t, "lp-cached", rerun)
	if res.Summary.Cached != cells {
		t.Fatalf("rerun: %d of %d cells from the cache", res.Summary.Cached, cells)
	}
	if n := len(s.sim.Requests()); n != calls {
		t.Errorf("the all-cached rerun made %d calls", n-calls)
	}
	if got := cellColumns(t, res.OutputDir); !reflect.DeepEqual(got, want) {
		t.Errorf("the cached rerun's cell columns (probabilities included) differ from the first run's")
	}
}

// Answers the content filter withheld, or cut at max_tokens before they named an option, are unparsed with a
// class that says so, their finish reason is a column, and the summary counts both.
func TestFilteredAndCutAnswersAreVisible(t *testing.T) {
	s := newStack(t, sim.Config{Faults: sim.Faults{Length: 0.2, ContentFilter: 0.15}, FaultSeed: 7})
	spec := gridSpec(1, 2, 10, 6)
	spec.Run.Cache = experiment.CacheOff
	res := s.run(t, "finish", spec)
	var length, filtered int
	for _, r := range readRows(t, res.OutputDir) {
		switch r.FinishReason {
		case llm.FinishContentFilter:
			filtered++
			if r.Status != "unparsed" || r.ErrorClass != errclass.ContentFiltered || r.OptionID != "" {
				t.Errorf("a filtered answer was recorded %s/%s/%q", r.Status, r.ErrorClass, r.OptionID)
			}
		case llm.FinishLength:
			length++
			if r.Status == "unparsed" && r.ErrorClass != errclass.Truncated {
				t.Errorf("a cut, unparsed answer has class %q, want %s", r.ErrorClass, errclass.Truncated)
			}
		case llm.FinishStop:
		default:
			t.Errorf("cell %s: finish reason %q", r.CellID, r.FinishReason)
		}
	}
	c := s.sim.Counters()
	if filtered == 0 || length == 0 || int64(filtered) != c.ContentFilter || int64(length) != c.Length {
		t.Errorf("rows: %d filtered, %d cut; the simulator sent %d and %d", filtered, length, c.ContentFilter, c.Length)
	}
	if res.Summary.ContentFiltered != filtered || res.Summary.Length != length {
		t.Errorf("summary counts %d filtered, %d cut; rows %d, %d", res.Summary.ContentFiltered, res.Summary.Length, filtered, length)
	}
}

// The parameters of a spec file go out exactly as written, read from the raw request body, and a key the server
// adds goes out verbatim from extra; a key outside extra that silico does not know is an error with a hint.
func TestParamsGoOutAsWritten(t *testing.T) {
	var mu sync.Mutex
	var body map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		_ = json.Unmarshal(b, &body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"3"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
	}))
	defer srv.Close()
	spec := func(params string) string {
		return `name: params
seeds: [1]
models:
  - {id: m, name: local, base_url: "` + srv.URL + `/v1", params: ` + params + `}
prompt: {type: normal, template: "{question} {answer_options}"}
personas: [{id: p}]
questionnaire:
  name: q
  options: [{id: "1", text: one, weight: 1}, {id: "3", text: three, weight: 3}]
  items: [{id: i1, text: "Am I?"}]
`
	}
	s, err := specfile.Parse([]byte(spec(`{temperature: 0, presence_penalty: 0.5, reasoning_effort: low, logit_bias: {"1639": -100}, extra: {top_k: 40, min_p: 0.05, repeat_penalty: 1.1}}`)), "spec.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := experiment.Cell{}
	msgs, err := s.Render(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := llm.NewClient(srv.URL+"/v1", "", srv.Client())
	if _, err := client.Chat(t.Context(), llm.Request{Model: "local", Messages: msgs, Seed: 1, Params: s.CallParams(c)}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, want := range map[string]string{"temperature": "0", "presence_penalty": "0.5", "reasoning_effort": `"low"`,
		"logit_bias": `{"1639":-100}`, "top_k": "40", "min_p": "0.05", "repeat_penalty": "1.1", "seed": "1"} {
		if got := string(body[k]); got != want {
			t.Errorf("body %s = %s, want %s", k, got, want)
		}
	}
	if _, ok := body["extra"]; ok {
		t.Error("the body has an extra key; its keys belong at the top level")
	}

	_, err = specfile.Parse([]byte(spec(`{top_k: 40}`)), "spec.yaml", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `unknown key "top_k"`) || !strings.Contains(err.Error(), "extra: {top_k: ...}") {
		t.Errorf("top_k outside extra: %v", err)
	}
}

// A server that answers without logprobs, while the answer mode reads them, stops its model with one error: the
// answers that came are kept, every other cell says NoLogprobs and why, and the model is not asked again and again.
func TestAServerWithoutLogprobsStopsTheModelOnce(t *testing.T) {
	strip := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body map[string]json.RawMessage
			b, _ := io.ReadAll(r.Body)
			if json.Unmarshal(b, &body) == nil {
				delete(body, "logprobs")
				delete(body, "top_logprobs")
				b, _ = json.Marshal(body)
			}
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(string(b))), int64(len(b))
			h.ServeHTTP(w, r)
		})
	}
	s := newStackWrapped(t, sim.Config{}, 1, strip)
	spec := gridSpec(1, 2, 20, 10)
	spec.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs}
	spec.Run.Cache = experiment.CacheOff
	const cells = 400
	res := s.run(t, "nolp", spec)
	calls := len(s.sim.Requests())
	if calls == 0 || calls > 2*spec.Run.MaxConcurrency+2 {
		t.Errorf("%d calls of a server without logprobs, want a handful (those in flight when the first answer came)", calls)
	}
	noLP := 0
	for _, r := range readRows(t, res.OutputDir) {
		switch {
		case r.Status == "ok":
			if r.Probs != nil {
				t.Errorf("cell %s has probabilities from a server that sent none", r.CellID)
			}
		case r.ErrorClass == errclass.NoLogprobs || r.ErrorClass == errclass.Skipped:
			noLP++
			if !strings.Contains(r.ErrorMessage, "logprobs") {
				t.Errorf("cell %s: %q does not say why", r.CellID, r.ErrorMessage)
			}
		default:
			t.Errorf("cell %s: %s %s %q", r.CellID, r.Status, r.ErrorClass, r.ErrorMessage)
		}
	}
	if noLP < cells-calls {
		t.Errorf("%d cells stopped for want of logprobs, want the %d not called", noLP, cells-calls)
	}
	if len(res.Summary.Errors) == 0 || !strings.Contains(strings.Join(res.Summary.Errors, "\n"), "answered without logprobs") {
		t.Errorf("summary errors %q do not say the server sends no logprobs", res.Summary.Errors)
	}
}
