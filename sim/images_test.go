package sim

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/silicolab/silico/llm"
)

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The examples of OpenAI's vision guide, and the edges of its scaling.
func TestImageTokens(t *testing.T) { // the accounting lives in llm; the simulator charges it
	for _, tc := range []struct {
		w, h   int
		detail string
		want   int
	}{
		{1024, 1024, "high", 765},  // 768×768: 4 tiles
		{2048, 4096, "high", 1105}, // 1024×2048 → 768×1536: 6 tiles
		{4096, 8192, "low", 85},
		{4096, 8192, "auto", 1105},
		{512, 512, "high", 255}, // never scaled up: 1 tile
		{513, 100, "", 425},     // 2 tiles
	} {
		if got := llm.ImageTokens(tc.w, tc.h, tc.detail); got != tc.want {
			t.Errorf("ImageTokens(%d, %d, %q) = %d, want %d", tc.w, tc.h, tc.detail, got, tc.want)
		}
	}
}

// A request with image parts, inline and by URL, is charged their image tokens on top of its text.
func TestChatWithImages(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	pic := pngOf(t, 1024, 1024)
	imgs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/a.png" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(pic)
	}))
	t.Cleanup(imgs.Close)
	client := newClient(ts)
	text := newChatRequest("gpt-4o-mini", 1, ipipPrompt)
	plain, err := client.CreateChatCompletion(t.Context(), text)
	if err != nil {
		t.Fatal(err)
	}
	withParts := func(urls ...string) openai.ChatCompletionRequest {
		req := newChatRequest("gpt-4o-mini", 1, ipipPrompt)
		last := &req.Messages[len(req.Messages)-1]
		parts := []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: last.Content}}
		for _, u := range urls {
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: u, Detail: openai.ImageURLDetailHigh}})
		}
		last.Content, last.MultiContent = "", parts
		return req
	}
	inline := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic)
	resp, err := client.CreateChatCompletion(t.Context(), withParts(inline, imgs.URL+"/a.png"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Usage.PromptTokens, plain.Usage.PromptTokens+2*765; got != want {
		t.Errorf("prompt tokens with two 1024×1024 pictures = %d, want %d", got, want)
	}
	if _, err := client.CreateChatCompletion(t.Context(), withParts(imgs.URL+"/missing.png")); err == nil {
		t.Error("a picture that cannot be downloaded: want a 400")
	}
	reqs := s.Requests()
	if r := reqs[1]; r.Images != 2 || r.ImageTokens != 1530 {
		t.Errorf("request log: %d images, %d image tokens; want 2, 1530", r.Images, r.ImageTokens)
	}
}
