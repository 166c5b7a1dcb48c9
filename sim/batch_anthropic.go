package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Anthropic's Message Batches in the simulator (/v1/messages/batches: create, retrieve, cancel, list, results):
// each request is a Messages API body, translated to a chat completion for the simulator's chat handler and its
// answer back to a message. What both providers' batches share is in batch.go.

// anthropicStatus maps an OpenAI status onto Anthropic's processing_status.
func anthropicStatus(st string) string {
	switch st {
	case "cancelling":
		return "canceling"
	case "in_progress", "validating":
		return "in_progress"
	}
	return "ended"
}

var anthropicID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// writeAnthropicError sends an Anthropic-shaped error.
func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	writeJSON(w, status, body)
}

// anthropicHeaders checks what every Anthropic request must carry.
func anthropicHeaders(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("anthropic-version") == "" {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return false
	}
	return true
}

type anthropicBatchObject struct {
	ID                string  `json:"id"`
	Type              string  `json:"type"`
	ProcessingStatus  string  `json:"processing_status"`
	RequestCounts     counts  `json:"request_counts"`
	EndedAt           *string `json:"ended_at"`
	CreatedAt         string  `json:"created_at"`
	ExpiresAt         string  `json:"expires_at"`
	ArchivedAt        *string `json:"archived_at"`
	CancelInitiatedAt *string `json:"cancel_initiated_at"`
	ResultsURL        *string `json:"results_url"`
}

type counts struct {
	Processing int `json:"processing"`
	Succeeded  int `json:"succeeded"`
	Errored    int `json:"errored"`
	Canceled   int `json:"canceled"`
	Expired    int `json:"expired"`
}

func (b *batches) handleAnthropicCreate(w http.ResponseWriter, r *http.Request) {
	if !anthropicHeaders(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, int64(b.maxBytes(BatchAnthropic)))
	var req struct {
		Requests []struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "could not read the request: "+err.Error())
		return
	}
	if len(req.Requests) == 0 || len(req.Requests) > b.maxRequests(BatchAnthropic) {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("requests: %d given; want 1 to %d", len(req.Requests), b.maxRequests(BatchAnthropic)))
		return
	}
	now := b.lines.cfg.Now()
	sb := &simBatch{format: BatchAnthropic, endpoint: "/v1/messages", created: now, expires: now.Add(b.cfg.Window)}
	seen := map[string]bool{}
	for i, rq := range req.Requests {
		if !anthropicID.MatchString(rq.CustomID) || seen[rq.CustomID] {
			writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("requests.%d.custom_id: %q must be 1-64 characters of [A-Za-z0-9_-] and unique", i, rq.CustomID))
			return
		}
		seen[rq.CustomID] = true
		// Params are checked when the request runs, as Anthropic does: a bad one errors alone.
		body, model, err := anthropicToChat(rq.Params)
		l := batchLine{customID: rq.CustomID, body: body}
		if err != nil {
			l.refused = err.Error()
		}
		if sb.model == "" {
			sb.model = model
		}
		sb.lines = append(sb.lines, l)
	}
	b.mu.Lock()
	sb.id = b.newID("msgbatch_sim")
	b.batches[sb.id] = sb
	b.order = append(b.order, sb.id)
	b.mu.Unlock()
	if err := b.saveBatch(sb); err != nil {
		writeAnthropicError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	writeObject(w, http.StatusOK, b.anthropicObject(r, sb, now))
}

func (b *batches) anthropicObject(r *http.Request, sb *simBatch, now time.Time) anthropicBatchObject {
	st := sb.status(now, b.cfg)
	n := sb.done(now, b.cfg)
	b.run(sb, n)
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	o := anthropicBatchObject{ID: sb.id, Type: "message_batch", ProcessingStatus: anthropicStatus(st),
		CreatedAt: ts(sb.created), ExpiresAt: ts(sb.expires)}
	sb.mu.Lock()
	for _, res := range sb.results {
		if res.status == http.StatusOK {
			o.RequestCounts.Succeeded++
		} else {
			o.RequestCounts.Errored++
		}
	}
	sb.mu.Unlock()
	rest := len(sb.lines) - n
	if !sb.cancelAt().IsZero() {
		c := ts(sb.cancelAt())
		o.CancelInitiatedAt = &c
	}
	switch {
	case o.ProcessingStatus != "ended":
		o.RequestCounts.Processing = rest
	case st == "cancelled":
		o.RequestCounts.Canceled = rest
	case st == "expired":
		o.RequestCounts.Expired = rest
	}
	if o.ProcessingStatus == "ended" {
		end := now
		switch st {
		case "expired":
			end = sb.expires
		case "cancelled":
			end = sb.cancelAt().Add(b.cfg.CancelTime)
		}
		e := ts(end)
		u := "http://" + r.Host + "/v1/messages/batches/" + sb.id + "/results"
		o.EndedAt, o.ResultsURL = &e, &u
	}
	return o
}

func (b *batches) handleAnthropicRetrieve(w http.ResponseWriter, r *http.Request) {
	if !anthropicHeaders(w, r) {
		return
	}
	sb := b.get(r.PathValue("id"), BatchAnthropic)
	if sb == nil {
		writeAnthropicError(w, http.StatusNotFound, "not_found_error", "No such message batch: "+r.PathValue("id"))
		return
	}
	writeObject(w, http.StatusOK, b.anthropicObject(r, sb, b.lines.cfg.Now()))
}

// handleAnthropicDelete deletes an ended batch, its results with it, as the API does ({"id", "type":
// "message_batch_deleted"}); a batch still in progress cannot be deleted.
func (b *batches) handleAnthropicDelete(w http.ResponseWriter, r *http.Request) {
	if !anthropicHeaders(w, r) {
		return
	}
	sb := b.get(r.PathValue("id"), BatchAnthropic)
	if sb == nil {
		writeAnthropicError(w, http.StatusNotFound, "not_found_error", "No such message batch: "+r.PathValue("id"))
		return
	}
	if !terminal(sb.status(b.lines.cfg.Now(), b.cfg)) {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
			"Message batch "+sb.id+" is still in progress: cancel it first, or wait for it to end")
		return
	}
	if ok, err := b.deleteBatch(sb); err != nil {
		writeAnthropicError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	} else if !ok {
		writeAnthropicError(w, http.StatusNotFound, "not_found_error", "No such message batch: "+sb.id)
		return
	}
	writeObject(w, http.StatusOK, map[string]string{"id": sb.id, "type": "message_batch_deleted"})
}

func (b *batches) handleAnthropicCancel(w http.ResponseWriter, r *http.Request) {
	if !anthropicHeaders(w, r) {
		return
	}
	sb := b.get(r.PathValue("id"), BatchAnthropic)
	if sb == nil {
		writeAnthropicError(w, http.StatusNotFound, "not_found_error", "No such message batch: "+r.PathValue("id"))
		return
	}
	now := b.lines.cfg.Now()
	if !terminal(sb.status(now, b.cfg)) {
		sb.cancel(now)
		if err := b.saveBatch(sb); err != nil {
			writeAnthropicError(w, http.StatusInternalServerError, "api_error", err.Error())
			return
		}
	}
	writeObject(w, http.StatusOK, b.anthropicObject(r, sb, now))
}

func (b *batches) handleAnthropicList(w http.ResponseWriter, r *http.Request) {
	if !anthropicHeaders(w, r) {
		return
	}
	limit, err := pageLimit(r)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	ids, more := b.listPage(BatchAnthropic, r.URL.Query().Get("after_id"), limit)
	now := b.lines.cfg.Now()
	page := struct {
		Data    []anthropicBatchObject `json:"data"`
		HasMore bool                   `json:"has_more"`
		FirstID *string                `json:"first_id"`
		LastID  *string                `json:"last_id"`
	}{Data: []anthropicBatchObject{}, HasMore: more}
	for _, id := range ids {
		page.Data = append(page.Data, b.anthropicObject(r, b.get(id, BatchAnthropic), now))
	}
	if len(ids) > 0 {
		page.FirstID, page.LastID = &ids[0], &ids[len(ids)-1]
	}
	writeObject(w, http.StatusOK, page)
}

func (b *batches) handleAnthropicResults(w http.ResponseWriter, r *http.Request) {
	if !anthropicHeaders(w, r) {
		return
	}
	sb := b.get(r.PathValue("id"), BatchAnthropic)
	if sb == nil {
		writeAnthropicError(w, http.StatusNotFound, "not_found_error", "No such message batch: "+r.PathValue("id"))
		return
	}
	now := b.lines.cfg.Now()
	st := sb.status(now, b.cfg)
	if !terminal(st) {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
			"Results are not available until the batch has ended.")
		return
	}
	b.run(sb, sb.done(now, b.cfg))
	notRun := "expired"
	if st == "cancelled" {
		notRun = "canceled"
	}
	var out bytes.Buffer
	sb.mu.Lock()
	for _, i := range resultOrder(sb.lines) {
		l := sb.lines[i]
		var result any
		switch {
		case i >= len(sb.results):
			result = map[string]string{"type": notRun}
		case b.odd(l.customID):
			result = map[string]string{"type": "pending"}
		case sb.results[i].status == http.StatusOK:
			msg, err := chatToMessage(sb.results[i].body)
			if err != nil {
				result = anthropicErrored(http.StatusInternalServerError, err.Error())
				break
			}
			result = map[string]any{"type": "succeeded", "message": msg}
		default:
			result = anthropicErrored(sb.results[i].status, errorMessage(sb.results[i].body))
		}
		line, _ := json.Marshal(map[string]any{"custom_id": l.customID, "result": result})
		out.Write(append(line, '\n'))
	}
	sb.mu.Unlock()
	w.Header().Set("Content-Type", "application/binary")
	_, _ = w.Write(out.Bytes()) // the client went away otherwise
}

func anthropicErrored(status int, msg string) map[string]any {
	return map[string]any{"type": "errored", "error": map[string]any{"type": "error",
		"error": map[string]string{"type": anthropicErrorType(status), "message": msg}}}
}

// anthropicErrorType is the Anthropic error type sent with status.
func anthropicErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusServiceUnavailable, status == 529:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

func errorMessage(body []byte) string {
	var e errorBody
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(body))
}

// anthropicParams is the part of a Messages API body the simulator reads.
type anthropicParams struct {
	Model         string   `json:"model"`
	MaxTokens     int      `json:"max_tokens"`
	System        any      `json:"system"`
	Temperature   *float64 `json:"temperature"`
	StopSequences []string `json:"stop_sequences"`
	Messages      []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// anthropicToChat translates a Messages API body into the chat completion body the simulator's chat handler
// answers: the system prompt first, text blocks joined, image blocks as image_url parts (base64 sources as data
// URLs). Anthropic has no seed, so none is sent. It refuses what the Messages API refuses: no model, no
// max_tokens, no messages, a role other than user or assistant.
func anthropicToChat(raw json.RawMessage) (body []byte, model string, err error) {
	var p anthropicParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, "", fmt.Errorf("params: %w", err)
	}
	switch {
	case p.Model == "":
		return nil, "", fmt.Errorf("model: Field required")
	case p.MaxTokens <= 0:
		return nil, p.Model, fmt.Errorf("max_tokens: Field required")
	case len(p.Messages) == 0:
		return nil, p.Model, fmt.Errorf("messages: at least one message is required")
	}
	type part struct {
		Type     string     `json:"type"`
		Text     string     `json:"text,omitempty"`
		ImageURL *imagePart `json:"image_url,omitempty"`
	}
	type msg struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	var msgs []msg
	switch s := p.System.(type) {
	case nil:
	case string:
		if s != "" {
			msgs = append(msgs, msg{Role: "system", Content: s})
		}
	default:
		return nil, p.Model, fmt.Errorf("system: the simulator takes a string")
	}
	for i, m := range p.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, p.Model, fmt.Errorf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			msgs = append(msgs, msg{Role: m.Role, Content: text})
			continue
		}
		var blocks []struct {
			Type   string `json:"type"`
			Text   string `json:"text"`
			Source *struct {
				Type      string `json:"type"`
				MediaType string `json:"media_type"`
				Data      string `json:"data"`
				URL       string `json:"url"`
			} `json:"source"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, p.Model, fmt.Errorf("messages.%d.content: a string or a list of blocks", i)
		}
		var parts []part
		for j, bl := range blocks {
			switch {
			case bl.Type == "text":
				parts = append(parts, part{Type: "text", Text: bl.Text})
			case bl.Type == "image" && bl.Source != nil && bl.Source.Type == "base64":
				parts = append(parts, part{Type: "image_url",
					ImageURL: &imagePart{URL: "data:" + bl.Source.MediaType + ";base64," + bl.Source.Data}})
			case bl.Type == "image" && bl.Source != nil && bl.Source.Type == "url":
				parts = append(parts, part{Type: "image_url", ImageURL: &imagePart{URL: bl.Source.URL}})
			default:
				return nil, p.Model, fmt.Errorf("messages.%d.content.%d: block type %q", i, j, bl.Type)
			}
		}
		msgs = append(msgs, msg{Role: m.Role, Content: parts})
	}
	body, err = json.Marshal(map[string]any{"model": p.Model, "max_tokens": p.MaxTokens, "messages": msgs})
	if err != nil {
		return nil, p.Model, fmt.Errorf("params: %w", err)
	}
	return body, p.Model, nil
}

// chatToMessage translates the chat handler's answer into a Messages API message.
func chatToMessage(body []byte) (map[string]any, error) {
	var c chatResponse
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
		return nil, fmt.Errorf("simulator: unreadable answer")
	}
	content := []map[string]string{}
	if t := c.Choices[0].Message.Content; t != nil {
		content = append(content, map[string]string{"type": "text", "text": *t})
	}
	stop := "end_turn"
	switch c.Choices[0].FinishReason {
	case "length":
		stop = "max_tokens"
	case "content_filter":
		stop = "refusal" // Anthropic's stop reason for an answer its safety filter withheld
	}
	return map[string]any{"id": "msg_" + strings.TrimPrefix(c.ID, "chatcmpl-"), "type": "message",
		"role": "assistant", "model": c.Model,
		"content":     content,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": c.Usage.PromptTokens, "output_tokens": c.Usage.CompletionTokens}}, nil
}
