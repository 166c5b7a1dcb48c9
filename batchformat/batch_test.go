package batchformat

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

func chatBody(t *testing.T) json.RawMessage {
	t.Helper()
	zero := 0.0
	b, err := llm.ChatBody(llm.Request{Model: "gpt-4o-mini", Seed: 1, Params: experiment.Params{Temperature: &zero},
		Messages: []experiment.Message{{Role: "user", Content: "Rate <this> & that"}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLine(t *testing.T) {
	body := chatBody(t)
	line, err := Line(wire.FormatOpenAI, EndpointChat, "sim/1/3/nurse", body)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"custom_id":"sim/1/3/nurse","method":"POST","url":"/v1/chat/completions","body":` + string(body) + "}\n"
	if string(line) != want {
		t.Errorf("OpenAI line:\n got %s\nwant %s", line, want)
	}
	// The documented shape, read back.
	var l struct {
		CustomID, Method, URL string
		Body                  json.RawMessage
	}
	if err := json.Unmarshal(line, &l); err != nil || l.Method != "POST" || !bytes.Equal(l.Body, body) {
		t.Errorf("line reads back as %+v, %v; want POST and the body unchanged", l, err)
	}

	aline, err := Line(wire.FormatAnthropic, EndpointChat, "sim_1-x", json.RawMessage(`{"model":"m","max_tokens":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"custom_id":"sim_1-x","params":{"model":"m","max_tokens":1}}`; string(aline) != want {
		t.Errorf("Anthropic request:\n got %s\nwant %s", aline, want)
	}

	bad := []struct {
		f    wire.BatchFormat
		id   string
		body string
	}{
		{wire.FormatOpenAI, "", `{}`},
		{wire.FormatOpenAI, "a", `{`},
		{wire.FormatAnthropic, "sim/1", `{}`},
		{wire.FormatAnthropic, strings.Repeat("a", 65), `{}`},
		{wire.BatchFormat("bedrock"), "a", `{}`},
	}
	for _, b := range bad {
		if _, err := Line(b.f, EndpointChat, b.id, json.RawMessage(b.body)); err == nil {
			t.Errorf("Line(%s, %q, %s): no error", b.f, b.id, b.body)
		}
	}
}

func TestEncode(t *testing.T) {
	lines := [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)}
	if got := string(Encode(wire.FormatAnthropic, lines)); got != `{"requests":[{"a":1},{"b":2}]}` {
		t.Errorf("Anthropic body %s", got)
	}
	ol := [][]byte{[]byte("{\"a\":1}\n"), []byte("{\"b\":2}\n")}
	if got := string(Encode(wire.FormatOpenAI, ol)); got != "{\"a\":1}\n{\"b\":2}\n" {
		t.Errorf("OpenAI file %q", got)
	}
	if got := string(Encode(wire.FormatAnthropic, nil)); got != `{"requests":[]}` {
		t.Errorf("empty Anthropic body %s", got)
	}
}

var anthropicIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestSafeID(t *testing.T) {
	for _, id := range []string{"gpt_1_3_nurse", "a-b", strings.Repeat("x", 64)} {
		if got := SafeID(id); got != id {
			t.Errorf("SafeID(%q) = %q, want it unchanged", id, got)
		}
	}
	for _, id := range []string{"sim/1/3/nurse", "gpt 4/1/é/ü", strings.Repeat("y", 65), strings.Repeat("z/", 80), "/"} {
		got := SafeID(id)
		if !anthropicIDPattern.MatchString(got) {
			t.Errorf("SafeID(%q) = %q: not 1-64 characters of [A-Za-z0-9_-]", id, got)
		}
		if got != SafeID(id) {
			t.Errorf("SafeID(%q) is not deterministic", id)
		}
	}
	if got := SafeID("sim/1/3/nurse"); !strings.HasPrefix(got, "sim_1_3_nurse-") {
		t.Errorf("SafeID(sim/1/3/nurse) = %q, want the readable prefix sim_1_3_nurse-", got)
	}
	if SafeID("a/b") == SafeID("a_b/") || SafeID("a/b") == SafeID("a b") {
		t.Error("two ids with the same sanitised text map to the same custom_id")
	}
}

func TestCustomIDs(t *testing.T) {
	cells := []string{"m/1/a/p", "m/1/b/p"}
	got, err := CustomIDs(wire.FormatOpenAI, cells)
	if err != nil || got[0] != cells[0] || got[1] != cells[1] {
		t.Errorf("OpenAI custom ids %v, %v; want the cell ids", got, err)
	}
	got, err = CustomIDs(wire.FormatAnthropic, cells)
	if err != nil || got[0] != SafeID(cells[0]) || got[1] != SafeID(cells[1]) {
		t.Errorf("Anthropic custom ids %v, %v; want SafeID of each", got, err)
	}
	if _, err := CustomIDs(wire.FormatOpenAI, []string{"a", "a"}); err == nil {
		t.Error("a repeated cell id: no error")
	}
	// A valid id equal to another's mapped form.
	if _, err := CustomIDs(wire.FormatAnthropic, []string{"a/b", SafeID("a/b")}); err == nil {
		t.Error("two cells with one Anthropic custom_id: no error")
	}
	if _, err := CustomIDs(wire.FormatOpenAI, []string{""}); err == nil {
		t.Error("an empty cell id: no error")
	}
}

func items(n, size int) []Item {
	out := make([]Item, n)
	for i := range out {
		out[i] = Item{Bytes: size}
	}
	return out
}

func TestSplitCounts(t *testing.T) {
	tests := []struct {
		name  string
		f     wire.BatchFormat
		items []Item
		lim   Limits
		want  []int // requests per chunk
	}{
		{"120,000 cells, OpenAI", wire.FormatOpenAI, items(120_000, 300), DefaultLimits(wire.FormatOpenAI, EndpointChat), []int{50_000, 50_000, 20_000}},
		{"120,000 cells, Anthropic", wire.FormatAnthropic, items(120_000, 300), DefaultLimits(wire.FormatAnthropic, EndpointChat), []int{100_000, 20_000}},
		{"exactly full", wire.FormatOpenAI, items(4, 10), Limits{MaxRequests: 2, MaxBytes: 1 << 20}, []int{2, 2}},
		{"bytes bind first", wire.FormatOpenAI, items(10, 100), Limits{MaxRequests: 50, MaxBytes: 350}, []int{3, 3, 3, 1}},
		// Anthropic: 15 bytes of envelope and a comma between requests: 15+100+1+100 = 216 fits 230, a third does not.
		{"Anthropic envelope", wire.FormatAnthropic, items(5, 100), Limits{MaxRequests: 50, MaxBytes: 230}, []int{2, 2, 1}},
		{"embedding inputs", wire.FormatOpenAI, []Item{{10, 30}, {10, 30}, {10, 10}, {10, 40}}, Limits{MaxRequests: 50, MaxBytes: 1 << 20, MaxInputs: 50}, []int{1, 2, 1}},
		{"nothing", wire.FormatOpenAI, nil, DefaultLimits(wire.FormatOpenAI, EndpointChat), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := Split(tt.f, tt.items, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			next := 0
			for _, c := range chunks {
				if c.Start != next {
					t.Errorf("chunk %+v starts at %d, want %d (chunks are consecutive)", c, c.Start, next)
				}
				next = c.End
				got = append(got, c.End-c.Start)
				if c.Bytes > tt.lim.MaxBytes {
					t.Errorf("chunk %+v is over max_bytes %d", c, tt.lim.MaxBytes)
				}
			}
			if next != len(tt.items) {
				t.Errorf("chunks cover %d of %d items", next, len(tt.items))
			}
			if !equalInts(got, tt.want) {
				t.Errorf("requests per chunk %v, want %v", got, tt.want)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSplitBytesAreEncodedBytes holds Chunk.Bytes to the length of the input Encode writes, for real lines of
// different sizes, in both formats, so max_bytes bounds what is uploaded.
func TestSplitBytesAreEncodedBytes(t *testing.T) {
	for _, f := range []wire.BatchFormat{wire.FormatOpenAI, wire.FormatAnthropic} {
		var lines [][]byte
		var its []Item
		for i := range 200 {
			body, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 1, "text": strings.Repeat("w", i*7%300)})
			l, err := Line(f, EndpointChat, SafeID("m/1/"+string(rune('a'+i%26))+"/"+strings.Repeat("p", i%5)+"/"+itoa(i)), body)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
			its = append(its, Item{Bytes: len(l)})
		}
		lim := Limits{MaxRequests: 1000, MaxBytes: 4000}
		chunks, err := Split(f, its, lim)
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) < 2 {
			t.Fatalf("%s: %d chunks; the test wants several", f, len(chunks))
		}
		for _, c := range chunks {
			n := int64(len(Encode(f, lines[c.Start:c.End])))
			if n != c.Bytes || n > lim.MaxBytes {
				t.Errorf("%s chunk %d-%d: Bytes %d, encoded %d, max %d", f, c.Start, c.End, c.Bytes, n, lim.MaxBytes)
			}
			// Could the next line have joined? Then the cut was early.
			if c.End < len(lines) && int64(len(Encode(f, lines[c.Start:c.End+1]))) <= lim.MaxBytes && c.End-c.Start < lim.MaxRequests {
				t.Errorf("%s chunk %d-%d was cut while the next request still fit", f, c.Start, c.End)
			}
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestSplitErrors(t *testing.T) {
	lim := Limits{MaxRequests: 10, MaxBytes: 100, MaxInputs: 5}
	bad := map[string][]Item{
		"too large":     {{Bytes: 50}, {Bytes: 101}},
		"too many":      {{Bytes: 10, Inputs: 6}},
		"empty request": {{Bytes: 0}},
	}
	for name, its := range bad {
		if _, err := Split(wire.FormatOpenAI, its, lim); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// An Anthropic request that fits 100 bytes alone but not with the envelope.
	if _, err := Split(wire.FormatAnthropic, []Item{{Bytes: 90}}, lim); err == nil {
		t.Error("Anthropic request larger than max_bytes with its envelope: no error")
	}
	if _, err := Split(wire.FormatOpenAI, nil, Limits{}); err == nil {
		t.Error("zero limits: no error")
	}
}

const testKey = "sk-test-SECRETSECRETSECRET1234"

func redact(s string) string { return strings.ReplaceAll(s, testKey, "[REDACTED]") }

func TestParseOpenAI(t *testing.T) {
	tests := []struct {
		name       string
		line       string
		outcome    Outcome
		class      errclass.Class
		code       string
		status     int
		reason     string
		bodyPrefix string
	}{
		{name: "documented success",
			line:    `{"id": "batch_req_123", "custom_id": "request-2", "response": {"status_code": 200, "request_id": "req_123", "body": {"id": "chatcmpl-123", "object": "chat.completion", "created": 1711652795, "model": "gpt-3.5-turbo-0125", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."}, "logprobs": null, "finish_reason": "stop"}], "usage": {"prompt_tokens": 22, "completion_tokens": 2, "total_tokens": 24}, "system_fingerprint": "fp_123"}}, "error": null}`,
			outcome: Succeeded, bodyPrefix: `{"id": "chatcmpl-123"`},
		{name: "error null with status_code 400",
			line:    `{"id": "batch_req_456", "custom_id": "request-1", "response": {"status_code": 400, "request_id": "req_789", "body": {"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}}, "error": null}`,
			outcome: Errored, class: errclass.InvalidRequest, code: "context_length_exceeded", status: 400},
		{name: "status_code 500",
			line:    `{"id":"b","custom_id":"c","response":{"status_code":500,"request_id":"r","body":{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}},"error":null}`,
			outcome: Errored, class: errclass.ServerError, code: "server_error", status: 500},
		{name: "status_code 429 insufficient_quota",
			line:    `{"id":"b","custom_id":"c","response":{"status_code":429,"request_id":"r","body":{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}},"error":null}`,
			outcome: Errored, class: errclass.QuotaExhausted, code: "insufficient_quota", status: 429},
		{name: "status_code 502 with a page",
			line:    `{"id":"b","custom_id":"c","response":{"status_code":502,"request_id":"r","body":"<html>Bad gateway</html>"},"error":null}`,
			outcome: Errored, class: errclass.ServerError, status: 502},
		{name: "batch_expired", line: `{"id":"b","custom_id":"c","response":null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}`,
			outcome: NotRun, reason: "batch_expired"},
		{name: "batch_cancelled", line: `{"id":"b","custom_id":"c","response":null,"error":{"code":"batch_cancelled","message":"This request was cancelled."}}`,
			outcome: NotRun, reason: "batch_cancelled"},
		{name: "request_timeout", line: `{"id":"b","custom_id":"c","response":null,"error":{"code":"request_timeout","message":"timed out"}}`,
			outcome: NotRun, reason: "request_timeout"},
		{name: "other error", line: `{"id":"b","custom_id":"c","response":null,"error":{"code":"internal_error","message":"x"}}`,
			outcome: Errored, class: errclass.Transport, code: "internal_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseOpenAI([]byte(tt.line), nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != tt.outcome || r.Reason != tt.reason || r.CustomID == "" {
				t.Fatalf("got %+v, want outcome %s reason %q", r, tt.outcome, tt.reason)
			}
			if tt.outcome == Errored {
				if r.Err == nil || r.Err.Class != tt.class || r.Err.Code != tt.code || r.Err.Status != tt.status {
					t.Errorf("error %+v, want class %s code %q status %d", r.Err, tt.class, tt.code, tt.status)
				}
			} else if r.Err != nil {
				t.Errorf("error %v on a %s line", r.Err, tt.outcome)
			}
			if tt.bodyPrefix != "" && !strings.HasPrefix(string(r.Body), tt.bodyPrefix) {
				t.Errorf("body %.40s, want it to start %s", r.Body, tt.bodyPrefix)
			}
		})
	}
	// A success line's body reads as the synchronous answer does.
	r, _ := ParseOpenAI([]byte(tests[0].line), nil)
	if a, err := llm.ChatAnswer(r.Body); err != nil || a.Text != "Hello." || a.PromptTokens != 22 {
		t.Errorf("answer %+v, %v; want Hello. and 22 prompt tokens", a, err)
	}

	for _, line := range []string{`not json`, `{"id":"b","response":{"status_code":200,"body":{}}}`, `{"id":"b","custom_id":"c"}`} {
		if _, err := ParseOpenAI([]byte(line), nil); err == nil {
			t.Errorf("ParseOpenAI(%s): no error", line)
		}
	}
}

// TestParseOpenAISameAsSync: a batch line's HTTP failure is classified exactly as the same response of a
// synchronous call, through llm.Classify of go-openai's error.
func TestParseOpenAISameAsSync(t *testing.T) {
	body := `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":"model_not_found"}}`
	var er openai.ErrorResponse
	if err := json.Unmarshal([]byte(body), &er); err != nil {
		t.Fatal(err)
	}
	er.Error.HTTPStatusCode = 404
	sync := llm.Classify(er.Error)
	r, err := ParseOpenAI([]byte(`{"id":"b","custom_id":"c","response":{"status_code":404,"body":`+body+`},"error":null}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Err.Class != sync.Class || r.Err.Code != sync.Code || r.Err.Message != sync.Message || r.Err.Status != sync.Status {
		t.Errorf("batch %+v, sync %+v", r.Err, sync)
	}
}

func TestParseRedacts(t *testing.T) {
	line := `{"id":"b","custom_id":"c","response":{"status_code":401,"body":{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}},"error":null}`
	r, err := ParseOpenAI([]byte(line), redact)
	if err != nil {
		t.Fatal(err)
	}
	if r.Err.Class != errclass.Auth || strings.Contains(r.Err.Error(), testKey) {
		t.Errorf("error %v: want Auth without the key", r.Err)
	}
	for e := error(r.Err); e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testKey) {
			t.Errorf("the Unwrap chain holds the key: %v", e)
		}
	}
	aline := `{"custom_id":"c","result":{"type":"errored","error":{"type":"error","error":{"type":"authentication_error","message":"bad key ` + testKey + `"}}}}`
	ar, err := ParseAnthropic([]byte(aline), redact)
	if err != nil {
		t.Fatal(err)
	}
	if ar.Err.Class != errclass.Auth || strings.Contains(ar.Err.Error(), testKey) {
		t.Errorf("Anthropic error %v: want Auth without the key", ar.Err)
	}
}

func TestParseAnthropic(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		outcome Outcome
		class   errclass.Class
		reason  string
	}{
		{"succeeded", `{"custom_id":"my-second-request","result":{"type":"succeeded","message":{"id":"msg_014VwiXbi91y3JMjcpyGBHX5","type":"message","role":"assistant","model":"claude-3-5-sonnet-20240620","content":[{"type":"text","text":"Hello again!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":6}}}}`, Succeeded, "", ""},
		{"errored invalid request", `{"custom_id":"my-first-request","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"Validation error"}}}}`, Errored, errclass.InvalidRequest, ""},
		{"errored overloaded", `{"custom_id":"c","result":{"type":"errored","error":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}}`, Errored, errclass.ServerError, ""},
		{"canceled", `{"custom_id":"c","result":{"type":"canceled"}}`, NotRun, "", "canceled"},
		{"expired", `{"custom_id":"c","result":{"type":"expired"}}`, NotRun, "", "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseAnthropic([]byte(tt.line), nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != tt.outcome || r.Reason != tt.reason {
				t.Fatalf("got %+v, want %s %q", r, tt.outcome, tt.reason)
			}
			if tt.outcome == Errored && (r.Err == nil || r.Err.Class != tt.class) {
				t.Errorf("error %+v, want class %s", r.Err, tt.class)
			}
		})
	}
	r, _ := ParseAnthropic([]byte(tests[0].line), nil)
	if a, err := llm.AnthropicAnswer(r.Body); err != nil || a.Text != "Hello again!" || a.PromptTokens != 11 || a.CompletionTokens != 6 {
		t.Errorf("answer %+v, %v", a, err)
	}
	for _, line := range []string{`{`, `{"result":{"type":"succeeded","message":{}}}`, `{"custom_id":"c","result":{"type":"pending"}}`, `{"custom_id":"c","result":{"type":"succeeded"}}`} {
		if _, err := ParseAnthropic([]byte(line), nil); err == nil {
			t.Errorf("ParseAnthropic(%s): no error", line)
		}
	}
}

func TestScan(t *testing.T) {
	in := "{\"id\":\"1\",\"custom_id\":\"a\",\"response\":{\"status_code\":200,\"body\":{}},\"error\":null}\n\n" +
		"{\"id\":\"2\",\"custom_id\":\"b\",\"response\":null,\"error\":{\"code\":\"batch_expired\",\"message\":\"\"}}\n"
	var got []string
	err := Scan(wire.FormatOpenAI, strings.NewReader(in), nil, func(r Result) error {
		got = append(got, r.CustomID+":"+string(r.Outcome))
		return nil
	})
	if err != nil || strings.Join(got, ",") != "a:succeeded,b:not_run" {
		t.Errorf("Scan = %v, %v", got, err)
	}
	stop := errors.New("stop")
	if err := Scan(wire.FormatOpenAI, strings.NewReader(in), nil, func(Result) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Scan's callback error: got %v", err)
	}
	// Lines that cannot be read are given as Unreadable, with the request they name when it can be read, and the
	// lines after them are read: one odd line never blocks the file.
	odd := "{\"custom_id\":\"a\",\"result\":{\"type\":\"expired\"}}\nnope KEY123\n" +
		"{\"custom_id\":\"b\",\"result\":{\"type\":\"pending\"}}\n{\"custom_id\":\"c\",\"result\":{\"type\":\"expired\"}}\n"
	var res []Result
	redact := func(s string) string { return strings.ReplaceAll(s, "KEY123", "[redacted]") }
	if err := Scan(wire.FormatAnthropic, strings.NewReader(odd), redact, func(r Result) error { res = append(res, r); return nil }); err != nil {
		t.Fatalf("Scan of odd lines: %v", err)
	}
	if len(res) != 4 || res[0].Outcome != NotRun || res[3].CustomID != "c" || res[3].Outcome != NotRun ||
		res[1].Outcome != Unreadable || res[1].CustomID != "" || !strings.Contains(res[1].Reason, "line 2") ||
		!strings.Contains(res[1].Reason, "nope [redacted]") ||
		res[2].Outcome != Unreadable || res[2].CustomID != "b" || !strings.Contains(res[2].Reason, `type "pending"`) {
		t.Errorf("Scan of odd lines: %+v", res)
	}
	long := `{"custom_id":"d","result":{"type":"` + strings.Repeat("é", 200) + `"}}`
	if err := Scan(wire.FormatAnthropic, strings.NewReader(long), nil, func(r Result) error { res = append(res, r); return nil }); err != nil ||
		!utf8.ValidString(res[4].Reason) || !strings.HasSuffix(res[4].Reason, "…") || strings.Count(res[4].Reason, "é") != 200+(quoteMax-len(`{"custom_id":"d","result":{"type":"`))/2 {
		t.Errorf("a long odd line: %q, %v; want its start quoted, valid UTF-8", res[4].Reason, err)
	}
}

func TestFromOpenAI(t *testing.T) {
	for in, want := range map[string]wire.BatchStatus{"validating": wire.BatchStatusValidating, "in_progress": wire.BatchStatusInProgress,
		"finalizing": wire.BatchStatusFinalizing, "cancelling": wire.BatchStatusCancelling, "completed": wire.BatchStatusCompleted, "failed": wire.BatchStatusFailed,
		"expired": wire.BatchStatusExpired, "cancelled": wire.BatchStatusCancelled} {
		info, err := FromOpenAI(openai.Batch{ID: "b", Status: in})
		if err != nil || info.Status != want {
			t.Errorf("status %s: %s, %v; want %s", in, info.Status, err, want)
		}
	}
	// An unknown status is no guess and no error: unknown, the provider's word kept.
	if info, err := FromOpenAI(openai.Batch{ID: "b", Status: "paused"}); err != nil || info.Status != wire.BatchStatusUnknown ||
		info.State != "paused" || info.Status.Terminal() {
		t.Errorf("unknown status: %+v, %v", info, err)
	}
	var b openai.Batch
	doc := `{"id":"batch_abc123","object":"batch","endpoint":"/v1/chat/completions","errors":null,"input_file_id":"file-abc123",
		"completion_window":"24h","status":"completed","output_file_id":"file-cvaTdG","error_file_id":"file-HOWS94",
		"created_at":1711471533,"in_progress_at":1711471538,"expires_at":1711557933,"finalizing_at":1711493133,
		"completed_at":1711493163,"failed_at":null,"expired_at":null,"cancelling_at":null,"cancelled_at":null,
		"request_counts":{"total":100,"completed":95,"failed":5},"metadata":{"silico_run":"r1","customer_id":"user_123456789"}}`
	if err := json.Unmarshal([]byte(doc), &b); err != nil {
		t.Fatal(err)
	}
	info, err := FromOpenAI(b)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != wire.BatchStatusCompleted || info.Counts != (wire.BatchCounts{Total: 100, Succeeded: 95, Errored: 5}) ||
		info.OutputFileID != "file-cvaTdG" || info.ErrorFileID != "file-HOWS94" || info.Metadata["silico_run"] != "r1" ||
		!info.ExpiresAt.Equal(time.Unix(1711557933, 0)) || info.Counts.Done() != 100 {
		t.Errorf("info %+v", info)
	}
	failed := `{"id":"b","status":"failed","errors":{"object":"list","data":[{"code":"invalid_json_line","message":"not JSON","line":3}]},"request_counts":{"total":0,"completed":0,"failed":0}}`
	if err := json.Unmarshal([]byte(failed), &b); err != nil {
		t.Fatal(err)
	}
	if info, _ := FromOpenAI(b); len(info.Errors) != 1 || info.Errors[0] != "line 3: invalid_json_line: not JSON" {
		t.Errorf("errors %v", info.Errors)
	}
	// The reasons as OpenAI gives them: code, message, param and line (null when the batch as a whole is refused).
	limited := `{"id":"b","status":"failed","errors":{"object":"list","data":[` +
		`{"code":"token_limit_exceeded","message":"Enqueued token limit reached for gpt-4o-mini in organization org-x. Limit: 2,000,000 enqueued tokens. Please try again once some in_progress batches have been completed.","param":null,"line":null},` +
		`{"code":"invalid_value","message":"bad","param":"body.max_tokens","line":7}]},"request_counts":{"total":0,"completed":0,"failed":0}}`
	b = openai.Batch{}
	if err := json.Unmarshal([]byte(limited), &b); err != nil {
		t.Fatal(err)
	}
	info, _ = FromOpenAI(b)
	want := []wire.BatchError{
		{Code: "token_limit_exceeded", Message: "Enqueued token limit reached for gpt-4o-mini in organization org-x. Limit: 2,000,000 enqueued tokens. Please try again once some in_progress batches have been completed."},
		{Code: "invalid_value", Message: "bad", Param: "body.max_tokens", Line: 7},
	}
	if !reflect.DeepEqual(info.Failures, want) || info.Failures[1].String() != "line 7: invalid_value: bad (body.max_tokens)" {
		t.Errorf("failures %+v, want %+v", info.Failures, want)
	}
}

func TestFromAnthropic(t *testing.T) {
	doc := func(status, counts, cancel string) AnthropicBatch {
		var b AnthropicBatch
		s := `{"id":"msgbatch_013Zva2CMHLNnXjNJJKqJ2EF","type":"message_batch","processing_status":"` + status + `",
			"request_counts":` + counts + `,"ended_at":null,"created_at":"2024-08-20T18:37:24.100435Z",
			"expires_at":"2024-08-21T18:37:24.100435Z","cancel_initiated_at":` + cancel + `,
			"results_url":"https://api.anthropic.com/v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/results"}`
		if err := json.Unmarshal([]byte(s), &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	running := `{"processing":60,"succeeded":30,"errored":10,"canceled":0,"expired":0}`
	tests := []struct {
		name string
		b    AnthropicBatch
		want wire.BatchStatus
	}{
		{"in progress", doc("in_progress", running, "null"), wire.BatchStatusInProgress},
		{"canceling", doc("canceling", running, `"2024-08-20T19:00:00Z"`), wire.BatchStatusCancelling},
		{"ended", doc("ended", `{"processing":0,"succeeded":90,"errored":10,"canceled":0,"expired":0}`, "null"), wire.BatchStatusCompleted},
		{"ended after cancel", doc("ended", `{"processing":0,"succeeded":30,"errored":0,"canceled":70,"expired":0}`, `"2024-08-20T19:00:00Z"`), wire.BatchStatusCancelled},
		{"ended expired", doc("ended", `{"processing":0,"succeeded":60,"errored":0,"canceled":0,"expired":40}`, "null"), wire.BatchStatusExpired},
	}
	for _, tt := range tests {
		info, err := FromAnthropic(tt.b)
		if err != nil || info.Status != tt.want {
			t.Errorf("%s: %s, %v; want %s", tt.name, info.Status, err, tt.want)
		}
		if info.Counts.Total != 100 {
			t.Errorf("%s: total %d, want 100", tt.name, info.Counts.Total)
		}
	}
	info, _ := FromAnthropic(tests[0].b)
	if info.Counts.Done() != 40 || info.ExpiresAt.IsZero() || !strings.HasSuffix(info.ResultsURL, "/results") {
		t.Errorf("info %+v", info)
	}
	if info, err := FromAnthropic(doc("paused", running, "null")); err != nil || info.Status != wire.BatchStatusUnknown || info.State != "paused" {
		t.Errorf("unknown processing_status: %+v, %v", info, err)
	}
}

func TestKey(t *testing.T) {
	k := Key{Run: "run-1", Pass: "gpt/1", Chunk: 2, Round: 0}
	md := k.Metadata("d1")
	if len(md) > 16 {
		t.Errorf("%d metadata pairs; OpenAI keeps 16", len(md))
	}
	for key, v := range md {
		if len(key) > 64 || len(v) > 512 {
			t.Errorf("metadata %s=%s over OpenAI's lengths", key, v)
		}
	}
	if !k.Matches(md, "d1") || k.Matches(md, "d2") {
		t.Error("Matches does not tell the digest apart")
	}
	for _, other := range []Key{{"run-2", "gpt/1", 2, 0, 0}, {"run-1", "gpt/2", 2, 0, 0}, {"run-1", "gpt/1", 3, 0, 0},
		{"run-1", "gpt/1", 2, 1, 0}, {"run-1", "gpt/1", 2, 0, 1}} {
		if other.Names(md) {
			t.Errorf("%+v names the batch of %+v", other, k)
		}
	}
	// A resubmission after a failed batch is another batch; the first try's metadata is what it always was.
	if _, ok := md[MetaTry]; ok {
		t.Errorf("try 0 carries %s: %v", MetaTry, md)
	}
	k1 := k
	k1.Try = 1
	if md1 := k1.Metadata("d1"); k.Names(md1) || !k1.Names(md1) || k1.Names(md) {
		t.Errorf("try 1 %v and try 0 %v are not told apart", md1, md)
	}
	long := Key{Run: strings.Repeat("r", 600)}
	lmd := long.Metadata("d")
	if len(lmd[MetaRun]) > 512 || !long.Names(lmd) || (Key{Run: strings.Repeat("r", 601)}).Names(lmd) {
		t.Errorf("a long run id: %q", lmd[MetaRun])
	}
}

// TestLimitsAreTheSpecDefaults: the spec's batch defaults (experiment cannot import this package) are the
// providers' limits this package splits by.
func TestLimitsAreTheSpecDefaults(t *testing.T) {
	o, a := DefaultLimits(wire.FormatOpenAI, EndpointChat), DefaultLimits(wire.FormatAnthropic, EndpointChat)
	if o.MaxRequests != experiment.BatchMaxRequestsOpenAI || o.MaxBytes != experiment.BatchMaxBytesOpenAI ||
		a.MaxRequests != experiment.BatchMaxRequestsAnthropic || a.MaxBytes != experiment.BatchMaxBytesAnthropic {
		t.Errorf("limits %+v %+v disagree with the spec's defaults", o, a)
	}
}
