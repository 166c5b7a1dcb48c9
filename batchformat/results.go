package batchformat

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

// Outcome is what became of one request of a batch.
type Outcome string

// The outcomes.
const (
	// Succeeded: the endpoint answered 200; Result.Body is its answer.
	Succeeded Outcome = "succeeded"
	// Errored: the request ran and failed; Result.Err says how, classified as a synchronous call's error is.
	Errored Outcome = "errored"
	// NotRun: the provider never ran the request (the batch expired or was cancelled first, or the request timed
	// out in the queue); Result.Reason is the provider's word. It may be submitted again.
	NotRun Outcome = "not_run"
	// Unreadable: the result line could not be read (not JSON, no answer and no error in any shape the format
	// documents, a type the format does not have); Result.Reason says why and quotes the line's start. CustomID is
	// the request the line names, or empty when it names none that can be read. One such line never stops the
	// reading of the others.
	Unreadable Outcome = "unreadable"
)

// Result is one result line of a batch, either format.
type Result struct {
	// CustomID is the request's custom_id.
	CustomID string
	Outcome  Outcome
	// Body is the endpoint's answer when Succeeded: a chat completion or embeddings response (OpenAI), a message
	// (Anthropic), a GenerateContentResponse (Gemini). Read it with llm.ChatAnswer, llm.EmbedAnswer,
	// llm.AnthropicAnswer or llm.GeminiAnswer, then redact the text.
	Body json.RawMessage
	// Err is the failure when Errored, its Code and Message already redacted.
	Err *llm.Error
	// Reason is the provider's reason when NotRun: batch_expired, batch_cancelled, request_timeout (OpenAI),
	// expired, canceled (Anthropic), cancelled, deadline_exceeded (Gemini); when Unreadable, why the line could
	// not be read.
	Reason string
}

// openAIResultLine is a line of an OpenAI batch's output or error file.
type openAIResultLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// openAINotRun are the error codes of lines the provider never ran.
var openAINotRun = map[string]bool{"batch_expired": true, "batch_cancelled": true, "request_timeout": true}

// ParseOpenAI reads one line of an OpenAI batch's output or error file. redact is applied to every text of an
// error (nil: none). A line whose response.status_code is not 200 is Errored even though its "error" is null:
// that is how the API reports an HTTP failure of one request (a 400 context_length_exceeded, a 500), with the
// provider's error object under response.body.error; it is classified exactly as llm.Classify classifies the
// same response of a synchronous call. A line that is not JSON or has no custom_id is an error: it cannot be
// matched to a request.
func ParseOpenAI(line []byte, redact func(string) string) (Result, error) {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	var l openAIResultLine
	if err := json.Unmarshal(line, &l); err != nil {
		return Result{}, fmt.Errorf("batch: result line: %w", err)
	}
	if l.CustomID == "" {
		return Result{}, fmt.Errorf("batch: result line %q has no custom_id", l.ID)
	}
	r := Result{CustomID: l.CustomID}
	switch {
	case l.Error != nil && openAINotRun[l.Error.Code]:
		r.Outcome, r.Reason = NotRun, l.Error.Code
	case l.Error != nil:
		// A line the provider refused without running it (a malformed line, a wrong model). Unknown codes are
		// taken as transient, as llm.Classify takes unknown failures: retrying costs only a bounded number of tries.
		r.Outcome = Errored
		r.Err = &llm.Error{Class: errclass.Transport, Code: redact(l.Error.Code), Message: redact(l.Error.Message)}
		if l.Response != nil && l.Response.StatusCode >= 400 {
			r.Err = statusError(l.Response.StatusCode, l.Response.Body, redact)
		}
	case l.Response == nil:
		return Result{}, fmt.Errorf("batch: result line %s has neither response nor error", l.CustomID)
	case l.Response.StatusCode != http.StatusOK:
		r.Outcome = Errored
		r.Err = statusError(l.Response.StatusCode, l.Response.Body, redact)
	default:
		r.Outcome, r.Body = Succeeded, l.Response.Body
	}
	return r, nil
}

// statusError classifies a response of status with body as llm.Classify classifies the error go-openai returns
// for the same response of a synchronous call: a JSON error object is an APIError, anything else a RequestError.
func statusError(status int, body json.RawMessage, redact func(string) string) *llm.Error {
	// Redacted before decoding, so that no error in the result's Unwrap chain holds the key either. The
	// replacement is valid inside a JSON string, as a key never needs escaping.
	body = json.RawMessage(redact(string(body)))
	var err error
	var er openai.ErrorResponse
	if json.Unmarshal(body, &er) == nil && er.Error != nil {
		er.Error.HTTPStatusCode = status
		err = er.Error
	} else {
		err = &openai.RequestError{HTTPStatusCode: status, Body: body, Err: errors.New("error, status code: " +
			http.StatusText(status))}
	}
	return llm.Classify(err)
}

// anthropicResultLine is a line of an Anthropic batch's results.
type anthropicResultLine struct {
	CustomID string `json:"custom_id"`
	Result   struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
		// Error is an error response: {"type": "error", "error": {"type": ..., "message": ...}}.
		Error *struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"error"`
	} `json:"result"`
}

// ParseAnthropic reads one line of an Anthropic batch's results: succeeded (Body is the message), errored
// (classified by llm.AnthropicError from the error's type, the status its type is sent with), canceled and
// expired (NotRun). redact is applied to every text of an error (nil: none).
func ParseAnthropic(line []byte, redact func(string) string) (Result, error) {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	var l anthropicResultLine
	if err := json.Unmarshal(line, &l); err != nil {
		return Result{}, fmt.Errorf("batch: result line: %w", err)
	}
	if l.CustomID == "" {
		return Result{}, errors.New("batch: result line has no custom_id")
	}
	r := Result{CustomID: l.CustomID}
	switch l.Result.Type {
	case "succeeded":
		if len(l.Result.Message) == 0 {
			return Result{}, fmt.Errorf("batch: result %s succeeded without a message", l.CustomID)
		}
		r.Outcome, r.Body = Succeeded, l.Result.Message
	case "errored":
		r.Outcome = Errored
		typ, msg := "", ""
		if e := l.Result.Error; e != nil {
			typ, msg = e.Error.Type, e.Error.Message
		}
		e := llm.AnthropicError(0, typ, msg)
		e.Code, e.Message = redact(e.Code), redact(e.Message)
		r.Err = e
	case "canceled", "expired":
		r.Outcome, r.Reason = NotRun, l.Result.Type
	default:
		return Result{}, fmt.Errorf("batch: result %s has type %q (want succeeded, errored, canceled or expired)",
			l.CustomID, l.Result.Type)
	}
	return r, nil
}

// maxLine bounds one result line: a request's answer, far below an input file's 200 MB.
const maxLine = 64 << 20

// Scan reads the JSONL results in r line by line with the parser of format f and calls fn for each, stopping at
// the first error of fn or of the reading itself. Blank lines are skipped. A line its parser cannot read is given
// to fn as Unreadable (unreadable), with the request it names when one can be read: one odd line never keeps the
// others from being recorded. It holds one line at a time, so a result file of any size streams through.
func Scan(f wire.BatchFormat, r io.Reader, redact func(string) string, fn func(Result) error) error {
	parse := ParseOpenAI
	switch f {
	case wire.FormatAnthropic:
		parse = ParseAnthropic
	case wire.FormatGemini:
		parse = ParseGemini
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		res, err := parse(line, redact)
		if err != nil {
			res = unreadable(line, fmt.Errorf("line %d: %w", n, err), redact)
		}
		if err := fn(res); err != nil {
			return err
		}
	}
	return sc.Err()
}

// quoteMax is how much of an unreadable line its Result.Reason quotes.
const quoteMax = 160

// unreadable is the Result of a line that could not be read because of err: the request it names, if any of the
// formats' keys (custom_id, key, metadata.key) can be read from it, and err with the line's start quoted, redacted.
func unreadable(line []byte, err error, redact func(string) string) Result {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	var named struct {
		CustomID string `json:"custom_id"`
		Key      string `json:"key"`
		Metadata struct {
			Key string `json:"key"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(line, &named)                                          // a line that is no JSON object names no request
	quote := strings.ToValidUTF8(string(line[:min(len(line), quoteMax)]), "") // a rune cut in half goes
	if len(line) > quoteMax {
		quote += "…"
	}
	return Result{CustomID: cmp.Or(named.CustomID, named.Key, named.Metadata.Key), Outcome: Unreadable,
		Reason: redact(fmt.Sprintf("%v: %s", err, quote))}
}
