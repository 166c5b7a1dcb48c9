package activities

import (
	"fmt"
	"sync"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
)

// sameRefusals is how many of a model's first refused requests must be refused alike (one HTTP status, error code
// and message), with no answer before them, for the model to be given up as Rejected. Five: a mistake of one
// cell (an oversized prompt) is refused with a message of its own (the token count), so five alike are the
// request's shape, not the cells'; and five calls are all a wrong request costs instead of every cell's.
const sameRefusals = 5

// refusals watches a model's first permanent refusals for the two that no cell of it can pass:
//
//   - a 404 before any answer: the server has no such path (a base_url without /v1, so that the calls go to
//     /chat/completions) or no such model; the model is given up at once as NotFound;
//   - the same 4xx refusal of the first sameRefusals requests, none answered: a parameter or answer mode the
//     server does not take (llama.cpp's server refuses every json_schema request under a chat template it cannot
//     apply); the model is given up as Rejected.
//
// One answer settles it: from then on every refusal is its cell's own, as is every refusal after the first ones
// differed. An answer from the response cache settles nothing in the pass, since it does not show that this
// endpoint serves; the model is settled from the start when the workflow says an earlier pass of it got answers
// (PassInput.ModelAnswered, which counts cached ones too) or the store holds an answer of this pass that was not
// cached. The watch is per attempt: an attempt that ends before the verdict leaves its refused cells recorded, and
// the next one counts afresh.
type refusals struct {
	mu      sync.Mutex
	settled bool
	// verdict is the class the model was given up with, "" while it is not.
	verdict string
	first   *llm.Error
	alike   int
}

// answered notes an answer of the endpoint.
func (r *refusals) answered() {
	r.mu.Lock()
	r.settled = true
	r.mu.Unlock()
}

// refused notes a permanent refusal (an HTTP status other than auth, quota or rate limit) and reports the class
// the model is given up with, "" while it is not. Once given up, every later refusal reports it again: the call
// that decided may be slow to stop the dispatch, and the calls landing meanwhile must not free their slots for
// more.
func (r *refusals) refused(e *llm.Error) string {
	if e.Status == 0 {
		return "" // not sent, or no answer: nothing the endpoint said
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settled {
		return r.verdict
	}
	switch {
	case e.Status == 404:
		r.settled, r.verdict = true, errclass.NotFound
		return r.verdict
	case r.first == nil:
		r.first, r.alike = e, 1
	case e.Status == r.first.Status && e.Code == r.first.Code && e.Message == r.first.Message:
		r.alike++
	default:
		r.settled = true // refused differently: each cell's own
		return ""
	}
	if r.alike < sameRefusals {
		return ""
	}
	r.settled, r.verdict = true, errclass.Rejected
	return r.verdict
}

// deadModel is the failure that gives up model m (models[idx]) for class (NotFound, Rejected) after e, with what
// to change; calledURL is where its calls went. It becomes the message of every cell the model leaves unsent.
func deadModel(spec *experiment.Spec, idx int, class string, e *llm.Error, calledURL string) *llm.Error {
	m := spec.Models[idx]
	said := fmt.Sprintf("HTTP %d", e.Status)
	if e.Code != "" {
		said += " " + e.Code
	}
	said += fmt.Sprintf(": %q", e.Message)
	var msg string
	if class == errclass.NotFound {
		msg = fmt.Sprintf("model %s: its calls to %s are answered %s, and none succeeded: no cell can be answered there; ", m.ID, calledURL, said)
		switch fix := experiment.WithAPIVersion(m.BaseURL); {
		case fix != "":
			msg += fmt.Sprintf("its base_url has no /v1, under which OpenAI-compatible servers serve their API: set models[%d].base_url to %s", idx, fix)
		case m.BaseURL == "":
			msg += fmt.Sprintf("check models[%d].name: %q must be a model the provider has", idx, m.Name)
		default:
			msg += fmt.Sprintf("check models[%d].base_url (the server's API root, e.g. http://localhost:11434/v1) and models[%d].name "+
				"(%q must be a model the server has)", idx, idx, m.Name)
		}
	} else {
		msg = fmt.Sprintf("model %s: its first %d calls were all refused alike (%s) and none succeeded, so every cell would be; ", m.ID, sameRefusals, said)
		a := spec.AnswerFor(m)
		switch {
		case a.Mode == experiment.AnswerJSONSchema:
			msg += fmt.Sprintf("the calls carry response_format json_schema (answer mode json_schema), which a server that cannot apply it "+
				"refuses every time (llama.cpp's under a chat template that does not take one): give model %s answer: {mode: text}, "+
				"or use a server and chat template that take json_schema", m.ID)
		case a.Logprobs:
			msg += fmt.Sprintf("the calls ask for logprobs (answer %s): if the server cannot return them, give model %s answer: {mode: samples}; "+
				"else change what its message names", a, m.ID)
		default:
			msg += fmt.Sprintf("change what the server's message names in models[%d] (params, name, answer) or on the server", idx)
		}
	}
	return &llm.Error{Class: errclass.Class(class), Code: e.Code, Message: msg + "; then run again with --retry-failed"}
}
