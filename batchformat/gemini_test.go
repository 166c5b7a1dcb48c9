package batchformat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/wire"
)

func TestGeminiLineAndInline(t *testing.T) {
	body := json.RawMessage(`{"contents":[{"role":"user","parts":[{"text":"a<b"}]}]}`)
	l1, err := Line(wire.FormatGemini, EndpointChat, "sim/1/3/nurse", body)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"key":"sim/1/3/nurse","request":` + string(body) + "}\n"; string(l1) != want {
		t.Errorf("line %s, want %s", l1, want)
	}
	l2, _ := Line(wire.FormatGemini, EndpointChat, "k2", json.RawMessage(`{"contents":[]}`))
	input := Encode(wire.FormatGemini, [][]byte{l1, l2})
	if string(input) != string(l1)+string(l2) {
		t.Errorf("input %s: want the JSONL lines", input)
	}
	inline, err := GeminiInline(input)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"requests":[{"request":` + string(body) + `,"metadata":{"key":"sim/1/3/nurse"}},{"request":{"contents":[]},"metadata":{"key":"k2"}}]}`
	if string(inline) != want {
		t.Errorf("inline %s\nwant %s", inline, want)
	}
}

func TestGeminiDisplayName(t *testing.T) {
	k := Key{Run: "run-1", Pass: "m/1/0", Chunk: 2, Round: 1}
	d := Digest([]byte("input"))
	name := k.DisplayName(d)
	if !strings.HasPrefix(name, "silico-") || !strings.Contains(name, "-c2-r1-") || !strings.HasSuffix(name, d[:32]) {
		t.Errorf("display name %q", name)
	}
	if !k.NamesDisplay(name) || !k.MatchesDisplay(name, d) || k.MatchesDisplay(name, Digest([]byte("other"))) {
		t.Errorf("%q does not name its key and digest alone", name)
	}
	for _, o := range []Key{{Run: "run-2", Pass: "m/1/0", Chunk: 2, Round: 1}, {Run: "run-1", Pass: "m/1/0", Chunk: 2, Round: 0},
		{Run: "run-1", Pass: "m/1/0", Chunk: 22, Round: 1}, {Run: "run-1", Pass: "m/2/0", Chunk: 2, Round: 1},
		{Run: "run-1", Pass: "m/1/0", Chunk: 2, Round: 1, Try: 1}} {
		if o.NamesDisplay(name) {
			t.Errorf("%+v names %q, the batch of %+v", o, name, k)
		}
		if n := o.DisplayName(d); k.NamesDisplay(n) {
			t.Errorf("%+v names %q, the batch of %+v", k, n, o)
		}
	}
}

func TestParseGemini(t *testing.T) {
	redact := func(s string) string { return strings.ReplaceAll(s, "KEY123", "[redacted]") }
	cases := []struct {
		line    string
		outcome Outcome
		class   errclass.Class
		reason  string
	}{
		{`{"key":"a","response":{"candidates":[]}}`, Succeeded, "", ""},
		{`{"metadata":{"key":"a"},"response":{"candidates":[]}}`, Succeeded, "", ""},
		{`{"key":"a","error":{"code":3,"message":"bad KEY123","status":"INVALID_ARGUMENT"}}`, Errored, errclass.InvalidRequest, ""},
		{`{"key":"a","error":{"code":13,"message":"internal","status":"INTERNAL"}}`, Errored, errclass.ServerError, ""},
		{`{"key":"a","error":{"code":8,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`, Errored, errclass.RateLimited, ""},
		{`{"key":"a","error":{"code":400,"message":"an HTTP status","status":"INVALID_ARGUMENT"}}`, Errored, errclass.InvalidRequest, ""},
		{`{"key":"a","error":{"code":1,"message":"cancelled","status":"CANCELLED"}}`, NotRun, "", "cancelled"},
		{`{"key":"a","error":{"code":4,"message":"late","status":"DEADLINE_EXCEEDED"}}`, NotRun, "", "deadline_exceeded"},
		// Google's guide names no field for a line's status: under "status", and as a google.rpc.Status at the
		// top level of the line, it is read as under "error".
		{`{"key":"a","status":{"code":3,"message":"bad KEY123","details":[]}}`, Errored, errclass.InvalidRequest, ""},
		{`{"key":"a","status":{"code":13,"message":"internal","status":"INTERNAL"}}`, Errored, errclass.ServerError, ""},
		{`{"key":"a","status":{"code":4,"message":"late"}}`, NotRun, "", "deadline_exceeded"},
		{`{"key":"a","code":3,"message":"bad KEY123","details":[]}`, Errored, errclass.InvalidRequest, ""},
		{`{"key":"a","code":8,"message":"slow down","status":"RESOURCE_EXHAUSTED"}`, Errored, errclass.RateLimited, ""},
		{`{"key":"a","code":1,"message":"cancelled"}`, NotRun, "", "cancelled"},
		{`{"metadata":{"key":"a"},"status":{"code":3,"message":"bad"}}`, Errored, errclass.InvalidRequest, ""},
		// A status of code 0 (OK) beside the response is no failure.
		{`{"key":"a","status":{"code":0},"response":{"candidates":[]}}`, Succeeded, "", ""},
	}
	for _, c := range cases {
		r, err := ParseGemini([]byte(c.line), redact)
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if r.CustomID != "a" || r.Outcome != c.outcome || r.Reason != c.reason || (c.class != "" && r.Err.Class != c.class) {
			t.Errorf("%s: %+v (err %+v)", c.line, r, r.Err)
		}
		if r.Err != nil && strings.Contains(r.Err.Message, "KEY123") {
			t.Errorf("%s: message %q not redacted", c.line, r.Err.Message)
		}
	}
	for _, bad := range []string{`{"response":{}}`, `{"key":"a"}`, `{"key":`, `{"key":"a","status":{"code":0}}`, `{"key":"a","status":"x"}`} {
		if _, err := ParseGemini([]byte(bad), nil); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestFromGemini(t *testing.T) {
	raw := `{"name":"batches/b1","metadata":{"displayName":"silico-x","state":"BATCH_STATE_SUCCEEDED",
		"createTime":"2026-03-01T12:00:00Z","batchStats":{"requestCount":"10","successfulRequestCount":"7","failedRequestCount":3},
		"output":{"responsesFile":"files/r1"}},"done":true}`
	var b GeminiBatch
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		t.Fatal(err)
	}
	in, err := FromGemini(b)
	if err != nil {
		t.Fatal(err)
	}
	want := wire.BatchInfo{ID: "batches/b1", Status: wire.BatchStatusCompleted, CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Counts: wire.BatchCounts{Total: 10, Succeeded: 7, Errored: 3}, ResponsesFile: "files/r1",
		Metadata: map[string]string{MetaDisplayName: "silico-x"}}
	if !in.CreatedAt.Equal(want.CreatedAt) || in.ID != want.ID || in.Status != want.Status || in.Counts != want.Counts ||
		in.ResponsesFile != want.ResponsesFile || in.Metadata[MetaDisplayName] != "silico-x" {
		t.Errorf("info %+v\nwant %+v", in, want)
	}
	for st, ws := range map[string]wire.BatchStatus{"BATCH_STATE_PENDING": wire.BatchStatusValidating,
		"BATCH_STATE_RUNNING": wire.BatchStatusInProgress, "BATCH_STATE_FAILED": wire.BatchStatusFailed,
		"BATCH_STATE_CANCELLED": wire.BatchStatusCancelled, "BATCH_STATE_EXPIRED": wire.BatchStatusExpired} {
		b.Metadata.State = st
		if in, err := FromGemini(b); err != nil || in.Status != ws {
			t.Errorf("%s: %s, %v; want %s", st, in.Status, err, ws)
		}
	}
	// The JOB_STATE_* names of Google's SDKs and Vertex AI are Gemini's too.
	for st, ws := range map[string]wire.BatchStatus{"JOB_STATE_QUEUED": wire.BatchStatusValidating,
		"JOB_STATE_PENDING": wire.BatchStatusValidating, "JOB_STATE_RUNNING": wire.BatchStatusInProgress,
		"JOB_STATE_PAUSED": wire.BatchStatusInProgress, "JOB_STATE_UPDATING": wire.BatchStatusInProgress,
		"JOB_STATE_CANCELLING": wire.BatchStatusCancelling, "JOB_STATE_SUCCEEDED": wire.BatchStatusCompleted,
		"JOB_STATE_PARTIALLY_SUCCEEDED": wire.BatchStatusCompleted, "JOB_STATE_FAILED": wire.BatchStatusFailed,
		"JOB_STATE_CANCELLED": wire.BatchStatusCancelled, "JOB_STATE_EXPIRED": wire.BatchStatusExpired} {
		b.Metadata.State = st
		if in, err := FromGemini(b); err != nil || in.Status != ws || in.State != "" {
			t.Errorf("%s: %+v, %v; want %s", st, in, err, ws)
		}
	}
	// A state no one named is no guess while the operation runs; once it is done, the batch ended, failed when
	// the operation carries an error.
	b.Metadata.State, b.Done = "BATCH_STATE_UNSPECIFIED", false
	if in, err := FromGemini(b); err != nil || in.Status != wire.BatchStatusUnknown || in.State != "BATCH_STATE_UNSPECIFIED" {
		t.Errorf("an unknown state, running: %+v, %v", in, err)
	}
	b.Done = true
	if in, err := FromGemini(b); err != nil || in.Status != wire.BatchStatusCompleted || in.State != "" {
		t.Errorf("an unknown state, done: %+v, %v", in, err)
	}
	b.Error = &struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{Code: 13, Message: "boom"}
	if in, err := FromGemini(b); err != nil || in.Status != wire.BatchStatusFailed {
		t.Errorf("an unknown state, done with an error: %+v, %v", in, err)
	}
	// A batch read from a file names it.
	b.Metadata.InputConfig.FileName = "files/in1"
	if in, _ := FromGemini(b); in.InputFileID != "files/in1" {
		t.Errorf("input file %q", in.InputFileID)
	}
}

func TestScanGeminiInline(t *testing.T) {
	op := `{"name":"batches/b1","metadata":{"@type":"x","displayName":"d","state":"BATCH_STATE_SUCCEEDED",
		"batchStats":{"requestCount":"3"}},"done":true,"response":{"@type":"y","inlinedResponses":{"inlinedResponses":[
		{"response":{"candidates":[{"content":{"parts":[{"text":"1"}]}}]},"metadata":{"key":"a"}},
		{"error":{"code":3,"message":"no","status":"INVALID_ARGUMENT"},"metadata":{"key":"b"}},
		{"response":{"candidates":[]},"metadata":{"key":"c"}}]}}}`
	var got []Result
	if err := ScanGeminiInline(strings.NewReader(op), nil, func(r Result) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].CustomID != "a" || got[0].Outcome != Succeeded || got[1].Outcome != Errored ||
		got[1].Err.Class != errclass.InvalidRequest || got[2].CustomID != "c" {
		t.Errorf("results %+v", got)
	}
	if !strings.Contains(string(got[0].Body), `"text":"1"`) {
		t.Errorf("body %s", got[0].Body)
	}
	// A response that cannot be read is Unreadable, with its key, and the others are read.
	odd := strings.Replace(op, `{"error":{"code":3,"message":"no","status":"INVALID_ARGUMENT"},"metadata":{"key":"b"}}`,
		`{"metadata":{"key":"b"},"outcome":"?"}`, 1)
	var oddGot []Result
	if err := ScanGeminiInline(strings.NewReader(odd), nil, func(r Result) error { oddGot = append(oddGot, r); return nil }); err != nil ||
		len(oddGot) != 3 || oddGot[1].Outcome != Unreadable || oddGot[1].CustomID != "b" || oddGot[2].Outcome != Succeeded {
		t.Errorf("an odd inline response: %+v, %v", oddGot, err)
	}
	// A batch object cut short is an error, after the responses that came whole.
	got = nil
	err := ScanGeminiInline(strings.NewReader(op[:len(op)-60]), nil, func(r Result) error { got = append(got, r); return nil })
	if err == nil || len(got) != 2 {
		t.Errorf("cut object: %d results, %v; want 2 and an error", len(got), err)
	}
}
