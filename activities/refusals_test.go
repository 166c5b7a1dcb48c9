package activities

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// newRefusalHarness is a harness whose model is served by a simulator configured so, at base (the simulator's URL
// plus what base adds). The returned function is the simulator's request log once every request has landed.
func newRefusalHarness(t *testing.T, cfg sim.Config, base func(url string) string, items, personas int, edit func(*experiment.Spec)) (*harness, func() []sim.Request) {
	t.Helper()
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	spec := testSpec(ts.URL, items, personas)
	spec.Models[0].BaseURL = base(ts.URL)
	if edit != nil {
		edit(&spec)
	}
	h := newHarness(t, spec)
	return h, func() []sim.Request { ts.Close(); return srv.Requests() }
}

// checkGivenUp checks a pass the simulator's refusals ended: the pass failed with class, for good; only a
// handful (at most most) of its cells were sent, each recorded with the provider's own refusal (sentCode); and
// every cell never sent carries class and a message containing each of want. It returns the message.
func checkGivenUp(t *testing.T, h *harness, err error, log []sim.Request, class, sentCode string, most int, want ...string) string {
	t.Helper()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != class || !app.NonRetryable() {
		t.Fatalf("pass ended with %v, want a non-retryable %s", err, class)
	}
	if len(log) == 0 || len(log) > most {
		t.Errorf("the simulator got %d requests, want 1 to %d: the model is given up, not every cell sent", len(log), most)
	}
	sent := map[int]bool{}
	for _, r := range log {
		sent[h.cellIndex(r.Cell)] = true
	}
	recs := h.records()
	if len(recs) != h.spec.NumCells() {
		t.Fatalf("%d cells recorded, want all %d", len(recs), h.spec.NumCells())
	}
	var msg string
	for i, r := range recs {
		switch {
		case r.Status != store.StatusFailed:
			t.Errorf("cell %d = %+v, want failed", i, r)
		case sent[i] && (r.ErrorClass != "InvalidRequest" || r.ErrorCode != sentCode):
			t.Errorf("sent cell %d = %s %s %q, want the provider's refusal: InvalidRequest %s", i, r.ErrorClass, r.ErrorCode, r.ErrorMessage, sentCode)
		case !sent[i] && r.ErrorClass != class:
			t.Errorf("unsent cell %d = %s %q, want %s", i, r.ErrorClass, r.ErrorMessage, class)
		case !sent[i]:
			msg = r.ErrorMessage
			for _, w := range want {
				if !strings.Contains(r.ErrorMessage, w) {
					t.Errorf("unsent cell %d says %q, want it to contain %q", i, r.ErrorMessage, w)
				}
			}
		}
	}
	if msg == "" {
		t.Error("no cell was left unsent")
	}
	return msg
}

// TestABaseURLWithoutV1IsGivenUpAtOnce: a base_url written without /v1 (Ollama's http://localhost:11434) sends
// the calls to /chat/completions, which an OpenAI-compatible server answers 404. The first 404 ends the model:
// the calls in flight land, no other is sent, and every other cell says which URL was called and the /v1 to set.
func TestABaseURLWithoutV1IsGivenUpAtOnce(t *testing.T) {
	const concurrency = 4
	var url string
	h, requests := newRefusalHarness(t, sim.Config{}, func(u string) string { url = u; return u }, 10, 6, nil)
	_, err := h.runPass(ratelimit.Limits{Concurrency: concurrency})
	log := requests()
	for _, r := range log {
		if r.Endpoint != "/chat/completions" || r.Status != 404 {
			t.Errorf("the simulator got %s and answered %d, want /chat/completions answered 404", r.Endpoint, r.Status)
		}
	}
	msg := checkGivenUp(t, h, err, log, errclass.NotFound, "unknown_url", 2*concurrency,
		"model m: its calls to "+url+"/chat/completions are answered HTTP 404 unknown_url", "set models[0].base_url to "+url+"/v1",
		"--retry-failed")
	t.Logf("%d requests for %d cells; an unsent cell says: %s", len(log), h.spec.NumCells(), msg)
}

// TestTheSameRefusalOfTheFirstCallsEndsTheModel: a server that refuses every json_schema request alike (llama.cpp's
// under a chat template it cannot apply) ends the model after sameRefusals refusals with no answer; the other
// cells are not sent and say what to change.
func TestTheSameRefusalOfTheFirstCallsEndsTheModel(t *testing.T) {
	const concurrency = 2
	h, requests := newRefusalHarness(t, sim.Config{RefuseJSONSchema: true}, func(u string) string { return u + "/v1" }, 10, 6,
		func(s *experiment.Spec) { s.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerJSONSchema} })
	_, err := h.runPass(ratelimit.Limits{Concurrency: concurrency})
	log := requests()
	for _, r := range log {
		if r.Status != 400 || r.ResponseFormat != "json_schema" {
			t.Errorf("the simulator got %s with response_format %q and answered %d, want json_schema refused 400", r.Endpoint, r.ResponseFormat, r.Status)
		}
	}
	msg := checkGivenUp(t, h, err, log, errclass.Rejected, "invalid_request_error", sameRefusals+concurrency,
		fmt.Sprintf("model m: its first %d calls were all refused alike (HTTP 400 invalid_request_error: ", sameRefusals),
		"cannot apply response_format json_schema", "give model m answer: {mode: text}", "--retry-failed")
	t.Logf("%d requests for %d cells; an unsent cell says: %s", len(log), h.spec.NumCells(), msg)
}

// TestRefusalsOfTheCellsOwnDoNotEndTheModel: prompts too long for the server's context are refused, each with its
// own token count. Even when they are the model's first calls, and more than sameRefusals, they are the cells'
// own: those cells fail, every other is sent and answered.
func TestRefusalsOfTheCellsOwnDoNotEndTheModel(t *testing.T) {
	const long = 6 // > sameRefusals
	h, requests := newRefusalHarness(t, sim.Config{ContextWindow: 300}, func(u string) string { return u + "/v1" }, 10, 1,
		func(s *experiment.Spec) {
			for i := range long {
				s.Questionnaire.Items[i].Text = strings.Repeat("very ", 300+10*i) + "long question?"
			}
		})
	// One call at a time, in cell order: the oversized prompts are the first calls, before any answer.
	res, err := h.runPass(ratelimit.Limits{Concurrency: 1})
	if err != nil {
		t.Fatalf("pass ended with %v, want it to finish", err)
	}
	log := requests()
	if len(log) != h.spec.NumCells() || log[0].Status != 400 || log[long].Status != 200 {
		t.Errorf("%d requests (first %d, %d-th %d), want every one of the %d cells sent, the oversized first",
			len(log), log[0].Status, long+1, log[long].Status, h.spec.NumCells())
	}
	recs := h.records()
	for i := range h.spec.NumCells() {
		r := recs[i]
		if i < long && (r.Status != store.StatusFailed || r.ErrorCode != "context_length_exceeded") {
			t.Errorf("cell %d = %s %s %s, want failed with context_length_exceeded", i, r.Status, r.ErrorClass, r.ErrorCode)
		}
		if i >= long && r.Status != store.StatusOK {
			t.Errorf("cell %d = %s %s %q, want answered", i, r.Status, r.ErrorClass, r.ErrorMessage)
		}
	}
	if res.Failed != long || res.OK != h.spec.NumCells()-long {
		t.Errorf("result %+v, want %d failed and the rest ok", res, long)
	}
}

// TestA404AfterAnAnswerIsTheCellsOwn: a model that answered in an earlier pass is known to exist at its URL, so
// a 404 is one cell's failure, not the end of the model.
func TestA404AfterAnAnswerIsTheCellsOwn(t *testing.T) {
	fm := &fakeModel{}
	fm.rule = func(cell string, _ int) (int, string, map[string]string, string) {
		return 404, `{"error":{"message":"not found","type":"invalid_request_error"}}`, nil, ""
	}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	h := newHarness(t, testSpec(srv.URL, 3, 2))
	v, err := h.env.ExecuteActivity(h.acts.RunSeedPass, wire.PassInput{RunID: "run", Pass: h.spec.Passes()[0],
		Limits: ratelimit.Limits{Concurrency: 1}, ModelAnswered: true})
	var res wire.PassResult
	if err == nil {
		err = v.Get(&res)
	}
	if err != nil || res.Failed != 6 || len(fm.requested()) != 6 {
		t.Errorf("pass: %v, %+v after %d requests; want all 6 cells sent and failed on their own", err, res, len(fm.requested()))
	}
}

// TestDeadModelSaysWhatToChange: the message of a given-up model names the change that fixes it, by what the
// spec sent.
func TestDeadModelSaysWhatToChange(t *testing.T) {
	notFound := &llm.Error{Class: errclass.InvalidRequest, Status: 404, Code: "model_not_found", Message: "The model `gpt-4o-mni` does not exist"}
	refused := &llm.Error{Class: errclass.InvalidRequest, Status: 400, Code: "invalid_request_error", Message: "unsupported parameter"}
	for _, tc := range []struct {
		name   string
		edit   func(*experiment.Spec)
		class  string
		e      *llm.Error
		want   string
		unwant string
	}{
		{"no /v1", func(s *experiment.Spec) { s.Models[0].BaseURL = "http://localhost:11434/" }, errclass.NotFound, notFound,
			"set models[0].base_url to http://localhost:11434/v1", "check models[0].name"},
		{"the default base_url", func(s *experiment.Spec) { s.Models[0].BaseURL = "" }, errclass.NotFound, notFound,
			`check models[0].name: "fake" must be a model the provider has`, "base_url"},
		{"a versioned base_url", func(s *experiment.Spec) { s.Models[0].BaseURL = "http://localhost:8000/v1" }, errclass.NotFound, notFound,
			"check models[0].base_url (the server's API root, e.g. http://localhost:11434/v1) and models[0].name", "set models[0].base_url"},
		{"json_schema", func(s *experiment.Spec) { s.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerJSONSchema} }, errclass.Rejected, refused,
			"give model m answer: {mode: text}", "logprobs"},
		{"logprobs", func(s *experiment.Spec) { s.Run.Answer = &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs} }, errclass.Rejected, refused,
			"give model m answer: {mode: samples}", "json_schema"},
		{"text", func(*experiment.Spec) {}, errclass.Rejected, refused,
			`(HTTP 400 invalid_request_error: "unsupported parameter") and none succeeded, so every cell would be; change what the server's message names in models[0]`, "answer:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec("http://127.0.0.1:1", 1, 1)
			tc.edit(&spec)
			e := deadModel(&spec, 0, tc.class, tc.e, "URL")
			if e.Class != errclass.Class(tc.class) || e.Code != tc.e.Code {
				t.Errorf("class %s code %s, want %s and the provider's code %s", e.Class, e.Code, tc.class, tc.e.Code)
			}
			if !strings.Contains(e.Message, tc.want) || strings.Contains(e.Message, tc.unwant) || !strings.HasSuffix(e.Message, "; then run again with --retry-failed") {
				t.Errorf("message %q, want it to contain %q, not %q, and end with --retry-failed", e.Message, tc.want, tc.unwant)
			}
		})
	}
}

// TestAnAnswerInTheStoreSettlesTheRefusals: a resumed attempt whose pass already has an answer that was not
// from the cache knows the endpoint serves the model: a 404 then is its cell's own. An answer from the cache
// shows nothing of the endpoint: the 404 still ends the model.
func TestAnAnswerInTheStoreSettlesTheRefusals(t *testing.T) {
	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("cached %v", cached), func(t *testing.T) {
			fm := &fakeModel{}
			fm.rule = func(cell string, _ int) (int, string, map[string]string, string) {
				return 404, `{"error":{"message":"not found","type":"invalid_request_error"}}`, nil, ""
			}
			srv := httptest.NewServer(fm)
			defer srv.Close()
			h := newHarness(t, testSpec(srv.URL, 3, 2))
			rec := store.Record{Index: 0, Status: store.StatusOK, OptionID: "1", Raw: "1. No", Cached: cached}
			if err := h.store.Put(t.Context(), "run", []store.Record{rec}); err != nil {
				t.Fatal(err)
			}
			res, err := h.runPass(ratelimit.Limits{Concurrency: 1})
			var app *temporal.ApplicationError
			switch {
			case !cached && (err != nil || res.Failed != 5 || len(fm.requested()) != 5):
				t.Errorf("pass: %v, %+v after %d requests; want the 5 unfinished cells sent and failed on their own", err, res, len(fm.requested()))
			case cached && (!errors.As(err, &app) || app.Type() != errclass.NotFound || len(fm.requested()) != 1):
				t.Errorf("pass: %v after %d requests; want NotFound after one", err, len(fm.requested()))
			}
		})
	}
}
