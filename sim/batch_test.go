package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// chatBodies returns n chat completion bodies of one model, distinct by persona and seed.
func chatBodies(t *testing.T, model string, n int) [][]byte {
	t.Helper()
	out := make([][]byte, n)
	for i := range out {
		req := newChatRequest(model, i%3, ipipPrompt)
		req.Messages[0].Content = fmt.Sprintf("You are persona %d.", i)
		req.MaxCompletionTokens = 8
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

func inputFile(ids []string, url string, bodies [][]byte) []byte {
	var buf bytes.Buffer
	for i, b := range bodies {
		fmt.Fprintf(&buf, `{"custom_id":%q,"method":"POST","url":%q,"body":%s}`+"\n", ids[i], url, b)
	}
	return buf.Bytes()
}

func cellIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("sim/1/%d/p", i)
	}
	return ids
}

// syncAnswer is what the synchronous endpoint answers body: the text and usage.
func syncAnswer(t *testing.T, ts *httptest.Server, body []byte) (string, int, int) {
	t.Helper()
	resp, data := post(t, ts, "/v1/chat/completions", json.RawMessage(body), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sync call: %d %s", resp.StatusCode, data)
	}
	var c openai.ChatCompletionResponse
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c.Choices[0].Message.Content, c.Usage.PromptTokens, c.Usage.CompletionTokens
}

// resultLine is a line of an OpenAI output or error file.
type resultLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func fileLines(t *testing.T, c *openai.Client, id *string) []resultLine {
	t.Helper()
	if id == nil {
		return nil
	}
	rc, err := c.GetFileContent(t.Context(), *id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []resultLine
	sc := bufio.NewScanner(rc)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l resultLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("result line %s: %v", sc.Bytes(), err)
		}
		out = append(out, l)
	}
	return out
}

// submit uploads the lines and creates a batch of them.
func submit(t *testing.T, c *openai.Client, endpoint openai.BatchEndpoint, data []byte, md map[string]any) openai.BatchResponse {
	t.Helper()
	f, err := c.CreateFileBytes(t.Context(), openai.FileBytesRequest{Name: "in.jsonl", Bytes: data, Purpose: openai.PurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	if f.Bytes != len(data) || f.Purpose != "batch" {
		t.Errorf("file %+v, want %d bytes of purpose batch", f, len(data))
	}
	b, err := c.CreateBatch(t.Context(), openai.CreateBatchRequest{InputFileID: f.ID, Endpoint: endpoint,
		CompletionWindow: "24h", Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenAIBatchAnswersAsSync(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	c := newClient(ts)
	bodies := chatBodies(t, "sim-chat", 30)
	ids := cellIDs(len(bodies))
	b := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(ids, "/v1/chat/completions", bodies),
		map[string]any{"silico_run": "r1", "silico_chunk": "0"})
	if b.Status != "validating" || b.Metadata["silico_run"] != "r1" {
		t.Errorf("create: status %s metadata %v; want validating and the metadata", b.Status, b.Metadata)
	}
	got, err := c.RetrieveBatch(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "completed" || got.RequestCounts.Total != 30 || got.RequestCounts.Completed != 30 || got.ErrorFileID != nil {
		t.Fatalf("retrieve: %s %+v error file %v; want completed, 30 of 30, no error file", got.Status, got.RequestCounts, got.ErrorFileID)
	}
	lines := fileLines(t, c, got.OutputFileID)
	if len(lines) != 30 {
		t.Fatalf("%d output lines, want 30", len(lines))
	}
	inOrder := true
	byID := map[string]resultLine{}
	for i, l := range lines {
		inOrder = inOrder && l.CustomID == ids[i]
		byID[l.CustomID] = l
	}
	if inOrder {
		t.Error("results come in input order; the simulator should show that order is not promised")
	}
	for i, id := range ids {
		l, ok := byID[id]
		if !ok || l.Error != nil || l.Response == nil || l.Response.StatusCode != 200 {
			t.Fatalf("line %s: %+v", id, l)
		}
		var a openai.ChatCompletionResponse
		if err := json.Unmarshal(l.Response.Body, &a); err != nil {
			t.Fatal(err)
		}
		text, pt, ct := syncAnswer(t, ts, bodies[i])
		if a.Choices[0].Message.Content != text || a.Usage.PromptTokens != pt || a.Usage.CompletionTokens != ct {
			t.Errorf("%s: batch %q %d/%d, sync %q %d/%d", id, a.Choices[0].Message.Content, a.Usage.PromptTokens,
				a.Usage.CompletionTokens, text, pt, ct)
		}
	}
	bs := s.Batches()
	if len(bs) != 1 || bs[0].Model != "sim-chat" || len(bs[0].Ran) != 30 || bs[0].Metadata["silico_chunk"] != "0" {
		t.Errorf("Batches() = %+v; want one batch of sim-chat that ran 30 requests", bs)
	}
}

func TestOpenAIBatchEmbeddings(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	c := newClient(ts)
	body := []byte(`{"model":"text-embedding-3-small","input":["a","b"],"encoding_format":"base64","dimensions":4}`)
	b := submit(t, c, openai.BatchEndpointEmbeddings, inputFile([]string{"e0"}, "/v1/embeddings", [][]byte{body}), nil)
	got, err := c.RetrieveBatch(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	lines := fileLines(t, c, got.OutputFileID)
	if len(lines) != 1 || lines[0].Response.StatusCode != 200 {
		t.Fatalf("lines %+v", lines)
	}
	_, want := post(t, ts, "/v1/embeddings", json.RawMessage(body), nil)
	var gotE, wantE struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if json.Unmarshal(lines[0].Response.Body, &gotE) != nil || json.Unmarshal(want, &wantE) != nil ||
		len(gotE.Data) != 2 || gotE.Data[0].Embedding != wantE.Data[0].Embedding || gotE.Data[1].Embedding != wantE.Data[1].Embedding {
		t.Errorf("batch embeddings %s, sync %s", lines[0].Response.Body, want)
	}
}

// TestOpenAIBatchExpiry: a batch that expires 60% of the way through returns its first 60% with answers and the
// rest as batch_expired in the error file; the counts grow while it runs.
func TestOpenAIBatchExpiry(t *testing.T) {
	clk := newFakeClock()
	s, ts := newTestServer(t, Config{Now: clk.Now, Batch: BatchConfig{ProcessingTime: 10 * time.Hour, Window: 6 * time.Hour}})
	c := newClient(ts)
	bodies := chatBodies(t, "sim-chat", 50)
	ids := cellIDs(50)
	b := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(ids, "/v1/chat/completions", bodies), nil)

	clk.Advance(3 * time.Hour)
	mid, err := c.RetrieveBatch(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if mid.Status != "in_progress" || mid.RequestCounts.Completed != 15 || mid.OutputFileID != nil {
		t.Errorf("at 3h: %s, %+v, output %v; want in_progress, 15 completed, no output yet", mid.Status, mid.RequestCounts, mid.OutputFileID)
	}
	clk.Advance(3 * time.Hour)
	end, err := c.RetrieveBatch(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != "expired" || end.RequestCounts.Completed != 30 {
		t.Fatalf("at 6h: %s, %+v; want expired with 30 completed", end.Status, end.RequestCounts)
	}
	out, errs := fileLines(t, c, end.OutputFileID), fileLines(t, c, end.ErrorFileID)
	if len(out) != 30 || len(errs) != 20 {
		t.Fatalf("%d output and %d error lines, want 30 and 20", len(out), len(errs))
	}
	ran := map[string]bool{}
	for _, l := range out {
		ran[l.CustomID] = true
	}
	for i, id := range ids {
		if ran[id] != (i < 30) {
			t.Errorf("%s ran: %v, want %v (the first 60%% run)", id, ran[id], i < 30)
		}
	}
	for _, l := range errs {
		if l.Error == nil || l.Error.Code != "batch_expired" || l.Response != nil {
			t.Errorf("error line %+v, want batch_expired", l)
		}
	}
	if bs := s.Batches(); len(bs[0].Ran) != 30 || bs[0].Status != "expired" {
		t.Errorf("Batches(): ran %d, status %s", len(bs[0].Ran), bs[0].Status)
	}
	// A later retrieve gives the same files.
	again, _ := c.RetrieveBatch(t.Context(), b.ID)
	if *again.OutputFileID != *end.OutputFileID {
		t.Error("a second retrieve wrote new result files")
	}
}

func TestOpenAIBatchCancel(t *testing.T) {
	clk := newFakeClock()
	_, ts := newTestServer(t, Config{Now: clk.Now, Batch: BatchConfig{ProcessingTime: 10 * time.Hour, CancelTime: 10 * time.Minute}})
	c := newClient(ts)
	b := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(cellIDs(10), "/v1/chat/completions", chatBodies(t, "sim-chat", 10)), nil)
	clk.Advance(2 * time.Hour)
	cb, err := c.CancelBatch(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cb.Status != "cancelling" {
		t.Errorf("cancel: %s, want cancelling", cb.Status)
	}
	clk.Advance(5 * time.Hour) // nothing more runs after the cancel
	mid, _ := c.RetrieveBatch(t.Context(), b.ID)
	if mid.Status != "cancelled" || mid.RequestCounts.Completed != 2 {
		t.Fatalf("after the cancel: %s %+v; want cancelled with 2 completed", mid.Status, mid.RequestCounts)
	}
	errs := fileLines(t, c, mid.ErrorFileID)
	if len(fileLines(t, c, mid.OutputFileID)) != 2 || len(errs) != 8 || errs[0].Error.Code != "batch_cancelled" {
		t.Errorf("results: want 2 answers and 8 batch_cancelled, got errors %+v", errs)
	}
	// A finished batch cannot be cancelled.
	done := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(cellIDs(1), "/v1/chat/completions", chatBodies(t, "sim-chat", 1)), nil)
	clk.Advance(11 * time.Hour)
	if _, err := c.CancelBatch(t.Context(), done.ID); err == nil {
		t.Error("cancelling a completed batch: no error")
	}
}

// TestOpenAIBatchFailedLines: a line that fails comes back in the output file with "error": null and its HTTP
// status in response.status_code.
func TestOpenAIBatchFailedLines(t *testing.T) {
	ids := cellIDs(4)
	_, ts := newTestServer(t, Config{FailCells: []string{ids[3]}, Batch: BatchConfig{FailLines: map[string]int{ids[1]: 400, ids[2]: 503}}})
	c := newClient(ts)
	b := submit(t, c, openai.BatchEndpointChatCompletions, inputFile(ids, "/v1/chat/completions", chatBodies(t, "sim-chat", 4)), nil)
	got, _ := c.RetrieveBatch(t.Context(), b.ID)
	if got.RequestCounts.Completed != 1 || got.RequestCounts.Failed != 3 || got.ErrorFileID != nil {
		t.Errorf("counts %+v, error file %v; want 1 completed, 3 failed, all in the output file", got.RequestCounts, got.ErrorFileID)
	}
	want := map[string]int{ids[0]: 200, ids[1]: 400, ids[2]: 503, ids[3]: 500}
	for _, l := range fileLines(t, c, got.OutputFileID) {
		if l.Error != nil || l.Response == nil || l.Response.StatusCode != want[l.CustomID] {
			t.Errorf("line %s: %+v, want status %d and error null", l.CustomID, l, want[l.CustomID])
		}
		if l.CustomID == ids[1] && !strings.Contains(string(l.Response.Body), `"code":"context_length_exceeded"`) {
			t.Errorf("400 line body %s, want context_length_exceeded", l.Response.Body)
		}
	}
}

func TestOpenAIBatchValidation(t *testing.T) {
	_, ts := newTestServer(t, Config{Batch: BatchConfig{MaxRequests: 3, MaxBytes: 4000}})
	c := newClient(ts)
	bodies := chatBodies(t, "sim-chat", 2)
	other := chatBodies(t, "gpt-4o-mini", 1)
	cases := map[string][]byte{
		"duplicate custom_id": inputFile([]string{"a", "a"}, "/v1/chat/completions", bodies),
		"two models":          inputFile([]string{"a", "b"}, "/v1/chat/completions", [][]byte{bodies[0], other[0]}),
		"wrong url":           inputFile([]string{"a"}, "/v1/embeddings", bodies[:1]),
		"not JSON":            []byte("{\n"),
		"too many":            inputFile([]string{"a", "b", "c", "d"}, "/v1/chat/completions", [][]byte{[]byte(`{"model":"m"}`), []byte(`{"model":"m"}`), []byte(`{"model":"m"}`), []byte(`{"model":"m"}`)}),
	}
	for name, data := range cases {
		b := submit(t, c, openai.BatchEndpointChatCompletions, data, nil)
		if b.Status != "failed" || b.Errors == nil || len(b.Errors.Data) == 0 {
			t.Errorf("%s: status %s, errors %+v; want failed with errors", name, b.Status, b.Errors)
		}
	}
	if _, err := c.CreateFileBytes(t.Context(), openai.FileBytesRequest{Name: "big", Bytes: bytes.Repeat([]byte("x"), 4001),
		Purpose: openai.PurposeBatch}); err == nil {
		t.Error("an input file over max_bytes: no error")
	}
	md := map[string]any{}
	for i := range 17 {
		md[fmt.Sprint("k", i)] = "v"
	}
	f, _ := c.CreateFileBytes(t.Context(), openai.FileBytesRequest{Name: "in", Bytes: inputFile([]string{"a"}, "/v1/chat/completions", bodies[:1]), Purpose: openai.PurposeBatch})
	for name, req := range map[string]openai.CreateBatchRequest{
		"17 metadata pairs": {InputFileID: f.ID, Endpoint: openai.BatchEndpointChatCompletions, CompletionWindow: "24h", Metadata: md},
		"long value":        {InputFileID: f.ID, Endpoint: openai.BatchEndpointChatCompletions, CompletionWindow: "24h", Metadata: map[string]any{"k": strings.Repeat("v", 513)}},
		"unknown file":      {InputFileID: "file-nope", Endpoint: openai.BatchEndpointChatCompletions, CompletionWindow: "24h"},
		"window":            {InputFileID: f.ID, Endpoint: openai.BatchEndpointChatCompletions, CompletionWindow: "1h"},
	} {
		if _, err := c.CreateBatch(t.Context(), req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestOpenAIBatchList(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	c := newClient(ts)
	data := inputFile([]string{"a"}, "/v1/chat/completions", chatBodies(t, "sim-chat", 1))
	var ids []string
	for i := range 3 {
		ids = append(ids, submit(t, c, openai.BatchEndpointChatCompletions, data, map[string]any{"silico_chunk": fmt.Sprint(i)}).ID)
	}
	limit := 2
	page, err := c.ListBatch(t.Context(), nil, &limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || page.Data[0].ID != ids[2] || page.Data[1].ID != ids[1] || !page.HasMore ||
		page.Data[0].Metadata["silico_chunk"] != "2" {
		t.Fatalf("first page %+v; want the two newest with metadata, has_more", page)
	}
	next, err := c.ListBatch(t.Context(), &page.LastID, &limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Data) != 1 || next.Data[0].ID != ids[0] || next.HasMore {
		t.Errorf("second page %+v; want the oldest alone", next)
	}
}

// anthropic sends an Anthropic API request.
func anthropic(t *testing.T, ts *httptest.Server, method, path string, body any, version bool) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", "sk-ant-test")
	if version {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

type anthropicBatch struct {
	ID               string `json:"id"`
	ProcessingStatus string `json:"processing_status"`
	RequestCounts    counts `json:"request_counts"`
	ResultsURL       string `json:"results_url"`
	ExpiresAt        string `json:"expires_at"`
}

func anthropicRequests(n int, params func(i int) map[string]any) map[string]any {
	reqs := make([]map[string]any, n)
	for i := range reqs {
		reqs[i] = map[string]any{"custom_id": fmt.Sprintf("sim_1_%d_p", i), "params": params(i)}
	}
	return map[string]any{"requests": reqs}
}

func messagesParams(i int) map[string]any {
	return map[string]any{"model": "sim-chat", "max_tokens": 8, "system": fmt.Sprintf("You are persona %d.", i),
		"messages": []map[string]any{{"role": "user", "content": ipipPrompt}}}
}

func TestAnthropicBatch(t *testing.T) {
	clk := newFakeClock()
	s, ts := newTestServer(t, Config{Now: clk.Now, Batch: BatchConfig{ProcessingTime: time.Hour}})
	if st, _ := anthropic(t, ts, "POST", "/v1/messages/batches", anthropicRequests(1, messagesParams), false); st != 400 {
		t.Errorf("create without anthropic-version: %d, want 400", st)
	}
	for name, body := range map[string]any{
		"slash in custom_id": map[string]any{"requests": []map[string]any{{"custom_id": "a/b", "params": messagesParams(0)}}},
		"duplicate":          map[string]any{"requests": []map[string]any{{"custom_id": "a", "params": messagesParams(0)}, {"custom_id": "a", "params": messagesParams(1)}}},
		"no requests":        map[string]any{"requests": []any{}},
	} {
		if st, _ := anthropic(t, ts, "POST", "/v1/messages/batches", body, true); st != 400 {
			t.Errorf("%s: %d, want 400", name, st)
		}
	}

	body := anthropicRequests(5, func(i int) map[string]any {
		p := messagesParams(i)
		if i == 4 {
			delete(p, "max_tokens") // refused when it runs, alone
		}
		return p
	})
	st, data := anthropic(t, ts, "POST", "/v1/messages/batches", body, true)
	var b anthropicBatch
	if st != 200 || json.Unmarshal(data, &b) != nil || b.ProcessingStatus != "in_progress" || b.RequestCounts.Processing != 5 {
		t.Fatalf("create: %d %s", st, data)
	}
	if st, _ := anthropic(t, ts, "GET", "/v1/messages/batches/"+b.ID+"/results", nil, true); st == 200 {
		t.Error("results before the batch ended: 200")
	}
	clk.Advance(time.Hour)
	_, data = anthropic(t, ts, "GET", "/v1/messages/batches/"+b.ID, nil, true)
	if err := json.Unmarshal(data, &b); err != nil || b.ProcessingStatus != "ended" ||
		b.RequestCounts != (counts{Succeeded: 4, Errored: 1}) || !strings.HasSuffix(b.ResultsURL, "/results") {
		t.Fatalf("retrieve: %s", data)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", b.ResultsURL, nil)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	results := map[string]json.RawMessage{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l struct {
			CustomID string          `json:"custom_id"`
			Result   json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		results[l.CustomID] = l.Result
	}
	if len(results) != 5 {
		t.Fatalf("%d results, want 5", len(results))
	}
	for i := range 4 {
		var r struct {
			Type    string `json:"type"`
			Message struct {
				Type    string `json:"type"`
				Content []struct{ Text string }
				Usage   struct {
					InputTokens  int `json:"input_tokens"`
					OutputTokens int `json:"output_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		id := fmt.Sprintf("sim_1_%d_p", i)
		if err := json.Unmarshal(results[id], &r); err != nil || r.Type != "succeeded" || r.Message.Type != "message" {
			t.Fatalf("%s: %s", id, results[id])
		}
		// The same answer as the chat endpoint gives the same messages (with no seed: Anthropic has none).
		chat, _ := json.Marshal(map[string]any{"model": "sim-chat", "max_tokens": 8, "messages": []map[string]string{
			{"role": "system", "content": fmt.Sprintf("You are persona %d.", i)}, {"role": "user", "content": ipipPrompt}}})
		text, pt, ct := syncAnswer(t, ts, chat)
		if r.Message.Content[0].Text != text || r.Message.Usage.InputTokens != pt || r.Message.Usage.OutputTokens != ct {
			t.Errorf("%s: %+v, want %q %d/%d", id, r.Message, text, pt, ct)
		}
	}
	if !strings.Contains(string(results["sim_1_4_p"]), `"type":"errored"`) || !strings.Contains(string(results["sim_1_4_p"]), "invalid_request_error") {
		t.Errorf("the request without max_tokens: %s, want errored invalid_request_error", results["sim_1_4_p"])
	}
	if bs := s.Batches(); len(bs) != 1 || bs[0].Format != BatchAnthropic || bs[0].Status != "ended" || len(bs[0].Ran) != 5 {
		t.Errorf("Batches() = %+v", bs)
	}
}

func TestAnthropicBatchExpiryAndCancel(t *testing.T) {
	clk := newFakeClock()
	_, ts := newTestServer(t, Config{Now: clk.Now, Batch: BatchConfig{ProcessingTime: 10 * time.Hour, Window: 6 * time.Hour}})
	results := func(id string) map[string]int {
		_, data := anthropic(t, ts, "GET", "/v1/messages/batches/"+id+"/results", nil, true)
		n := map[string]int{}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var l struct {
				Result struct{ Type string } `json:"result"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			n[l.Result.Type]++
		}
		return n
	}
	var exp, can anthropicBatch
	_, data := anthropic(t, ts, "POST", "/v1/messages/batches", anthropicRequests(10, messagesParams), true)
	_ = json.Unmarshal(data, &exp)
	_, data = anthropic(t, ts, "POST", "/v1/messages/batches", anthropicRequests(10, messagesParams), true)
	_ = json.Unmarshal(data, &can)
	clk.Advance(3 * time.Hour)
	_, data = anthropic(t, ts, "POST", "/v1/messages/batches/"+can.ID+"/cancel", nil, true)
	if err := json.Unmarshal(data, &can); err != nil || can.ProcessingStatus != "ended" || can.RequestCounts.Canceled != 7 {
		t.Errorf("cancel: %s; want ended (cancel time 0) with 7 canceled", data)
	}
	clk.Advance(3 * time.Hour)
	_, data = anthropic(t, ts, "GET", "/v1/messages/batches/"+exp.ID, nil, true)
	if err := json.Unmarshal(data, &exp); err != nil || exp.ProcessingStatus != "ended" || exp.RequestCounts.Expired != 4 ||
		exp.RequestCounts.Succeeded != 6 {
		t.Errorf("expiry: %s; want ended with 6 succeeded and 4 expired", data)
	}
	if got := results(exp.ID); got["succeeded"] != 6 || got["expired"] != 4 {
		t.Errorf("expired batch results %v", got)
	}
	if got := results(can.ID); got["succeeded"] != 3 || got["canceled"] != 7 {
		t.Errorf("cancelled batch results %v", got)
	}
	_, data = anthropic(t, ts, "GET", "/v1/messages/batches?limit=1", nil, true)
	var page struct {
		Data    []anthropicBatch `json:"data"`
		HasMore bool             `json:"has_more"`
	}
	if err := json.Unmarshal(data, &page); err != nil || len(page.Data) != 1 || page.Data[0].ID != can.ID || !page.HasMore {
		t.Errorf("list: %s; want the newest and has_more", data)
	}
}

func TestAnthropicMessages(t *testing.T) {
	s, ts := newTestServer(t, Config{FailCells: []string{"bad"}})
	if st, _ := anthropic(t, ts, "POST", "/v1/messages", messagesParams(1), false); st != 400 {
		t.Errorf("without anthropic-version: %d, want 400", st)
	}
	st, data := anthropic(t, ts, "POST", "/v1/messages", messagesParams(1), true)
	var m struct {
		Type    string `json:"type"`
		Content []struct{ Text string }
		Usage   struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	if st != 200 || json.Unmarshal(data, &m) != nil || m.Type != "message" || len(m.Content) != 1 || m.Usage.InputTokens == 0 {
		t.Fatalf("messages: %d %s", st, data)
	}
	p := messagesParams(1)
	delete(p, "max_tokens")
	if st, data := anthropic(t, ts, "POST", "/v1/messages", p, true); st != 400 || !strings.Contains(string(data), `"invalid_request_error"`) {
		t.Errorf("without max_tokens: %d %s", st, data)
	}
	// A failing cell answers as Anthropic does: its error type, not OpenAI's shape.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", ts.URL+"/v1/messages", bytes.NewReader(mustJSON(t, messagesParams(1))))
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set(CellHeader, "bad")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(body), `"type":"error"`) || !strings.Contains(string(body), `"api_error"`) {
		t.Errorf("failing cell: %d %s", resp.StatusCode, body)
	}
	answered := 0
	for _, r := range s.Requests() {
		if r.Endpoint == "/v1/messages" && r.Answered() {
			answered++
		}
	}
	if answered != 1 {
		t.Errorf("%d answered /v1/messages requests in the log, want 1", answered)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBatchesSurviveARestart: a simulator with a state dir keeps its files and batches there, and another started
// on the same dir (the embedded one after a kill -9 of its starter) serves them under the same ids: a batch
// created before the restart runs on meanwhile (its answers the same as the first simulator's), its uploaded input,
// a cancel, a deletion and the result files whose ids a client learnt before the restart are there too, and new
// ids follow the old ones. Without a state dir, the batches go with the process.
func TestBatchesSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	cfg := Config{Now: clk.Now, Batch: BatchConfig{ProcessingTime: time.Hour, StateDir: dir}}
	s1, ts1 := newTestServer(t, cfg)
	c1 := newClient(ts1)
	bodies := chatBodies(t, "sim-chat", 10)
	ids := cellIDs(len(bodies))
	input := inputFile(ids, "/v1/chat/completions", bodies)
	running := submit(t, c1, openai.BatchEndpointChatCompletions, input, map[string]any{"silico_run": "r1"})
	ended := submit(t, c1, openai.BatchEndpointChatCompletions, input, nil)
	cancelled := submit(t, c1, openai.BatchEndpointChatCompletions, input, nil)
	clk.Advance(30 * time.Minute)
	if _, err := c1.CancelBatch(t.Context(), cancelled.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(45 * time.Minute) // ended and cancelled have ended; running is a new one below
	done1, err := c1.RetrieveBatch(t.Context(), ended.ID)
	if err != nil || done1.Status != "completed" || done1.OutputFileID == nil {
		t.Fatalf("before the restart: %+v, %v", done1, err)
	}
	answers := fileLines(t, c1, done1.OutputFileID)
	before := s1.Batches()
	late := submit(t, c1, openai.BatchEndpointChatCompletions, input, nil) // half done at the restart below
	clk.Advance(30 * time.Minute)
	gem := strings.NewReader(`{"batch":{"displayName":"d","inputConfig":{"requests":{"requests":[{"request":{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]},"metadata":{"key":"k1"}}]}}}}`)
	resp, err := http.Post(ts1.URL+"/v1beta/models/sim-chat:batchGenerateContent", "application/json", gem)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("gemini create: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	ts1.Close()

	s2, ts2 := newTestServer(t, cfg)
	c2 := newClient(ts2)
	after := s2.Batches()
	if len(after) != len(before)+2 {
		t.Fatalf("%d batches after the restart, want %d", len(after), len(before)+2)
	}
	for i, b := range before {
		if a := after[i]; a.ID != b.ID || a.Status != b.Status || len(a.Ran) != len(b.Ran) || a.InputFile != b.InputFile ||
			a.Metadata["silico_run"] != b.Metadata["silico_run"] || !a.Created.Equal(b.Created) {
			t.Errorf("batch %d after the restart: %+v\nwant %+v", i, a, b)
		}
	}
	done2, err := c2.RetrieveBatch(t.Context(), ended.ID)
	if err != nil || done2.Status != "completed" || done2.OutputFileID == nil || *done2.OutputFileID != *done1.OutputFileID {
		t.Fatalf("the ended batch after the restart: %+v, %v", done2, err)
	}
	if again := sortedLines(t, fileLines(t, c2, done2.OutputFileID)); fmt.Sprint(again) != fmt.Sprint(sortedLines(t, answers)) {
		t.Errorf("its output file changed:\n%v\nwant\n%v", again, sortedLines(t, answers))
	}
	if c, err := c2.RetrieveBatch(t.Context(), cancelled.ID); err != nil || c.Status != "cancelled" || c.RequestCounts.Completed != 5 {
		t.Errorf("the cancelled batch after the restart: %+v, %v", c, err)
	}
	mid, err := c2.RetrieveBatch(t.Context(), late.ID)
	if err != nil || mid.Status != "in_progress" || mid.RequestCounts.Completed != 5 {
		t.Fatalf("the batch half done at the restart: %+v, %v", mid, err)
	}
	clk.Advance(time.Hour)
	fin, err := c2.RetrieveBatch(t.Context(), late.ID)
	if err != nil || fin.Status != "completed" {
		t.Fatalf("it did not end after the restart: %+v, %v", fin, err)
	}
	if got := sortedLines(t, fileLines(t, c2, fin.OutputFileID)); fmt.Sprint(got) != fmt.Sprint(sortedLines(t, answers)) || len(got) != 10 {
		t.Errorf("its answers differ from the same requests' before the restart:\n%v\nwant\n%v", got, sortedLines(t, answers))
	}
	if _, err := c2.RetrieveBatch(t.Context(), running.ID); err != nil {
		t.Errorf("the first batch: %v", err)
	}
	next := submit(t, c2, openai.BatchEndpointChatCompletions, input, nil)
	for _, b := range before {
		if next.ID == b.ID || next.InputFileID == b.InputFile {
			t.Errorf("a new batch after the restart reuses id %s or %s", b.ID, b.InputFile)
		}
	}
	if err := c2.DeleteFile(t.Context(), late.InputFileID); err != nil {
		t.Fatal(err)
	}
	ts2.Close()
	s3, _ := newTestServer(t, cfg)
	for _, f := range s3.Files() {
		if f.ID == late.InputFileID {
			t.Errorf("file %s deleted before the restart is back", f.ID)
		}
	}
	if n := len(s3.Batches()); n != len(after)+1 {
		t.Errorf("%d batches after a second restart, want %d", n, len(after)+1)
	}
	// In memory only, the batches go with the process.
	cfg.Batch.StateDir = ""
	if s4, _ := newTestServer(t, cfg); len(s4.Batches()) != 0 {
		t.Errorf("a simulator without a state dir starts with %d batches", len(s4.Batches()))
	}
}

// sortedLines are the custom ids, answers and usage of result lines, by custom id.
func sortedLines(t *testing.T, ls []resultLine) []string {
	t.Helper()
	var out []string
	for _, l := range ls {
		var a openai.ChatCompletionResponse
		if err := json.Unmarshal(l.Response.Body, &a); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %q %d/%d", l.CustomID, a.Choices[0].Message.Content, a.Usage.PromptTokens, a.Usage.CompletionTokens))
	}
	slices.Sort(out)
	return out
}
