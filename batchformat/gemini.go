package batchformat

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

// Gemini's Batch API. A batch's input is a list of GenerateContentRequests, each with a key: inline in the
// create request ({"request": ..., "metadata": {"key": ...}}) while the whole create body stays under
// GeminiInlineMax, else a JSONL file of {"key": ..., "request": ...} lines uploaded through the Files API. The
// input silico digests and cuts into chunks is always the JSONL form (Line, Encode); batchapi.Gemini turns it into
// the inline form when it is small enough, so the digest of a chunk is the same however it is sent. Results come
// back the same way: inline in the batch (its inlinedResponses) or as a JSONL file of {"key": ..., "response": ...}
// or {"key": ..., "error": ...} lines.

// GeminiInlineMax is the largest create request that carries its requests inline; a larger batch's requests go
// in a file. Google's documentation sets the bound at 20 MB.
const GeminiInlineMax = 20 << 20

// The defaults of a Gemini model's batch.max_requests and batch.max_bytes. Google documents no bound on a
// batch's requests, and an input file of up to 2 GB: these are silico's, the OpenAI format's, so that a chunk's
// input, which a worker holds in memory while it submits it, stays the size it is for the other formats.
const (
	GeminiMaxRequests = 50_000
	GeminiMaxBytes    = 200 << 20
)

// geminiLine is one line of a Gemini batch's input file, the JSONL form of every Gemini batch's input.
type geminiLine struct {
	Key     string          `json:"key"`
	Request json.RawMessage `json:"request"`
}

// MetaDisplayName is the key of wire.BatchInfo.Metadata under which a Gemini batch's display name is given.
const MetaDisplayName = "display_name"

// displayPrefix starts the display name of every batch silico creates on Gemini.
const displayPrefix = "silico-"

// DisplayName is the display name of the Gemini batch of k whose input has the given digest: Gemini's batches
// carry no metadata, and their display name is what the listing returns of them, so it carries the key. The run
// and pass (long, and free text) stand by a digest of theirs; the chunk and round are readable; the input's digest
// (its first 32 hex digits) ends it. "silico-3f2a...-c0-r1-9be0...".
func (k Key) DisplayName(digest string) string {
	return k.displayStem() + digest[:min(32, len(digest))]
}

// displayStem is the display name without the input's digest. A try other than 0 stands before the round
// ("-c0-t1-r1-"), so that no stem is a prefix of another key's and the first try's names are as they always were.
func (k Key) displayStem() string {
	who := Digest([]byte(k.Run + "\x00" + k.Pass))
	try := ""
	if k.Try != 0 {
		try = fmt.Sprintf("t%d-", k.Try)
	}
	return fmt.Sprintf("%s%s-c%d-%sr%d-", displayPrefix, who[:16], k.Chunk, try, k.Round)
}

// NamesDisplay reports whether a Gemini batch's display name names k, whatever its input.
func (k Key) NamesDisplay(name string) bool { return strings.HasPrefix(name, k.displayStem()) }

// MatchesDisplay reports whether a Gemini batch's display name names k and an input of the given digest.
func (k Key) MatchesDisplay(name, digest string) bool { return name == k.DisplayName(digest) }

// int64String is an int64 that the API writes as a JSON string (proto3's JSON form of int64), or as a number.
type int64String int64

func (n *int64String) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("batch: count %s: %w", b, err)
	}
	*n = int64String(v)
	return nil
}

// GeminiBatch is a Gemini batch as create, get and list return it: a long-running operation whose metadata is
// the batch (GenerateContentBatch). Only what silico reads is here; the inline responses are streamed by
// ScanGeminiInline, never held in this value.
type GeminiBatch struct {
	Name     string `json:"name"`
	Done     bool   `json:"done"`
	Metadata struct {
		Name        string    `json:"name"`
		DisplayName string    `json:"displayName"`
		Model       string    `json:"model"`
		State       string    `json:"state"`
		CreateTime  time.Time `json:"createTime"`
		EndTime     time.Time `json:"endTime"`
		BatchStats  struct {
			RequestCount           int64String `json:"requestCount"`
			SuccessfulRequestCount int64String `json:"successfulRequestCount"`
			FailedRequestCount     int64String `json:"failedRequestCount"`
			PendingRequestCount    int64String `json:"pendingRequestCount"`
		} `json:"batchStats"`
		Output struct {
			ResponsesFile string `json:"responsesFile"`
		} `json:"output"`
		InputConfig struct {
			FileName string `json:"fileName"`
		} `json:"inputConfig"`
	} `json:"metadata"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Response *struct {
		ResponsesFile string `json:"responsesFile"`
	} `json:"response"`
}

// geminiState maps Gemini's batch states: the Gemini API's BATCH_STATE_* and the JOB_STATE_* names of Google's
// SDKs and Vertex AI's batch jobs, either of which a Gemini endpoint may send. A pending or queued batch is
// queued, nothing of it ran: validating, as OpenAI's batch is before it starts. A paused or updating job is not
// over: in progress. A job partly succeeded ended with what it answered in its results, as a completed batch
// does. The Gemini API has no cancelling state (a cancelled batch stays running until it is cancelled); Vertex
// AI's jobs have one.
var geminiState = map[string]wire.BatchStatus{
	"BATCH_STATE_PENDING":   wire.BatchStatusValidating,
	"BATCH_STATE_RUNNING":   wire.BatchStatusInProgress,
	"BATCH_STATE_SUCCEEDED": wire.BatchStatusCompleted,
	"BATCH_STATE_FAILED":    wire.BatchStatusFailed,
	"BATCH_STATE_CANCELLED": wire.BatchStatusCancelled,
	"BATCH_STATE_EXPIRED":   wire.BatchStatusExpired,

	"JOB_STATE_QUEUED":              wire.BatchStatusValidating,
	"JOB_STATE_PENDING":             wire.BatchStatusValidating,
	"JOB_STATE_RUNNING":             wire.BatchStatusInProgress,
	"JOB_STATE_PAUSED":              wire.BatchStatusInProgress,
	"JOB_STATE_UPDATING":            wire.BatchStatusInProgress,
	"JOB_STATE_CANCELLING":          wire.BatchStatusCancelling,
	"JOB_STATE_SUCCEEDED":           wire.BatchStatusCompleted,
	"JOB_STATE_PARTIALLY_SUCCEEDED": wire.BatchStatusCompleted,
	"JOB_STATE_FAILED":              wire.BatchStatusFailed,
	"JOB_STATE_CANCELLED":           wire.BatchStatusCancelled,
	"JOB_STATE_EXPIRED":             wire.BatchStatusExpired,
}

// FromGemini reads a Gemini batch. The id is the batch's resource name ("batches/..."), its display name is
// Metadata[MetaDisplayName], its uploaded input file (none when its requests went inline) InputFileID, a file of
// results ResponsesFile; a batch that failed as a whole gives its error in Errors. A state geminiState does not
// have (an unspecified one among them) is not guessed at while the operation runs: the batch is
// BatchStatusUnknown, its State the provider's word. Once the operation is done, it ended whatever its state: failed
// when the operation carries an error, else completed (its results say what ran).
func FromGemini(b GeminiBatch) (wire.BatchInfo, error) {
	md := b.Metadata
	name := b.Name
	if name == "" {
		name = md.Name
	}
	if name == "" {
		return wire.BatchInfo{}, errors.New("batch: a Gemini batch without a name")
	}
	st, ok := geminiState[md.State]
	s := md.BatchStats
	in := wire.BatchInfo{ID: name, Status: st, CreatedAt: md.CreateTime,
		Counts: wire.BatchCounts{Total: int(s.RequestCount), Succeeded: int(s.SuccessfulRequestCount),
			Errored: int(s.FailedRequestCount)},
		ResponsesFile: md.Output.ResponsesFile, InputFileID: md.InputConfig.FileName,
		Metadata: map[string]string{MetaDisplayName: md.DisplayName}}
	switch {
	case ok:
	case b.Done && b.Error != nil:
		in.Status = wire.BatchStatusFailed
	case b.Done:
		in.Status = wire.BatchStatusCompleted
	default:
		in.Status, in.State = wire.BatchStatusUnknown, cmp.Or(md.State, "(none)")
	}
	if in.ResponsesFile == "" && b.Response != nil {
		in.ResponsesFile = b.Response.ResponsesFile
	}
	if b.Error != nil {
		in.Errors = append(in.Errors, fmt.Sprintf("%d: %s", b.Error.Code, b.Error.Message))
	}
	return in, nil
}

// geminiStatus is a google.rpc.Status, as a result's failure is given: a canonical code (or, in some of Google's
// error objects, an HTTP status), a message and, in the HTTP form, the code's name.
type geminiStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// geminiResult is one result of a Gemini batch: a line of its responses file, or an inline response (whose key
// is in its metadata). Google's guide says each is "either a GenerateContentResponse or a status object" without
// naming the status's field, so a failure is read wherever it may stand: under "error" (the inline responses'
// field, and what the API writes), under "status", or as a google.rpc.Status at the top level of the line
// (code and message beside the key).
type geminiResult struct {
	Key      string `json:"key"`
	Metadata struct {
		Key string `json:"key"`
	} `json:"metadata"`
	Response json.RawMessage `json:"response"`
	Error    *geminiStatus   `json:"error"`
	// Status is a status object, or, in a top-level status in its HTTP form, the code's name.
	Status  json.RawMessage `json:"status"`
	Code    *int            `json:"code"`
	Message string          `json:"message"`
}

// failure is the status the result carries, in whichever of its shapes (nil when none). A status of code 0 (OK)
// is no failure.
func (l geminiResult) failure() (*geminiStatus, error) {
	var st *geminiStatus
	switch {
	case l.Error != nil:
		st = l.Error
	case len(l.Status) > 0 && l.Status[0] == '{':
		st = &geminiStatus{}
		if err := json.Unmarshal(l.Status, st); err != nil {
			return nil, fmt.Errorf("status: %w", err)
		}
	case l.Code != nil:
		st = &geminiStatus{Code: *l.Code, Message: l.Message}
		if len(l.Status) > 0 && string(l.Status) != "null" {
			if err := json.Unmarshal(l.Status, &st.Status); err != nil {
				return nil, fmt.Errorf("status: %w", err)
			}
		}
	}
	if st == nil || (st.Code == 0 && st.Status == "") {
		return nil, nil
	}
	return st, nil
}

// geminiNotRun are the canonical codes of results whose request never ran: cancelled with its batch, or out of
// time before it ran.
var geminiNotRun = map[int]string{1: "cancelled", 4: "deadline_exceeded"}

// ParseGemini reads one result of a Gemini batch, a line of its responses file or one of its inline responses:
// a response is Succeeded (Body is the GenerateContentResponse, read with llm.GeminiAnswer); a status (under
// "error", under "status", or at the top level) is Errored, classified by llm.GeminiError from its canonical code
// and name, or NotRun when its code says the request never ran (CANCELLED, DEADLINE_EXCEEDED). redact is applied
// to every text of an error (nil: none). A result without a key cannot be matched to a request, and is an error,
// as is one with neither a response nor a status.
func ParseGemini(line []byte, redact func(string) string) (Result, error) {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	var l geminiResult
	if err := json.Unmarshal(line, &l); err != nil {
		return Result{}, fmt.Errorf("batch: result line: %w", err)
	}
	key := cmp.Or(l.Key, l.Metadata.Key)
	if key == "" {
		return Result{}, errors.New("batch: result has no key")
	}
	st, err := l.failure()
	if err != nil {
		return Result{}, fmt.Errorf("batch: result %s: %w", key, err)
	}
	r := Result{CustomID: key}
	switch {
	case st != nil && geminiNotRun[st.Code] != "":
		r.Outcome, r.Reason = NotRun, geminiNotRun[st.Code]
	case st != nil:
		// A code of 100 or more is an HTTP status, which some of Google's error objects carry instead.
		e := llm.GeminiError(st.Code, st.Code < 100, st.Status, st.Message)
		e.Code, e.Message = redact(e.Code), redact(e.Message)
		r.Outcome, r.Err = Errored, e
	case len(l.Response) == 0 || string(l.Response) == "null":
		return Result{}, fmt.Errorf("batch: result %s has neither a response nor a status", key)
	default:
		r.Outcome, r.Body = Succeeded, l.Response
	}
	return r, nil
}

// ScanGeminiInline streams the inline responses of a Gemini batch, the JSON of its operation as the API's get
// returns it, to fn one by one, parsed by ParseGemini (one it cannot read as Unreadable, as Scan gives a line);
// the rest of the object is skipped. The responses are read
// wherever the operation gives them (its response's inlinedResponses, its metadata's output): a response given in
// both is given to fn twice, which a caller that counts each key once does not mind. It holds one response at a
// time, so an inline batch of any size streams through.
func ScanGeminiInline(r io.Reader, redact func(string) string, fn func(Result) error) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := scanInlineValue(dec, false, redact, fn); err != nil {
		return fmt.Errorf("batch: inline responses: %w", err)
	}
	return nil
}

// inlineRoute are the keys of the objects on the way to the inline responses.
var inlineRoute = map[string]bool{"response": true, "metadata": true, "output": true, "inlinedResponses": true}

// scanInlineValue reads the next value of dec: an object is walked along inlineRoute, an array under
// inlinedResponses (list) has its elements parsed, anything else is skipped.
func scanInlineValue(dec *json.Decoder, list bool, redact func(string) string, fn func(Result) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			if !inlineRoute[k] {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
				continue
			}
			if err := scanInlineValue(dec, k == "inlinedResponses", redact, fn); err != nil {
				return err
			}
		}
		_, err := dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if !list {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
				continue
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			res, err := ParseGemini(raw, redact)
			if err != nil {
				res = unreadable(raw, err, redact)
			}
			if err := fn(res); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	return nil // a scalar, already read
}

// GeminiInline turns the JSONL input of a Gemini batch (Encode's) into the requests of an inline create:
// {"requests": [{"request": ..., "metadata": {"key": ...}}, ...]}, the value of the batch's
// inputConfig.requests. The requests' bytes are kept as they are.
func GeminiInline(input []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"requests":[`)
	n := 0
	for len(input) > 0 {
		line := input
		if i := bytes.IndexByte(input, '\n'); i >= 0 {
			line, input = input[:i], input[i+1:]
		} else {
			input = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var l geminiLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("batch: input line %d: %w", n+1, err)
		}
		key, err := json.Marshal(l.Key)
		if err != nil {
			return nil, fmt.Errorf("batch: input line %d: %w", n+1, err)
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"request":`)
		buf.Write(l.Request)
		buf.WriteString(`,"metadata":{"key":`)
		buf.Write(key)
		buf.WriteString(`}}`)
		n++
	}
	buf.WriteString(`]}`)
	return buf.Bytes(), nil
}
