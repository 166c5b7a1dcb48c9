package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// provenanceOf sends a chat request for model with seed to path and returns the answer's model and
// system_fingerprint.
func provenanceOf(t *testing.T, s *Server, path, model string, seed int) (string, string) {
	t.Helper()
	b, _ := json.Marshal(chatBody(model, seed, ipipPrompt, nil))
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(b)))
	var r struct {
		Model             string `json:"model"`
		SystemFingerprint string `json:"system_fingerprint"`
	}
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &r) != nil {
		t.Fatalf("%s: status %d: %s", path, w.Code, w.Body)
	}
	return r.Model, r.SystemFingerprint
}

// A chat answer names a dated snapshot of the model asked for and a fingerprint (none on Gemini's
// OpenAI-compatible path), both configurable, and the seeds from SnapshotChange.FromSeed on get the second
// snapshot; the Messages API's answer names the same model.
func TestServedModel(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if m, fp := provenanceOf(t, s, "/v1/chat/completions", "sim-chat", 1); m != "sim-chat"+DefaultServedModelSuffix || fp != DefaultSystemFingerprint {
		t.Errorf("default provenance %q, %q", m, fp)
	}
	if m, fp := provenanceOf(t, s, "/v1beta/openai/chat/completions", "gemini-x", 1); m != "gemini-x"+DefaultServedModelSuffix || fp != "" {
		t.Errorf("Gemini's OpenAI-compatible path: %q, %q; want no fingerprint", m, fp)
	}
	s, err = New(Config{ServedModel: "snap-a", SystemFingerprint: "fp_a", SnapshotChange: &SnapshotChange{FromSeed: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for seed, want := range map[int][2]string{1: {"snap-a", "fp_a"}, 2: {"snap-a", "fp_a"},
		3: {"sim-chat" + DefaultChangedSuffix, DefaultChangedFingerprint}, 9: {"sim-chat" + DefaultChangedSuffix, DefaultChangedFingerprint}} {
		if m, fp := provenanceOf(t, s, "/v1/chat/completions", "sim-chat", seed); m != want[0] || fp != want[1] {
			t.Errorf("seed %d: %q, %q; want %q", seed, m, fp, want)
		}
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	code, body := anthropic(t, ts, http.MethodPost, "/v1/messages", messagesParams(0), true)
	var msg struct {
		Model string `json:"model"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &msg) != nil || msg.Model != "snap-a" {
		t.Errorf("Messages API answer %d %s; want model snap-a", code, body)
	}
}
