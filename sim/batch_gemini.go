package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Gemini's API in the simulator, under /v1beta: its OpenAI-compatible chat endpoint (/v1beta/openai/chat/completions,
// the chat handler itself) and its Batch API (models/{model}:batchGenerateContent; batches get, list and :cancel;
// the Files API's resumable upload under /upload/v1beta/files, its listing, and downloads under
// /download/v1beta/files/{file}:download). A batch's requests are GenerateContentRequests, translated to chat
// completions for the line server and their answers back to GenerateContentResponses, so a model of provider gemini
// gets the same answers in both modes. What all the batch formats share is in batch.go.

// geminiInlineMax is the largest create request whose requests may be inline, as Gemini documents it (20 MB).
const geminiInlineMax = 20 << 20

// geminiError sends a Google-shaped error: {"error": {"code": status, "message": ..., "status": ...}}.
func geminiError(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": msg,
		"status": geminiStatusName(status)}})
	writeJSON(w, status, body)
}

// geminiStatusName is the canonical status name an HTTP status is sent with.
func geminiStatusName(status int) string {
	switch {
	case status == http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case status == http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case status == http.StatusForbidden:
		return "PERMISSION_DENIED"
	case status == http.StatusNotFound:
		return "NOT_FOUND"
	case status == http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case status == http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case status >= 500:
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// geminiCanonical is the canonical (gRPC) code and name of a line's failure of HTTP status, as a batch result's
// status object carries them.
func geminiCanonical(status int) (int, string) {
	switch {
	case status == http.StatusBadRequest:
		return 3, "INVALID_ARGUMENT"
	case status == http.StatusTooManyRequests:
		return 8, "RESOURCE_EXHAUSTED"
	case status == http.StatusServiceUnavailable:
		return 14, "UNAVAILABLE"
	case status >= 500:
		return 13, "INTERNAL"
	case status == http.StatusUnauthorized:
		return 16, "UNAUTHENTICATED"
	case status == http.StatusForbidden:
		return 7, "PERMISSION_DENIED"
	case status == http.StatusNotFound:
		return 5, "NOT_FOUND"
	}
	return 9, "FAILED_PRECONDITION"
}

// geminiState is the Gemini state of a batch of OpenAI status st (Gemini has no cancelling state: a batch being
// cancelled is still running), by its BATCH_STATE_* name, or with job by the JOB_STATE_* name of Google's SDKs
// and Vertex AI.
func geminiState(st string, job bool) string {
	name := "RUNNING"
	switch st {
	case "completed":
		name = "SUCCEEDED"
	case "failed":
		name = "FAILED"
	case "cancelled":
		name = "CANCELLED"
	case "expired":
		name = "EXPIRED"
	}
	if job {
		return "JOB_STATE_" + name
	}
	return "BATCH_STATE_" + name
}

// geminiRequestBody is the part of a GenerateContentRequest the simulator reads.
type geminiRequestBody struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []geminiPart `json:"parts"`
	} `json:"systemInstruction"`
	GenerationConfig *struct {
		Temperature        *float64        `json:"temperature"`
		TopP               *float64        `json:"topP"`
		MaxOutputTokens    int             `json:"maxOutputTokens"`
		StopSequences      []string        `json:"stopSequences"`
		Seed               *int64          `json:"seed"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

type geminiPart struct {
	Text       *string `json:"text"`
	InlineData *struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData"`
	FileData *struct {
		FileURI string `json:"fileUri"`
	} `json:"fileData"`
}

// geminiToChat translates a GenerateContentRequest of model into the chat completion body the chat handler
// answers: each part of the system instruction a system message, user and model contents user and assistant
// messages (one text part as a string, else parts with pictures as image_url), the generation config's seed,
// maxOutputTokens and stop sequences as OpenAI's, responseMimeType application/json as response_format (a schema
// as json_schema). It refuses what Gemini refuses: no contents, a role other than user or model, a part that is
// neither text nor a picture.
func geminiToChat(model string, raw json.RawMessage) ([]byte, error) {
	var g geminiRequestBody
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	if len(g.Contents) == 0 {
		return nil, fmt.Errorf("contents: must not be empty")
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
	if si := g.SystemInstruction; si != nil {
		for j, p := range si.Parts {
			if p.Text == nil {
				return nil, fmt.Errorf("systemInstruction.parts[%d]: only text", j)
			}
			msgs = append(msgs, msg{Role: "system", Content: *p.Text})
		}
	}
	for i, c := range g.Contents {
		role := "user"
		switch c.Role {
		case "", "user":
		case "model":
			role = "assistant"
		default:
			return nil, fmt.Errorf("contents[%d].role: %q (want user or model)", i, c.Role)
		}
		if len(c.Parts) == 1 && c.Parts[0].Text != nil {
			msgs = append(msgs, msg{Role: role, Content: *c.Parts[0].Text})
			continue
		}
		var parts []part
		for j, p := range c.Parts {
			switch {
			case p.Text != nil:
				parts = append(parts, part{Type: "text", Text: *p.Text})
			case p.InlineData != nil:
				parts = append(parts, part{Type: "image_url",
					ImageURL: &imagePart{URL: "data:" + p.InlineData.MimeType + ";base64," + p.InlineData.Data}})
			case p.FileData != nil:
				parts = append(parts, part{Type: "image_url", ImageURL: &imagePart{URL: p.FileData.FileURI}})
			default:
				return nil, fmt.Errorf("contents[%d].parts[%d]: neither text nor a picture", i, j)
			}
		}
		msgs = append(msgs, msg{Role: role, Content: parts})
	}
	body := map[string]any{"model": model, "messages": msgs}
	if gc := g.GenerationConfig; gc != nil {
		if gc.Seed != nil {
			body["seed"] = *gc.Seed
		}
		if gc.MaxOutputTokens > 0 {
			body["max_tokens"] = gc.MaxOutputTokens
		}
		if gc.Temperature != nil {
			body["temperature"] = *gc.Temperature
		}
		if gc.TopP != nil {
			body["top_p"] = *gc.TopP
		}
		if len(gc.StopSequences) > 0 {
			body["stop"] = gc.StopSequences
		}
		switch {
		case gc.ResponseMimeType == "application/json" && len(gc.ResponseJSONSchema) > 0:
			body["response_format"] = map[string]any{"type": "json_schema",
				"json_schema": map[string]any{"name": "response", "schema": gc.ResponseJSONSchema}}
		case gc.ResponseMimeType == "application/json":
			body["response_format"] = map[string]string{"type": "json_object"}
		}
	}
	return json.Marshal(body)
}

// chatToGemini translates the chat handler's answer into a GenerateContentResponse.
func chatToGemini(body []byte) (map[string]any, error) {
	var c chatResponse
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
		return nil, fmt.Errorf("simulator: unreadable answer")
	}
	parts := []map[string]string{}
	if t := c.Choices[0].Message.Content; t != nil {
		parts = append(parts, map[string]string{"text": *t})
	}
	finish := "STOP"
	switch c.Choices[0].FinishReason {
	case "length":
		finish = "MAX_TOKENS"
	case "content_filter":
		finish = "SAFETY"
	}
	u := c.Usage
	return map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts},
			"finishReason": finish, "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": u.PromptTokens, "candidatesTokenCount": u.CompletionTokens,
			"totalTokenCount": u.PromptTokens + u.CompletionTokens},
		"modelVersion": c.Model, "responseId": strings.TrimPrefix(c.ID, "chatcmpl-")}, nil
}

func (s *Server) registerGemini() {
	b := s.batches
	s.mux.HandleFunc("POST /v1beta/models/{call}", b.handleGeminiCreate)
	s.mux.HandleFunc("GET /v1beta/batches", b.handleGeminiList)
	s.mux.HandleFunc("GET /v1beta/batches/{id}", b.handleGeminiGet)
	s.mux.HandleFunc("POST /v1beta/batches/{call}", b.handleGeminiCancel)
	s.mux.HandleFunc("DELETE /v1beta/batches/{id}", b.handleGeminiDelete)
	s.mux.HandleFunc("DELETE /v1beta/files/{id}", b.handleGeminiFileDelete)
	s.mux.HandleFunc("POST /upload/v1beta/files", b.handleGeminiUpload)
	s.mux.HandleFunc("GET /v1beta/files", b.handleGeminiFiles)
	s.mux.HandleFunc("GET /download/v1beta/files/{call}", b.handleGeminiDownload)
}

// geminiKey refuses a request that carries its key in the URL: a key there reaches every log on the way.
func geminiKey(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Query().Has("key") {
		geminiError(w, http.StatusBadRequest, "the simulator takes the API key only in the x-goog-api-key header")
		return false
	}
	return true
}

func (b *batches) handleGeminiCreate(w http.ResponseWriter, r *http.Request) {
	if !geminiKey(w, r) {
		return
	}
	model, ok := strings.CutSuffix(r.PathValue("call"), ":batchGenerateContent")
	if !ok || model == "" {
		geminiError(w, http.StatusNotFound, "the simulator serves models/{model}:batchGenerateContent")
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(b.maxBytes(BatchGemini))))
	if err != nil {
		geminiError(w, http.StatusBadRequest, "could not read the request: "+err.Error())
		return
	}
	var req struct {
		Batch struct {
			DisplayName string `json:"displayName"`
			InputConfig struct {
				Requests *struct {
					Requests []struct {
						Request  json.RawMessage `json:"request"`
						Metadata struct {
							Key string `json:"key"`
						} `json:"metadata"`
					} `json:"requests"`
				} `json:"requests"`
				FileName string `json:"fileName"`
			} `json:"inputConfig"`
		} `json:"batch"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		geminiError(w, http.StatusBadRequest, "could not read the request: "+err.Error())
		return
	}
	in := req.Batch.InputConfig
	type keyed struct {
		key     string
		request json.RawMessage
	}
	var reqs []keyed
	switch {
	case req.Batch.DisplayName == "":
		geminiError(w, http.StatusBadRequest, "batch.display_name is required")
		return
	case in.Requests != nil && in.FileName != "":
		geminiError(w, http.StatusBadRequest, "batch.input_config: give requests or file_name, not both")
		return
	case in.Requests != nil:
		if len(raw) > geminiInlineMax {
			geminiError(w, http.StatusBadRequest, fmt.Sprintf("request payload of %d bytes: inline requests are limited to %d; upload a file", len(raw), geminiInlineMax))
			return
		}
		for _, rq := range in.Requests.Requests {
			reqs = append(reqs, keyed{key: rq.Metadata.Key, request: rq.Request})
		}
	case in.FileName != "":
		b.mu.Lock()
		f := b.gfiles[in.FileName]
		b.mu.Unlock()
		if f == nil {
			geminiError(w, http.StatusNotFound, "no such file: "+in.FileName)
			return
		}
		for n, line := range bytes.Split(f.data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var l struct {
				Key     string          `json:"key"`
				Request json.RawMessage `json:"request"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				geminiError(w, http.StatusBadRequest, fmt.Sprintf("%s line %d: %v", in.FileName, n+1, err))
				return
			}
			reqs = append(reqs, keyed{key: l.Key, request: l.Request})
		}
	default:
		geminiError(w, http.StatusBadRequest, "batch.input_config: requests or file_name is required")
		return
	}
	if len(reqs) == 0 || len(reqs) > b.maxRequests(BatchGemini) {
		geminiError(w, http.StatusBadRequest, fmt.Sprintf("%d requests; want 1 to %d", len(reqs), b.maxRequests(BatchGemini)))
		return
	}
	now := b.lines.cfg.Now()
	sb := &simBatch{format: BatchGemini, endpoint: "/v1beta/models/" + model + ":generateContent", model: model,
		created: now, expires: now.Add(b.cfg.Window), inputFileID: in.FileName,
		metadata: map[string]string{"display_name": req.Batch.DisplayName}}
	seen := map[string]bool{}
	for i, rq := range reqs {
		// Keys are optional at Gemini; the simulator wants them, unique, since results are matched by them.
		if rq.key == "" || seen[rq.key] {
			geminiError(w, http.StatusBadRequest, fmt.Sprintf("request %d: key %q: the simulator wants a unique key for every request", i, rq.key))
			return
		}
		seen[rq.key] = true
		// A request is checked when it runs, as for the other formats: a bad one fails alone.
		body, err := geminiToChat(model, rq.request)
		l := batchLine{customID: rq.key, body: body}
		if err != nil {
			l.refused = err.Error()
		}
		sb.lines = append(sb.lines, l)
	}
	b.mu.Lock()
	sb.id = b.newID("batches/sim-gemini-")
	b.batches[sb.id] = sb
	b.order = append(b.order, sb.id)
	b.mu.Unlock()
	if err := b.saveBatch(sb); err != nil {
		geminiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	b.writeGemini(w, sb, now, false)
}

// geminiObject is the operation of batch sb at now, without its inline responses.
func (b *batches) geminiObject(sb *simBatch, now time.Time) map[string]any {
	st := sb.status(now, b.cfg)
	n := sb.done(now, b.cfg)
	b.run(sb, n)
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	ok, failed := 0, 0
	sb.mu.Lock()
	for _, res := range sb.results {
		if res.status == http.StatusOK {
			ok++
		} else {
			failed++
		}
	}
	sb.mu.Unlock()
	md := map[string]any{
		"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
		"name":  sb.id, "displayName": sb.metadata["display_name"], "model": "models/" + sb.model,
		"state": geminiState(st, b.cfg.GeminiJobStates), "createTime": ts(sb.created), "updateTime": ts(now),
		"batchStats": map[string]string{"requestCount": strconv.Itoa(len(sb.lines)),
			"successfulRequestCount": strconv.Itoa(ok), "failedRequestCount": strconv.Itoa(failed),
			"pendingRequestCount": strconv.Itoa(len(sb.lines) - n)},
	}
	if sb.inputFileID != "" {
		md["inputConfig"] = map[string]string{"fileName": sb.inputFileID}
	}
	op := map[string]any{"name": sb.id, "metadata": md, "done": terminal(st)}
	if terminal(st) {
		md["endTime"] = ts(now)
		if sb.inputFileID != "" {
			md["output"] = map[string]string{"responsesFile": geminiResponsesFile(sb.id)}
		}
	}
	return op
}

// geminiResponsesFile is the name of the responses file of a file batch.
func geminiResponsesFile(id string) string {
	return "files/responses-" + strings.TrimPrefix(id, "batches/")
}

// writeGemini sends batch sb's operation; with responses, an ended inline batch's responses under
// response.inlinedResponses, one a line, so that a reader can stream them.
func (b *batches) writeGemini(w http.ResponseWriter, sb *simBatch, now time.Time, responses bool) {
	op := b.geminiObject(sb, now)
	head, err := json.Marshal(op)
	if err != nil {
		geminiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !responses || !op["done"].(bool) {
		writeJSON(w, http.StatusOK, head)
		return
	}
	out := bytes.NewBuffer(head[:len(head)-1]) // without its closing brace
	if sb.inputFileID != "" {
		out.WriteString(`,"response":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput","responsesFile":`)
		name, _ := json.Marshal(geminiResponsesFile(sb.id))
		out.Write(name)
		out.WriteString("}}")
		writeJSON(w, http.StatusOK, out.Bytes())
		return
	}
	out.WriteString(`,"response":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput","inlinedResponses":{"inlinedResponses":[` + "\n")
	for i := range sb.lines {
		if i > 0 {
			out.WriteString(",\n")
		}
		item, _ := json.Marshal(b.geminiResult(sb, i, now, true)) // maps of strings and numbers always encode
		out.Write(item)
	}
	out.WriteString("\n]}}}")
	writeJSON(w, http.StatusOK, out.Bytes())
}

// geminiResult is the result of line i of an ended batch: inline ({"response"|"error", "metadata": {"key"}}) or a
// line of its responses file ({"key", "response"|"error"}). Lines that never ran are CANCELLED or
// DEADLINE_EXCEEDED.
func (b *batches) geminiResult(sb *simBatch, i int, now time.Time, inline bool) map[string]any {
	l := sb.lines[i]
	out := map[string]any{}
	if inline {
		out["metadata"] = map[string]string{"key": l.customID}
	} else {
		out["key"] = l.customID
	}
	sb.mu.Lock()
	var res *lineResult
	if i < len(sb.results) {
		r := sb.results[i]
		res = &r
	}
	sb.mu.Unlock()
	status := func(code int, msg, name string) {
		st := map[string]any{"code": code, "message": msg, "status": name}
		switch b.cfg.GeminiStatusShape {
		case GeminiStatusField:
			out["status"] = map[string]any{"code": code, "message": msg, "details": []any{}}
		case GeminiStatusTop:
			maps.Copy(out, st)
		default:
			out["error"] = st
		}
	}
	fail := func(httpStatus int, msg string) {
		code, name := geminiCanonical(httpStatus)
		status(code, msg, name)
	}
	switch {
	case res != nil && b.odd(l.customID):
		out["outcome"] = "unknown"
	case res == nil && sb.status(now, b.cfg) == "cancelled":
		status(1, "The batch was cancelled before this request ran.", "CANCELLED")
	case res == nil:
		status(4, "The batch expired before this request ran.", "DEADLINE_EXCEEDED")
	case res.status == http.StatusOK:
		resp, err := chatToGemini(res.body)
		if err != nil {
			fail(http.StatusInternalServerError, err.Error())
			break
		}
		out["response"] = resp
	default:
		fail(res.status, errorMessage(res.body))
	}
	return out
}

func (b *batches) geminiBatch(w http.ResponseWriter, id string) *simBatch {
	sb := b.get("batches/"+id, BatchGemini)
	if sb == nil {
		geminiError(w, http.StatusNotFound, "no such batch: batches/"+id)
	}
	return sb
}

func (b *batches) handleGeminiGet(w http.ResponseWriter, r *http.Request) {
	if !geminiKey(w, r) {
		return
	}
	sb := b.geminiBatch(w, r.PathValue("id"))
	if sb == nil {
		return
	}
	// A partial response ("fields") that leaves out the response is all the simulator implements of the
	// parameter: what a poll asks for.
	fields := r.URL.Query().Get("fields")
	b.writeGemini(w, sb, b.lines.cfg.Now(), fields == "" || strings.Contains(fields, "response"))
}

// handleGeminiDelete deletes an ended batch, its inline answers with it; one still running is refused.
func (b *batches) handleGeminiDelete(w http.ResponseWriter, r *http.Request) {
	if !geminiKey(w, r) {
		return
	}
	sb := b.geminiBatch(w, r.PathValue("id"))
	if sb == nil {
		return
	}
	if !terminal(sb.status(b.lines.cfg.Now(), b.cfg)) {
		geminiError(w, http.StatusBadRequest, "the batch is still running: cancel it first, or wait for it to end")
		return
	}
	if ok, err := b.deleteBatch(sb); err != nil {
		geminiError(w, http.StatusInternalServerError, err.Error())
		return
	} else if !ok {
		geminiError(w, http.StatusNotFound, "no such batch: "+sb.id)
		return
	}
	writeJSON(w, http.StatusOK, []byte("{}"))
}

// handleGeminiFileDelete deletes a file of Gemini's Files API (an upload or a batch's responses).
func (b *batches) handleGeminiFileDelete(w http.ResponseWriter, r *http.Request) {
	if !geminiKey(w, r) {
		return
	}
	name := "files/" + r.PathValue("id")
	if ok, err := b.deleteFile(b.gfiles, name); err != nil {
		geminiError(w, http.StatusInternalServerError, err.Error())
		return
	} else if !ok {
		geminiError(w, http.StatusNotFound, "no such file: "+name)
		return
	}
	writeJSON(w, http.StatusOK, []byte("{}"))
}

func (b *batches) handleGeminiCancel(w http.ResponseWriter, r *http.Request) {
	if !geminiKey(w, r) {
		return
	}
	id, ok := strings.CutSuffix(r.PathValue("call"), ":cancel")
	if !ok {
		geminiError(w, http.StatusNotFound, "the simulator serves batches/{batch}:cancel")
		return
	}
	sb := b.geminiBatch(w, id)
	if sb == nil {
		return
	}
	now := b.lines.cfg.Now()
	if terminal(sb.status(now, b.cfg)) {
		geminiError(w, http.StatusBadRequest, "the batch has ended and cannot be cancelled")
		return
	}
	sb.cancel(now)
	if err := b.saveBatch(sb); err != nil {
		geminiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, []byte("{}"))
}

func (b *batches) handleGeminiList(w http.ResponseWriter, r *http.Request) {
	if !geminiKey(w, r) {
		return
	}
	limit := 50
	if s := r.URL.Query().Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			geminiError(w, http.StatusBadRequest, fmt.Sprintf("pageSize %q: want 1 to 1000", s))
			return
		}
		limit = n
	}
	now := b.lines.cfg.Now()
	ids, more := b.listPage(BatchGemini, r.URL.Query().Get("pageToken"), limit)
	page := map[string]any{}
	var ops []any
	for _, id := range ids {
		sb := b.get(id, BatchGemini)
		// The listing lags behind creates by ListLag, as a real one may.
		if now.Sub(sb.created) < b.cfg.ListLag {
			continue
		}
		ops = append(ops, b.geminiObject(sb, now))
	}
	if len(ops) > 0 {
		page["operations"] = ops
	}
	if more && len(ids) > 0 {
		page["nextPageToken"] = ids[len(ids)-1]
	}
	writeObject(w, http.StatusOK, page)
}

func (b *batches) handleGeminiUpload(w http.ResponseWriter, r *http.Request) {
	if !geminiKey(w, r) {
		return
	}
	if id := r.URL.Query().Get("upload_id"); id != "" {
		b.geminiFinishUpload(w, r, id)
		return
	}
	if r.Header.Get("X-Goog-Upload-Protocol") != "resumable" || r.Header.Get("X-Goog-Upload-Command") != "start" {
		geminiError(w, http.StatusBadRequest, "the simulator takes resumable uploads: X-Goog-Upload-Protocol resumable, command start")
		return
	}
	size, err := strconv.Atoi(r.Header.Get("X-Goog-Upload-Header-Content-Length"))
	if err != nil || size <= 0 {
		geminiError(w, http.StatusBadRequest, "X-Goog-Upload-Header-Content-Length: want the file's size")
		return
	}
	var meta struct {
		File struct {
			DisplayName string `json:"displayName"`
		} `json:"file"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&meta); err != nil {
		geminiError(w, http.StatusBadRequest, "could not read the file's metadata: "+err.Error())
		return
	}
	b.mu.Lock()
	id := b.newID("up")
	b.uploads[id] = pendingUpload{name: meta.File.DisplayName, size: size}
	b.mu.Unlock()
	w.Header().Set("X-Goog-Upload-URL", "http://"+r.Host+"/upload/v1beta/files?upload_id="+id)
	w.Header().Set("X-Goog-Upload-Status", "active")
	writeJSON(w, http.StatusOK, []byte("{}"))
}

// pendingUpload is an upload started and not finished.
type pendingUpload struct {
	name string
	size int
}

func (b *batches) geminiFinishUpload(w http.ResponseWriter, r *http.Request, id string) {
	if c := r.Header.Get("X-Goog-Upload-Command"); c != "upload, finalize" || r.Header.Get("X-Goog-Upload-Offset") != "0" {
		geminiError(w, http.StatusBadRequest, "the simulator takes a file's bytes in one request: command \"upload, finalize\" at offset 0")
		return
	}
	b.mu.Lock()
	up, ok := b.uploads[id]
	b.mu.Unlock()
	if !ok {
		geminiError(w, http.StatusNotFound, "no such upload: "+id)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(b.maxBytes(BatchGemini))))
	if err != nil || len(data) != up.size {
		geminiError(w, http.StatusBadRequest, fmt.Sprintf("the upload's bytes (%d) are not the size announced (%d)", len(data), up.size))
		return
	}
	now := b.lines.cfg.Now()
	b.mu.Lock()
	delete(b.uploads, id)
	f := &simFile{id: b.newID("files/sim-"), name: up.name, purpose: "gemini", created: now, data: data}
	b.gfiles[f.id] = f
	b.uploaded = append(b.uploaded, File{ID: f.id, Name: f.name, Purpose: f.purpose, Bytes: len(data), Created: now})
	b.mu.Unlock()
	if err := b.saveFile(f, true); err != nil {
		geminiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeObject(w, http.StatusOK, map[string]any{"file": geminiFileObject(f)})
}

func geminiFileObject(f *simFile) map[string]string {
	return map[string]string{"name": f.id, "displayName": f.name, "mimeType": "application/jsonl",
		"sizeBytes": strconv.Itoa(len(f.data)), "createTime": f.created.UTC().Format(time.RFC3339Nano), "state": "ACTIVE"}
}

func (b *batches) handleGeminiFiles(w http.ResponseWriter, r *http.Request) {
	if !geminiKey(w, r) {
		return
	}
	b.mu.Lock()
	files := []map[string]string{}
	for _, f := range b.gfiles {
		files = append(files, geminiFileObject(f))
	}
	b.mu.Unlock()
	// One page: the simulator holds few files.
	writeObject(w, http.StatusOK, map[string]any{"files": sortedBy(files, "name")})
}

func sortedBy(list []map[string]string, key string) []map[string]string {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j][key] < list[j-1][key]; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
	return list
}

func (b *batches) handleGeminiDownload(w http.ResponseWriter, r *http.Request) {
	if !geminiKey(w, r) {
		return
	}
	name, ok := strings.CutSuffix(r.PathValue("call"), ":download")
	if !ok || r.URL.Query().Get("alt") != "media" {
		geminiError(w, http.StatusNotFound, "the simulator serves files/{file}:download?alt=media")
		return
	}
	var data []byte
	if id, isResult := strings.CutPrefix(name, "responses-"); isResult {
		sb := b.get("batches/"+id, BatchGemini)
		now := b.lines.cfg.Now()
		if sb == nil || !terminal(sb.status(now, b.cfg)) {
			geminiError(w, http.StatusNotFound, "no such file: files/"+name)
			return
		}
		b.run(sb, sb.done(now, b.cfg))
		var out bytes.Buffer
		for _, i := range resultOrder(sb.lines) {
			line, _ := json.Marshal(b.geminiResult(sb, i, now, false))
			out.Write(append(line, '\n'))
		}
		data = out.Bytes()
	} else {
		b.mu.Lock()
		f := b.gfiles["files/"+name]
		b.mu.Unlock()
		if f == nil {
			geminiError(w, http.StatusNotFound, "no such file: files/"+name)
			return
		}
		data = f.data
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data) // the client went away otherwise
}
