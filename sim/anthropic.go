package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
)

// handleMessages serves Anthropic's Messages API: the params are translated into a chat completion request and
// answered by the chat handler, with its latency, limits and faults, so a model of provider anthropic gets the
// same answers from the simulator as the same messages sent to its chat endpoint. A hang or a drop still closes
// the client's connection: the chat handler's abort panics through this handler as net/http expects.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	if !anthropicHeaders(w, r) {
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "could not read the request: "+err.Error())
		return
	}
	body, _, err := anthropicToChat(raw)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	inner := r.Clone(r.Context())
	inner.Body = io.NopCloser(bytes.NewReader(body))
	inner.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	s.handleChat(rec, inner)

	h := w.Header()
	for _, k := range []string{"Retry-After", "Retry-After-Ms"} {
		if v := rec.Header().Get(k); v != "" {
			h.Set(k, v)
		}
	}
	if rec.Code != http.StatusOK {
		writeAnthropicError(w, rec.Code, anthropicErrorType(rec.Code), errorMessage(rec.Body.Bytes()))
		return
	}
	msg, err := chatToMessage(rec.Body.Bytes())
	if err != nil {
		// A malformed fault: the chat body was cut; cut the message the same way.
		full, _ := json.Marshal(map[string]any{"type": "message", "content": []any{}})
		writeJSON(w, http.StatusOK, full[:len(full)/2])
		return
	}
	out, err := json.Marshal(msg)
	if err != nil {
		writeAnthropicError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	h.Set("Request-Id", "req_sim"+strconv.Itoa(int(s.calls.Load())))
	writeJSON(w, http.StatusOK, out)
}
