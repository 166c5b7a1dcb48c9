package sim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// fakeClock is a clock tests advance by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestServer(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

func newClient(ts *httptest.Server) *openai.Client {
	c := openai.DefaultConfig("sk-test")
	c.BaseURL = ts.URL + "/v1"
	c.HTTPClient = ts.Client()
	return openai.NewClientWithConfig(c)
}

// post sends body as JSON and returns the response with its body read.
func post(t *testing.T, ts *httptest.Server, path string, body any, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read body: %v", path, err)
	}
	return resp, data
}

func newChatRequest(model string, seed int, prompt string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model: model,
		Seed:  &seed,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "You are a 34 year old teacher from Ohio."},
			{Role: openai.ChatMessageRoleUser, Content: prompt},
		},
	}
}

const ipipPrompt = "How accurately does this describe you? I am the life of the party.\n" +
	"1. Very Inaccurate\n2. Moderately Inaccurate\n3. Neither Accurate Nor Inaccurate\n4. Moderately Accurate\n" +
	"5. Very Accurate\nAnswer with one option."

func TestOptions(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"lines", ipipPrompt, []string{"1. Very Inaccurate", "2. Moderately Inaccurate",
			"3. Neither Accurate Nor Inaccurate", "4. Moderately Accurate", "5. Very Accurate"}},
		{"commas", "Do you agree? Options: 1. Disagree strongly, 2. Disagree a little, 3. Agree a little, 4. Agree strongly",
			[]string{"1. Disagree strongly", "2. Disagree a little", "3. Agree a little", "4. Agree strongly"}},
		{"semicolons and trailing sentence", "Pick one: a) Yes; b) No; c) Maybe. Reply with the letter.",
			[]string{"a) Yes", "b) No", "c) Maybe"}},
		{"or before last", "Choose 1. Never, 2. Sometimes, or 3. Always", []string{"1. Never", "2. Sometimes", "3. Always"}},
		{"upper letters in lines", "Question 1. Which?\nA. Red\nB. Green\nC. Blue\n", []string{"A. Red", "B. Green", "C. Blue"}},
		{"crlf", "Q?\r\n1) Yes\r\n2) No\r\n", []string{"1) Yes", "2) No"}},
		{"numbered question then options", "3. I worry a lot.\n1. Disagree\n2. Agree", []string{"1. Disagree", "2. Agree"}},
		{"last list wins", "Steps: 1. read 2. think\nOptions:\n1. Yes\n2. No", []string{"1. Yes", "2. No"}},
		{"zero-based", "0. Not at all\n1. Several days\n2. More than half the days\n3. Nearly every day",
			[]string{"0. Not at all", "1. Several days", "2. More than half the days", "3. Nearly every day"}},
		{"none", "Tell me about yourself. I am 35. I like tea.", []string{}},
		{"single", "1. Only one option", []string{}},
		{"decimal is no enumerator", "Rate 3.5 or 4.5 out of 5.", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Options(tt.text)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Options(%q)\n got %q\nwant %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestAnswerIsDeterministicOption(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	client := newClient(ts)
	prompts := []string{
		ipipPrompt,
		"Do you agree? 1. Disagree strongly, 2. Disagree a little, 3. Neither, 4. Agree a little, 5. Agree strongly",
		"Pick one: a) Yes; b) No; c) Maybe.",
		"Which colour?\nA. Red\nB. Green\nC. Blue",
	}
	for _, p := range prompts {
		opts := Options(p)
		for seed := range 5 {
			first, err := client.CreateChatCompletion(t.Context(), newChatRequest("sim-chat", seed, p))
			if err != nil {
				t.Fatalf("seed %d, prompt %q: %v", seed, p, err)
			}
			again, err := client.CreateChatCompletion(t.Context(), newChatRequest("sim-chat", seed, p))
			if err != nil {
				t.Fatal(err)
			}
			got := first.Choices[0].Message.Content
			if again.Choices[0].Message.Content != got {
				t.Errorf("seed %d, prompt %q: answers %q then %q, want the same", seed, p, got,
					again.Choices[0].Message.Content)
			}
			found := false
			for _, o := range opts {
				found = found || o == got
			}
			if !found {
				t.Errorf("seed %d, prompt %q: answer %q is not one of %q", seed, p, got, opts)
			}
			if fr := first.Choices[0].FinishReason; fr != openai.FinishReasonStop {
				t.Errorf("finish_reason = %q, want stop", fr)
			}
		}
	}
}

func TestAnswersVaryWithSeedAndModel(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	client := newClient(ts)
	seen := map[string]bool{}
	for seed := range 20 {
		resp, err := client.CreateChatCompletion(t.Context(), newChatRequest("sim-chat", seed, ipipPrompt))
		if err != nil {
			t.Fatal(err)
		}
		seen[resp.Choices[0].Message.Content] = true
	}
	if len(seen) < 3 {
		t.Errorf("20 seeds gave %d distinct answers (%v), want at least 3 of 5", len(seen), seen)
	}
	byModel := map[string]bool{}
	for _, m := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		resp, err := client.CreateChatCompletion(t.Context(), newChatRequest(m, 1, ipipPrompt))
		if err != nil {
			t.Fatal(err)
		}
		byModel[resp.Choices[0].Message.Content] = true
	}
	if len(byModel) < 2 {
		t.Errorf("8 models with one seed gave one answer %v, want the model to matter", byModel)
	}
}

func TestNoOptionsGivesSentence(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	client := newClient(ts)
	req := newChatRequest("sim-chat", 3, "Describe your morning.")
	a, err := client.CreateChatCompletion(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.CreateChatCompletion(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := a.Choices[0].Message.Content
	if got == "" || got != b.Choices[0].Message.Content {
		t.Errorf("answers %q and %q: want the same non-empty sentence", got, b.Choices[0].Message.Content)
	}
}

func TestMaxTokensTruncates(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	client := newClient(ts)
	req := newChatRequest("sim-chat", 0, "Pick:\n1. Neither Accurate Nor Inaccurate\n2. Neither Accurate Nor Inaccurate either")
	//lint:ignore SA1019 the simulator serves the max_tokens that OpenAI-compatible clients send.
	req.MaxTokens = 2
	resp, err := client.CreateChatCompletion(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if fr := resp.Choices[0].FinishReason; fr != openai.FinishReasonLength {
		t.Errorf("finish_reason = %q, want length", fr)
	}
	if resp.Usage.CompletionTokens != 2 {
		t.Errorf("completion_tokens = %d, want 2", resp.Usage.CompletionTokens)
	}
	if c := resp.Choices[0].Message.Content; !strings.HasPrefix("1. Neither Accurate Nor Inaccurate", c) &&
		!strings.HasPrefix("2. Neither Accurate Nor Inaccurate either", c) {
		t.Errorf("content %q is not a prefix of an option", c)
	}
}

func TestUsageMatchesTiktoken(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	client := newClient(ts)
	for _, tc := range []struct {
		model, encoding string
	}{{"sim-chat", "cl100k_base"}, {"gpt-4o-mini", "o200k_base"}} {
		t.Run(tc.model, func(t *testing.T) {
			if got := EncodingFor(tc.model); got != tc.encoding {
				t.Fatalf("EncodingFor(%q) = %q, want %q", tc.model, got, tc.encoding)
			}
			enc, err := loadEncoding(tc.encoding)
			if err != nil {
				t.Fatal(err)
			}
			req := newChatRequest(tc.model, 9, ipipPrompt)
			req.Messages = append(req.Messages[:1], openai.ChatCompletionMessage{
				Role: "user", Name: "alice", Content: req.Messages[1].Content})
			resp, err := client.CreateChatCompletion(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			want := 3 // every reply is primed with <|start|>assistant<|message|>
			for _, m := range req.Messages {
				want += 3 + len(enc.EncodeOrdinary(m.Role)) + len(enc.EncodeOrdinary(m.Content))
				if m.Name != "" {
					want += 1 + len(enc.EncodeOrdinary(m.Name))
				}
			}
			wantCompletion := len(enc.EncodeOrdinary(resp.Choices[0].Message.Content))
			u := resp.Usage
			if u.PromptTokens != want || u.CompletionTokens != wantCompletion || u.TotalTokens != want+wantCompletion {
				t.Errorf("usage = %+v, want prompt %d, completion %d, total %d", u, want, wantCompletion, want+wantCompletion)
			}
		})
	}
	c := s.Counters()
	if c.OK != 2 || c.PromptTokens == 0 || c.CompletionTokens == 0 {
		t.Errorf("counters %+v: want 2 OK with tokens", c)
	}
}

func TestStreaming(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	client := newClient(ts)
	plain, err := client.CreateChatCompletion(t.Context(), newChatRequest("sim-chat", 4, ipipPrompt))
	if err != nil {
		t.Fatal(err)
	}
	req := newChatRequest("sim-chat", 4, ipipPrompt)
	req.Stream = true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := client.CreateChatCompletionStream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var content strings.Builder
	var finish openai.FinishReason
	var usage *openai.Usage
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		for _, c := range chunk.Choices {
			content.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
	}
	if got, want := content.String(), plain.Choices[0].Message.Content; got != want {
		t.Errorf("streamed content %q, want %q as without streaming", got, want)
	}
	if finish != openai.FinishReasonStop {
		t.Errorf("finish_reason %q, want stop", finish)
	}
	if usage == nil || usage.PromptTokens != plain.Usage.PromptTokens || usage.CompletionTokens != plain.Usage.CompletionTokens {
		t.Errorf("stream usage %+v, want %+v", usage, plain.Usage)
	}

	// The raw stream: events, the usage chunk with no choices, and [DONE] last.
	raw := map[string]any{"model": "sim-chat", "stream": true, "seed": 4,
		"messages": []map[string]string{{"role": "user", "content": ipipPrompt}}}
	resp, body := post(t, ts, "/v1/chat/completions", raw, nil)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	if !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Errorf("stream does not end with [DONE]:\n%s", body)
	}
	if strings.Contains(string(body), `"usage"`) {
		t.Errorf("stream without include_usage carries usage:\n%s", body)
	}
}

func TestEmbeddings(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	client := newClient(ts)
	texts := []string{"the life of the party", "a quiet evening", "the life of the party"}
	floats, err := client.CreateEmbeddings(t.Context(), openai.EmbeddingRequestStrings{
		Input: texts, Model: "text-embedding-3-small"})
	if err != nil {
		t.Fatal(err)
	}
	b64, err := client.CreateEmbeddings(t.Context(), openai.EmbeddingRequestStrings{
		Input: texts, Model: "text-embedding-3-small", EncodingFormat: openai.EmbeddingEncodingFormatBase64})
	if err != nil {
		t.Fatal(err)
	}
	if len(floats.Data) != 3 || len(b64.Data) != 3 {
		t.Fatalf("got %d and %d embeddings, want 3", len(floats.Data), len(b64.Data))
	}
	for i, e := range floats.Data {
		if len(e.Embedding) != DefaultDimensions {
			t.Errorf("embedding %d has %d dimensions, want %d", i, len(e.Embedding), DefaultDimensions)
		}
		var norm float64
		for j, x := range e.Embedding {
			norm += float64(x) * float64(x)
			if b64.Data[i].Embedding[j] != x {
				t.Fatalf("embedding %d[%d]: base64 %v, float %v", i, j, b64.Data[i].Embedding[j], x)
			}
		}
		if norm < 0.999 || norm > 1.001 {
			t.Errorf("embedding %d has squared norm %v, want 1", i, norm)
		}
	}
	if sim, _ := floats.Data[0].DotProduct(&floats.Data[2]); sim < 0.9999 {
		t.Errorf("same text: cosine %v, want 1", sim)
	}
	if sim, _ := floats.Data[0].DotProduct(&floats.Data[1]); sim > 0.5 {
		t.Errorf("different texts: cosine %v, want near 0", sim)
	}
	// A text's vector depends on the model and the text only: not on the other inputs of its request.
	alone, err := client.CreateEmbeddings(t.Context(), openai.EmbeddingRequestStrings{
		Input: texts[1:2], Model: "text-embedding-3-small"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(alone.Data[0].Embedding, floats.Data[1].Embedding) ||
		!slices.Equal(Embedding("text-embedding-3-small", texts[1], DefaultDimensions), floats.Data[1].Embedding) {
		t.Error("a text's vector changed with the request it was sent in")
	}
	other := Embedding("text-embedding-3-large", texts[1], DefaultDimensions)
	if slices.Equal(other, floats.Data[1].Embedding) {
		t.Error("two models gave the same vector for a text")
	}
	enc, err := loadEncoding("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, s := range texts {
		want += len(enc.EncodeOrdinary(s))
	}
	if floats.Usage.PromptTokens != want || floats.Usage.TotalTokens != want {
		t.Errorf("usage %+v, want %d prompt and total tokens", floats.Usage, want)
	}

	small, err := client.CreateEmbeddings(t.Context(), openai.EmbeddingRequest{
		Input: "one text", Model: "text-embedding-3-small", Dimensions: 64})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(small.Data[0].Embedding); got != 64 {
		t.Errorf("dimensions 64: got %d", got)
	}

	// Raw shape of the base64 answer.
	resp, body := post(t, ts, "/v1/embeddings", map[string]any{"input": "x", "model": "m", "encoding_format": "base64"}, nil)
	var shape struct {
		Data []struct {
			Embedding any `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &shape); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, body %s: %v", resp.StatusCode, body, err)
	}
	if _, ok := shape.Data[0].Embedding.(string); !ok {
		t.Errorf("base64 embedding is %T, want a string", shape.Data[0].Embedding)
	}
	resp, body = post(t, ts, "/v1/embeddings", map[string]any{"input": "x", "model": "m", "encoding_format": "hex"}, nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("encoding_format hex: status %d (%s), want 400", resp.StatusCode, body)
	}
}

func TestModels(t *testing.T) {
	_, ts := newTestServer(t, Config{Models: []string{"m1", "m2"}})
	list, err := newClient(ts).ListModels(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 2 || list.Models[0].ID != "m1" || list.Models[1].ID != "m2" {
		t.Errorf("models %+v, want m1, m2", list.Models)
	}
}

func TestErrorsAreOpenAIShaped(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	for _, tc := range []struct {
		name, path string
		body       any
		status     int
	}{
		{"no model", "/v1/chat/completions", map[string]any{"messages": []any{map[string]string{"role": "user", "content": "x"}}}, 400},
		{"no messages", "/v1/chat/completions", map[string]any{"model": "m"}, 400},
		{"not json", "/v1/chat/completions", "{", 400},
		{"unknown path", "/v1/completions", map[string]any{}, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, ts, tc.path, tc.body, nil)
			var e struct {
				Error *struct {
					Message string `json:"message"`
					Type    string `json:"type"`
				} `json:"error"`
			}
			if resp.StatusCode != tc.status || json.Unmarshal(body, &e) != nil || e.Error == nil || e.Error.Message == "" {
				t.Errorf("status %d body %s, want %d with an OpenAI error", resp.StatusCode, body, tc.status)
			}
		})
	}
	if got := s.Counters().BadRequests; got != 4 {
		t.Errorf("BadRequests = %d, want 4", got)
	}
}

func TestRequestLog(t *testing.T) {
	var buf bytes.Buffer
	s, ts := newTestServer(t, Config{RequestLog: &buf})
	body := newChatRequest("sim-chat", 7, ipipPrompt)
	for _, cell := range []string{"sim-chat/7/item1/p1", "sim-chat/7/item2/p1"} {
		if resp, b := post(t, ts, "/v1/chat/completions", body, map[string]string{CellHeader: cell}); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	}
	// An entry is complete (Done set, its line written) only after its response was flushed: the client may read
	// the response first. Close waits for the handlers.
	ts.Close()
	log := s.Requests()
	if len(log) != 2 {
		t.Fatalf("log has %d entries, want 2: %+v", len(log), log)
	}
	for i, cell := range []string{"sim-chat/7/item1/p1", "sim-chat/7/item2/p1"} {
		r := log[i]
		if r.Cell != cell || r.Seed != 7 || r.Model != "sim-chat" || r.Status != 200 || r.Endpoint != "/v1/chat/completions" ||
			r.PromptTokens == 0 || r.CompletionTokens == 0 {
			t.Errorf("log[%d] = %+v, want cell %q, seed 7, status 200 with tokens", i, r, cell)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("RequestLog has %d lines, want 2:\n%s", len(lines), buf.String())
	}
	var first Request
	err := json.Unmarshal([]byte(lines[0]), &first)
	if want := log[0]; err != nil || !first.Time.Equal(want.Time) {
		t.Errorf("RequestLog line %s (err %v), want time %v", lines[0], err, want.Time)
	}
	if !first.Done.Equal(log[0].Done) || first.Done.Before(first.Time) {
		t.Errorf("RequestLog line %s, want done %v, not before the arrival", lines[0], log[0].Done)
	}
	first.Time, first.Done = log[0].Time, log[0].Done
	if !reflect.DeepEqual(first, log[0]) {
		t.Errorf("RequestLog line %s (err %v), want %+v", lines[0], err, log[0])
	}
}

func TestConcurrentCalls(t *testing.T) {
	s, ts := newTestServer(t, Config{RPM: 1000, TPM: 1_000_000})
	client := newClient(ts)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			_, err := client.CreateChatCompletion(context.Background(), newChatRequest("sim-chat", i, ipipPrompt))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if c := s.Counters(); c.OK != 16 || len(s.Requests()) != 16 {
		t.Errorf("counters %+v, log %d, want 16 OK", c, len(s.Requests()))
	}
}

func TestContentPartsAndTokenInputs(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	plain := map[string]any{"model": "m", "seed": 2, "messages": []any{
		map[string]any{"role": "user", "content": ipipPrompt}}}
	parts := map[string]any{"model": "m", "seed": 2, "messages": []any{
		map[string]any{"role": "user", "content": []any{
			map[string]string{"type": "text", "text": ipipPrompt[:40]},
			map[string]any{"type": "image_url", "image_url": map[string]string{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngOf(t, 2, 2))}},
			map[string]string{"type": "text", "text": ipipPrompt[40:]},
		}}}}
	var got [2]string
	for i, body := range []any{plain, parts} {
		resp, b := post(t, ts, "/v1/chat/completions", body, nil)
		var r openai.ChatCompletionResponse
		if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d body %s: %v", resp.StatusCode, b, err)
		}
		got[i] = r.Choices[0].Message.Content
	}
	if got[0] != got[1] {
		t.Errorf("string content answered %q, the same text in parts %q", got[0], got[1])
	}

	resp, b := post(t, ts, "/v1/embeddings", map[string]any{"model": "m", "input": [][]int{{1, 2, 3}, {4, 5}}}, nil)
	var e openai.EmbeddingResponse
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 200 || len(e.Data) != 2 || e.Usage.PromptTokens != 5 {
		t.Errorf("token inputs: status %d, %d embeddings, usage %+v (err %v), want 2 embeddings of 5 tokens",
			resp.StatusCode, len(e.Data), e.Usage, err)
	}
}

func TestRequestedAfterAnswer(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const chat = "/v1/chat/completions"
	log := []Request{
		// a: a 500, then answered: nothing asked twice.
		{Time: at(0), Endpoint: chat, Cell: "a", Status: 500},
		{Time: at(10), Endpoint: chat, Cell: "a", Status: 200},
		// b: a malformed 200 is no answer; the second is; a third request after it is a repeat, and so is one
		// listed earlier in the log but arriving later.
		{Time: at(50), Endpoint: chat, Cell: "b", Status: 200},
		{Time: at(0), Endpoint: chat, Cell: "b", Status: 200, Fault: FaultMalformed},
		{Time: at(20), Endpoint: chat, Cell: "b", Status: 200},
		{Time: at(30), Endpoint: chat, Cell: "b", Status: 499},
		// c: answered once (the 200 before it never reached the client); no cell header is ignored.
		{Time: at(1), Endpoint: chat, Cell: "c", Status: 200, Lost: true},
		{Time: at(5), Endpoint: chat, Cell: "c", Status: 200},
		{Time: at(6), Endpoint: chat, Status: 200},
		{Time: at(7), Endpoint: chat, Status: 200},
	}
	got := RequestedAfterAnswer(log)
	if len(got) != 1 || got["b"] != 2 {
		t.Errorf("RequestedAfterAnswer = %v, want b twice", got)
	}
	if log[2].Cell != "b" || !log[2].Time.Equal(at(50)) {
		t.Error("RequestedAfterAnswer reordered its argument")
	}
}

// brokenConn is a ResponseWriter whose connection is gone: every write fails, as after the connection was closed
// while the handler was answering.
type brokenConn struct{ h http.Header }

func (b *brokenConn) Header() http.Header       { return b.h }
func (b *brokenConn) WriteHeader(int)           {}
func (b *brokenConn) Write([]byte) (int, error) { return 0, net.ErrClosed }
func (b *brokenConn) FlushError() error         { return net.ErrClosed }

// TestAnAnswerNotWrittenIsLost: a 200 that could not be written to the connection is logged Lost, so that a
// client asking again is not counted as paying twice; one that was written is not.
func TestAnAnswerNotWrittenIsLost(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","messages":[{"role":"user","content":"Pick 1 or 2."}]}`
	for _, stream := range []bool{false, true} {
		b := body
		if stream {
			b = `{"model":"m","stream":true,"messages":[{"role":"user","content":"Pick 1 or 2."}]}`
		}
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(b))
		r.Header.Set(CellHeader, fmt.Sprintf("broken-%v", stream))
		s.ServeHTTP(&brokenConn{h: http.Header{}}, r)
		r = httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(b))
		r.Header.Set(CellHeader, fmt.Sprintf("whole-%v", stream))
		s.ServeHTTP(httptest.NewRecorder(), r)
	}
	got := map[string]Request{}
	for _, r := range s.Requests() {
		got[r.Cell] = r
	}
	for cell, lost := range map[string]bool{"broken-false": true, "broken-true": true, "whole-false": false, "whole-true": false} {
		r, ok := got[cell]
		if !ok {
			t.Fatalf("no log entry for %s: %+v", cell, got)
		}
		if r.Status != http.StatusOK || r.Lost != lost || r.Answered() == lost || r.Done.IsZero() {
			t.Errorf("%s: status %d, lost %v, answered %v, done %v; want 200, lost %v", cell, r.Status, r.Lost, r.Answered(), r.Done, lost)
		}
	}
}

// TestRefusalsAsARealServer: the simulator refuses what a real OpenAI-compatible server refuses, each as that
// server does. A path without /v1 (a base_url written without it) is a 404 unknown_url naming the path;
// RefuseJSONSchema answers every json_schema request with the same 400 (llama.cpp's server under a chat
// template it cannot apply); ContextWindow answers a longer prompt with a 400 context_length_exceeded that names
// its own count. Each is in the request log.
func TestRefusalsAsARealServer(t *testing.T) {
	s, ts := newTestServer(t, Config{RefuseJSONSchema: true, ContextWindow: 200})
	type apiError struct {
		Error struct {
			Message string  `json:"message"`
			Code    *string `json:"code"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	call := func(path string, body any) (int, apiError) {
		t.Helper()
		resp, b := post(t, ts, path, body, nil)
		var e apiError
		if resp.StatusCode != http.StatusOK {
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("%s: status %d body %s: %v", path, resp.StatusCode, b, err)
			}
		}
		return resp.StatusCode, e
	}
	code := func(e apiError) string {
		if e.Error.Code == nil {
			return ""
		}
		return *e.Error.Code
	}

	short := newChatRequest("sim-chat", 1, ipipPrompt)
	if st, e := call("/chat/completions", short); st != http.StatusNotFound || code(e) != "unknown_url" ||
		e.Error.Message != "Unknown request URL: POST /chat/completions." {
		t.Errorf("POST /chat/completions: %d %+v, want 404 unknown_url naming the path", st, e)
	}
	if st, _ := call("/v1/chat/completions", short); st != http.StatusOK {
		t.Errorf("a text request: status %d, want 200", st)
	}

	schema := func(seed int) openai.ChatCompletionRequest {
		r := newChatRequest("sim-chat", seed, ipipPrompt)
		r.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`), Strict: true}}
		return r
	}
	st1, e1 := call("/v1/chat/completions", schema(1))
	st2, e2 := call("/v1/chat/completions", schema(2))
	if st1 != http.StatusBadRequest || st2 != http.StatusBadRequest || e1.Error.Message != e2.Error.Message ||
		!strings.Contains(e1.Error.Message, "cannot apply response_format json_schema") {
		t.Errorf("json_schema requests: %d %+v, %d %+v; want the same 400 for both", st1, e1, st2, e2)
	}

	long := func(words int) openai.ChatCompletionRequest {
		return newChatRequest("sim-chat", 1, strings.Repeat("word ", words)+ipipPrompt)
	}
	st1, e1 = call("/v1/chat/completions", long(300))
	st2, e2 = call("/v1/chat/completions", long(400))
	if st1 != http.StatusBadRequest || code(e1) != "context_length_exceeded" || e1.Error.Message == e2.Error.Message ||
		!strings.Contains(e1.Error.Message, "maximum context length is 200 tokens. However, your messages resulted in ") {
		t.Errorf("long prompts: %d %+v, %d %+v; want 400 context_length_exceeded, each naming its own count", st1, e1, st2, e2)
	}
	if st, _ := call("/v1/chat/completions", long(100)); st != http.StatusOK {
		t.Errorf("a prompt of %d words under the window: status %d, want 200", 100, st)
	}

	ts.Close()
	var got []string
	for _, r := range s.Requests() {
		got = append(got, fmt.Sprintf("%s %d", r.Endpoint, r.Status))
	}
	want := []string{"/chat/completions 404", "/v1/chat/completions 200", "/v1/chat/completions 400", "/v1/chat/completions 400",
		"/v1/chat/completions 400", "/v1/chat/completions 400", "/v1/chat/completions 200"}
	if !slices.Equal(got, want) {
		t.Errorf("request log %q, want %q", got, want)
	}
}
