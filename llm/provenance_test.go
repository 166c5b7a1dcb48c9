package llm

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Provenance keeps an identifier as sent and drops whatever is no part of one: space, control characters,
// invalid UTF-8, and anything past MaxProvenance bytes.
func TestProvenance(t *testing.T) {
	long := strings.Repeat("é", MaxProvenance) // two bytes a rune: cut at a rune boundary
	for in, want := range map[string]string{
		"gpt-4o-mini-2024-07-18":        "gpt-4o-mini-2024-07-18",
		"  fp_44709d6fcb\n":             "fp_44709d6fcb",
		"a\x00b\x1b[31mc\u200bd\xffe f": "ab[31mcdef",
		"":                              "",
		long:                            long[:MaxProvenance],
	} {
		if got := Provenance(in); got != want {
			t.Errorf("Provenance(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every reader of an answer keeps the model the provider says answered and OpenAI's system_fingerprint,
// cleaned, and a client redacts them as it redacts the text.
func TestAnswersKeepProvenance(t *testing.T) {
	body := `{"id":"x","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb\n",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Agree"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":1}}`
	r, err := ChatAnswer([]byte(body))
	if err != nil || r.ServedModel != "gpt-4o-mini-2024-07-18" || r.SystemFingerprint != "fp_44709d6fcb" {
		t.Errorf("ChatAnswer = %+v, %v", r, err)
	}
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Replace(body, "fp_44709d6fcb", "fp_"+testKey, 1))
	})
	if r, err := c.Chat(context.Background(), hi()); err != nil || r.ServedModel != "gpt-4o-mini-2024-07-18" ||
		r.SystemFingerprint != "fp_[REDACTED]" {
		t.Errorf("Chat = %+v, %v; want the served model and the fingerprint redacted", r, err)
	}

	ant := `{"type":"message","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"2"}],"usage":{"input_tokens":9,"output_tokens":1}}`
	if r, err := AnthropicAnswer([]byte(ant)); err != nil || r.ServedModel != "claude-sonnet-4-20250514" || r.SystemFingerprint != "" {
		t.Errorf("AnthropicAnswer = %+v, %v", r, err)
	}
	ac := serveAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Replace(ant, "claude-sonnet-4-20250514", antKey, 1))
	})
	if r, err := ac.Chat(context.Background(), antReq()); err != nil || r.ServedModel != "[REDACTED]" {
		t.Errorf("AnthropicClient.Chat = %+v, %v; want the served model redacted", r, err)
	}

	gem := `{"candidates":[{"content":{"role":"model","parts":[{"text":"3"}]},"finishReason":"STOP"}],` +
		`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1},"modelVersion":"gemini-2.5-flash-001"}`
	if r, err := GeminiAnswer([]byte(gem)); err != nil || r.ServedModel != "gemini-2.5-flash-001" {
		t.Errorf("GeminiAnswer = %+v, %v", r, err)
	}
}
