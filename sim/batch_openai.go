package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OpenAI's batch API in the simulator: Files (/v1/files: upload, retrieve, list, content) and Batches
// (/v1/batches: create, retrieve, cancel, list), whose input and output are JSONL files. What both providers'
// batches share is in batch.go.

// --- Files ---

type fileObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int    `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
}

func (f *simFile) object() fileObject {
	return fileObject{ID: f.id, Object: "file", Bytes: len(f.data), CreatedAt: f.created.Unix(), Filename: f.name,
		Purpose: f.purpose, Status: "processed"}
}

func (b *batches) handleUpload(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, int64(b.maxBytes(BatchOpenAI))+1<<20)
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "could not read the upload: "+err.Error())
		return
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	purpose := r.FormValue("purpose")
	if purpose == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "purpose", "missing purpose")
		return
	}
	f, hdr, err := r.FormFile("file")
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "missing file")
		return
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(f)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "could not read the file: "+err.Error())
		return
	}
	if purpose == "batch" && len(data) > b.maxBytes(BatchOpenAI) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file",
			fmt.Sprintf("a batch input file may be at most %d bytes; this one is %d", b.maxBytes(BatchOpenAI), len(data)))
		return
	}
	b.mu.Lock()
	sf := &simFile{id: b.newID("file-sim"), name: hdr.Filename, purpose: purpose, created: b.lines.cfg.Now(), data: data}
	b.files[sf.id] = sf
	if purpose == "batch" {
		b.uploaded = append(b.uploaded, File{ID: sf.id, Name: sf.name, Purpose: sf.purpose, Bytes: len(data), Created: sf.created})
	}
	b.mu.Unlock()
	if err := b.saveFile(sf, false); err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
		return
	}
	writeObject(w, http.StatusOK, sf.object())
}

func (b *batches) file(w http.ResponseWriter, r *http.Request) *simFile {
	b.mu.Lock()
	f := b.files[r.PathValue("id")]
	b.mu.Unlock()
	if f == nil {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "id", "No such File object: "+r.PathValue("id"))
	}
	return f
}

func (b *batches) handleFile(w http.ResponseWriter, r *http.Request) {
	if f := b.file(w, r); f != nil {
		writeObject(w, http.StatusOK, f.object())
	}
}

func (b *batches) handleFiles(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	list := struct {
		Object string       `json:"object"`
		Data   []fileObject `json:"data"`
	}{Object: "list", Data: make([]fileObject, 0, len(b.files))}
	for _, f := range b.files {
		list.Data = append(list.Data, f.object())
	}
	b.mu.Unlock()
	slices.SortFunc(list.Data, func(x, y fileObject) int { return strings.Compare(x.ID, y.ID) })
	writeObject(w, http.StatusOK, list)
}

// handleFileDelete deletes a file, as the API does: {"id", "object": "file", "deleted": true}, or 404.
func (b *batches) handleFileDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if ok, err := b.deleteFile(b.files, id); err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
		return
	} else if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "id", "No such File object: "+id)
		return
	}
	writeObject(w, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
}

func (b *batches) handleFileContent(w http.ResponseWriter, r *http.Request) {
	f := b.file(w, r)
	if f == nil {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	_, _ = w.Write(f.data) // the client went away otherwise
}

// --- Batches ---

type batchCreate struct {
	InputFileID      string         `json:"input_file_id"`
	Endpoint         string         `json:"endpoint"`
	CompletionWindow string         `json:"completion_window"`
	Metadata         map[string]any `json:"metadata"`
}

type batchObject struct {
	ID               string  `json:"id"`
	Object           string  `json:"object"`
	Endpoint         string  `json:"endpoint"`
	Errors           *errs   `json:"errors"`
	InputFileID      string  `json:"input_file_id"`
	CompletionWindow string  `json:"completion_window"`
	Status           string  `json:"status"`
	OutputFileID     *string `json:"output_file_id"`
	ErrorFileID      *string `json:"error_file_id"`
	CreatedAt        int64   `json:"created_at"`
	InProgressAt     *int64  `json:"in_progress_at"`
	ExpiresAt        *int64  `json:"expires_at"`
	CompletedAt      *int64  `json:"completed_at"`
	FailedAt         *int64  `json:"failed_at"`
	ExpiredAt        *int64  `json:"expired_at"`
	CancellingAt     *int64  `json:"cancelling_at"`
	CancelledAt      *int64  `json:"cancelled_at"`
	RequestCounts    struct {
		Total     int `json:"total"`
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"request_counts"`
	Metadata map[string]string `json:"metadata"`
}

type errs struct {
	Object string                 `json:"object"`
	Data   []batchValidationError `json:"data"`
}

type openAIInputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

func (b *batches) handleCreate(w http.ResponseWriter, r *http.Request) {
	var req batchCreate
	if err := decode(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "", err.Error())
		return
	}
	if req.Endpoint != "/v1/chat/completions" && req.Endpoint != "/v1/embeddings" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "endpoint",
			fmt.Sprintf("endpoint %q: the simulator batches /v1/chat/completions and /v1/embeddings", req.Endpoint))
		return
	}
	if req.CompletionWindow != "24h" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "completion_window", "completion_window must be 24h")
		return
	}
	md, msg := metadata(req.Metadata)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "metadata", msg)
		return
	}
	if b.cfg.DropMetadata {
		md = nil // checked, then lost, as a gateway that drops it does
	}
	b.mu.Lock()
	f := b.files[req.InputFileID]
	b.mu.Unlock()
	if f == nil || f.purpose != "batch" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "input_file_id",
			"No batch input file "+req.InputFileID)
		return
	}
	now := b.lines.cfg.Now()
	sb := &simBatch{format: BatchOpenAI, endpoint: req.Endpoint, inputFileID: f.id, metadata: md, created: now,
		expires: now.Add(b.cfg.Window)}
	sb.lines, sb.model, sb.errors = b.parseInput(f.data, req.Endpoint)
	if len(sb.errors) == 0 && b.cfg.EnqueuedTokens > 0 {
		sb.tokens = b.inputTokens(req.Endpoint, sb.lines)
	}
	b.mu.Lock()
	if len(sb.errors) == 0 && b.overTokenLimit(sb.model, sb.tokens, now) {
		sb.errors = []batchValidationError{{Code: codeTokenLimit, Message: tokenLimitMessage(sb.model, b.cfg.EnqueuedTokens)}}
	}
	sb.id = b.newID("batch_sim")
	b.batches[sb.id] = sb
	b.order = append(b.order, sb.id)
	b.mu.Unlock()
	if err := b.saveBatch(sb); err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
		return
	}
	obj := b.object(sb, now)
	if len(sb.errors) == 0 {
		obj.Status = "validating" // as the API answers a create
	}
	writeObject(w, http.StatusOK, obj)
}

// parseInput reads an OpenAI batch input file the way the API validates one: JSON lines, unique custom_ids,
// POST to the batch's endpoint, one model, within the limits.
func (b *batches) parseInput(data []byte, endpoint string) ([]batchLine, string, []batchValidationError) {
	var lines []batchLine
	var errors []batchValidationError
	fail := func(n int, code, msg string) {
		errors = append(errors, batchValidationError{Code: code, Message: msg, Line: &n})
	}
	seen := map[string]bool{}
	model := ""
	var lineNo []int // of each of lines, counted from 1
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var l openAIInputLine
		if err := json.Unmarshal(raw, &l); err != nil {
			fail(n, "invalid_json_line", "This line is not parseable as valid JSON.")
			continue
		}
		var body struct {
			Model string `json:"model"`
		}
		switch {
		case l.CustomID == "":
			fail(n, "missing_required_parameter", "custom_id is required")
		case seen[l.CustomID]:
			fail(n, "duplicate_custom_id", "The custom_id for this request is a duplicate of another request.")
		case l.Method != "POST":
			fail(n, "invalid_request", "method must be POST")
		case l.URL != endpoint:
			fail(n, "mismatched_endpoint", fmt.Sprintf("The url %q does not match the batch's endpoint %q", l.URL, endpoint))
		case json.Unmarshal(l.Body, &body) != nil || body.Model == "":
			fail(n, "invalid_request", "body must be an object with a model")
		case model != "" && body.Model != model:
			fail(n, "mismatched_model", "Every request of a batch must use the same model.")
		}
		seen[l.CustomID] = true
		if model == "" {
			model = body.Model
		}
		lines = append(lines, batchLine{customID: l.CustomID, body: l.Body})
		lineNo = append(lineNo, n)
	}
	errors = append(errors, b.rejectLines(lines, lineNo)...)
	if len(lines) == 0 {
		errors = append(errors, batchValidationError{Code: "empty_file", Message: "The batch input file is empty."})
	}
	if len(lines) > b.maxRequests(BatchOpenAI) {
		errors = append(errors, batchValidationError{Code: "too_many_requests",
			Message: fmt.Sprintf("The batch has %d requests; at most %d are allowed.", len(lines), b.maxRequests(BatchOpenAI))})
	}
	return lines, model, errors
}

// metadata checks OpenAI's rules: at most 16 pairs, keys up to 64 characters, string values up to 512.
func metadata(in map[string]any) (map[string]string, string) {
	if len(in) > 16 {
		return nil, fmt.Sprintf("metadata has %d pairs; at most 16 are allowed", len(in))
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		s, ok := v.(string)
		switch {
		case !ok:
			return nil, fmt.Sprintf("metadata %s: values must be strings", k)
		case len(k) > 64:
			return nil, fmt.Sprintf("metadata key %.20s...: at most 64 characters", k)
		case len(s) > 512:
			return nil, fmt.Sprintf("metadata %s: at most 512 characters", k)
		}
		out[k] = s
	}
	return out, ""
}

// finalize runs what has run by now and, once the batch is terminal, writes its output and error files (once).
func (b *batches) finalize(sb *simBatch, now time.Time) string {
	st := sb.status(now, b.cfg)
	b.run(sb, sb.done(now, b.cfg))
	if !terminal(st) || st == "failed" || sb.format != BatchOpenAI {
		return st
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.outputID != "" || sb.errorID != "" {
		return st
	}
	reason := "batch_expired"
	reasonMsg := "This request could not be executed before the completion window expired."
	if st == "cancelled" {
		reason, reasonMsg = "batch_cancelled", "This request was cancelled before it ran."
	}
	var out, errOut bytes.Buffer
	for _, i := range resultOrder(sb.lines) {
		l := sb.lines[i]
		reqID := "batch_req_sim" + strconv.Itoa(i+1)
		if i >= len(sb.results) {
			line, _ := json.Marshal(map[string]any{"id": reqID, "custom_id": l.customID, "response": nil,
				"error": map[string]string{"code": reason, "message": reasonMsg}})
			errOut.Write(append(line, '\n'))
			continue
		}
		res := sb.results[i]
		if b.odd(l.customID) {
			line, _ := json.Marshal(map[string]any{"id": reqID, "custom_id": l.customID, "response": nil, "error": nil})
			out.Write(append(line, '\n'))
			continue
		}
		// Every request that got an HTTP response, whatever its status, is in the output file with "error": null:
		// a 400 or 500 shows only in response.status_code.
		line, _ := json.Marshal(map[string]any{"id": reqID, "custom_id": l.customID,
			"response": map[string]any{"status_code": res.status, "request_id": "req_sim" + strconv.Itoa(i+1),
				"body": json.RawMessage(res.body)},
			"error": nil})
		out.Write(append(line, '\n'))
	}
	var made []*simFile
	b.mu.Lock()
	if out.Len() > 0 {
		f := &simFile{id: b.newID("file-sim"), name: sb.id + "_output.jsonl", purpose: "batch_output", created: now,
			data: out.Bytes()}
		b.files[f.id] = f
		sb.outputID = f.id
		made = append(made, f)
	}
	if errOut.Len() > 0 {
		f := &simFile{id: b.newID("file-sim"), name: sb.id + "_error.jsonl", purpose: "batch_output", created: now,
			data: errOut.Bytes()}
		b.files[f.id] = f
		sb.errorID = f.id
		made = append(made, f)
	}
	b.mu.Unlock()
	// The files first, then the batch record that names them: a simulator that loads a batch whose record names
	// no result files writes them again. A state dir that refuses them loses them on a restart only.
	for _, f := range made {
		if err := b.saveFile(f, false); err != nil {
			return st
		}
	}
	_ = b.saveBatchLocked(sb) // sb.mu is held: the record is written with the ids just set
	return st
}

func (b *batches) object(sb *simBatch, now time.Time) batchObject {
	st := b.finalize(sb, now)
	ts := func(t time.Time) *int64 { u := t.Unix(); return &u }
	o := batchObject{ID: sb.id, Object: "batch", Endpoint: sb.endpoint, InputFileID: sb.inputFileID,
		CompletionWindow: "24h", Status: st, CreatedAt: sb.created.Unix(), ExpiresAt: ts(sb.expires),
		Metadata: sb.metadata}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	if len(sb.errors) > 0 {
		o.Errors = &errs{Object: "list", Data: sb.errors}
		o.FailedAt = ts(sb.created)
		return o
	}
	o.InProgressAt = ts(sb.created)
	sb.mu.Lock()
	o.RequestCounts.Total = len(sb.lines)
	for _, res := range sb.results {
		if res.status == http.StatusOK {
			o.RequestCounts.Completed++
		} else {
			o.RequestCounts.Failed++
		}
	}
	if sb.outputID != "" {
		o.OutputFileID = &sb.outputID
	}
	if sb.errorID != "" {
		o.ErrorFileID = &sb.errorID
	}
	sb.mu.Unlock()
	if !sb.cancelAt().IsZero() {
		o.CancellingAt = ts(sb.cancelAt())
	}
	switch st {
	case "completed":
		o.CompletedAt = ts(now)
	case "expired":
		o.ExpiredAt = ts(sb.expires)
	case "cancelled":
		o.CancelledAt = ts(sb.cancelAt().Add(b.cfg.CancelTime))
	}
	return o
}

func (b *batches) handleRetrieve(w http.ResponseWriter, r *http.Request) {
	sb := b.get(r.PathValue("id"), BatchOpenAI)
	if sb == nil {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "id", "No such batch: "+r.PathValue("id"))
		return
	}
	writeObject(w, http.StatusOK, b.object(sb, b.lines.cfg.Now()))
}

func (b *batches) handleCancel(w http.ResponseWriter, r *http.Request) {
	sb := b.get(r.PathValue("id"), BatchOpenAI)
	if sb == nil {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "id", "No such batch: "+r.PathValue("id"))
		return
	}
	now := b.lines.cfg.Now()
	st := sb.status(now, b.cfg)
	if !terminal(st) {
		sb.cancel(now)
		if err := b.saveBatch(sb); err != nil {
			writeError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
			return
		}
	}
	if terminal(st) && st != "cancelled" {
		writeError(w, http.StatusConflict, "invalid_request_error", "", "",
			fmt.Sprintf("Cannot cancel a batch with status %s.", st))
		return
	}
	writeObject(w, http.StatusOK, b.object(sb, now))
}

func (b *batches) handleList(w http.ResponseWriter, r *http.Request) {
	limit, err := pageLimit(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "limit", err.Error())
		return
	}
	ids, more := b.listPage(BatchOpenAI, r.URL.Query().Get("after"), limit)
	now := b.lines.cfg.Now()
	page := struct {
		Object  string        `json:"object"`
		Data    []batchObject `json:"data"`
		FirstID *string       `json:"first_id"`
		LastID  *string       `json:"last_id"`
		HasMore bool          `json:"has_more"`
	}{Object: "list", Data: []batchObject{}, HasMore: more}
	for _, id := range ids {
		page.Data = append(page.Data, b.object(b.get(id, BatchOpenAI), now))
	}
	if len(ids) > 0 {
		page.FirstID, page.LastID = &ids[0], &ids[len(ids)-1]
	}
	writeObject(w, http.StatusOK, page)
}
