package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The simulator's batch APIs: OpenAI's Files and Batches (/v1/files, /v1/batches) and Anthropic's Message
// Batches (/v1/messages/batches). A batch's requests are answered by the same code as the synchronous endpoints
// (each line goes through the chat or embeddings handler of a simulator without latency, limits or faults), so a
// batch run and a synchronous run of one spec get the same answers.
//
// Time is Config.Now's. A batch's requests complete evenly over BatchConfig.ProcessingTime from its creation,
// in input order, so a batch that expires or is cancelled 60% of the way through has run its first 60%: those
// come back with answers, the rest as never run (OpenAI: batch_expired or batch_cancelled in the error file;
// Anthropic: expired or canceled results). Results are written in an order that is not the input order, as the
// providers warn they may be.

// BatchConfig configures the simulator's batch APIs. The zero value completes a batch at once, expires none,
// fails no line and takes the providers' limits.
type BatchConfig struct {
	// ProcessingTime is how long a batch takes to run all its requests. Optional: 0 runs them at once.
	ProcessingTime time.Duration
	// Window is how long after its creation an unfinished batch expires. Optional: defaults to 24h.
	Window time.Duration
	// CancelTime is how long a cancelled batch stays cancelling before it is cancelled. Optional: 0.
	CancelTime time.Duration
	// FailLines are custom_ids whose request fails with the given HTTP status when it runs: 400 answers
	// context_length_exceeded, any other status a server_error. An OpenAI line comes back with "error": null and
	// the status in response.status_code (the way the API reports HTTP failures of single requests); an Anthropic
	// result as errored. Config.FailCells fail the same way, with 500, by custom_id. Optional.
	FailLines map[string]int
	// MaxRequests and MaxBytes bound one batch's input; a larger one is refused. Optional: the providers' limits
	// (OpenAI 50,000 requests and 200 MB, Anthropic 100,000 and 256 MB).
	MaxRequests, MaxBytes int
}

// The providers' limits, the defaults of BatchConfig.
const (
	openAIMaxRequests    = 50_000
	openAIMaxBytes       = 200 << 20
	anthropicMaxRequests = 100_000
	anthropicMaxBytes    = 256 << 20
	defaultWindow        = 24 * time.Hour
)

// Batch formats, as Batch.Format names them.
const (
	BatchOpenAI    = "openai"
	BatchAnthropic = "anthropic"
)

// Batch is one batch the simulator was asked to create, as Server.Batches reports it.
type Batch struct {
	ID     string
	Format string // BatchOpenAI or BatchAnthropic
	// Endpoint is the OpenAI batch's endpoint (/v1/chat/completions, /v1/embeddings); /v1/messages for Anthropic.
	Endpoint string
	Model    string
	Metadata map[string]string
	// CustomIDs are the batch's requests, in input order.
	CustomIDs []string
	Created   time.Time
	// Status is OpenAI's status, or Anthropic's processing_status, now.
	Status string
	// Ran are the custom_ids of the requests that have run so far, in input order: what the provider bills.
	Ran []string
}

// batchLine is one request of a batch: its custom_id and the endpoint's body (for Anthropic, an OpenAI chat
// body translated from the params, or the reason the params were refused).
type batchLine struct {
	customID string
	body     []byte
	refused  string
}

// lineResult is what one request of a batch got from the synchronous handler.
type lineResult struct {
	status int
	body   []byte
}

type simBatch struct {
	id, format, endpoint, model string
	inputFileID                 string
	metadata                    map[string]string
	created, expires            time.Time
	lines                       []batchLine
	// errors are why an OpenAI batch failed validation; a batch with errors runs nothing.
	errors []batchValidationError
	// cancelNanos is when a cancel arrived (Unix nanoseconds), 0 when none did. Atomic: handlers read it
	// without the store's lock.
	cancelNanos atomic.Int64

	mu       sync.Mutex   // guards results, and the ids of the result files once written
	results  []lineResult // per line, filled as lines run
	outputID string
	errorID  string
}

type batchValidationError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   any    `json:"param"`
	Line    *int   `json:"line"`
}

type simFile struct {
	id, name, purpose string
	created           time.Time
	data              []byte
}

// batches is the simulator's store of files and batches.
type batches struct {
	cfg   BatchConfig
	lines *Server // answers the requests of batches: no latency, limits or faults

	mu      sync.Mutex
	files   map[string]*simFile
	batches map[string]*simBatch
	order   []string // batch ids by creation
	next    int
}

func newBatches(cfg Config) (*batches, error) {
	b := cfg.Batch
	if b.ProcessingTime < 0 || b.Window < 0 || b.CancelTime < 0 || b.MaxRequests < 0 || b.MaxBytes < 0 {
		return nil, fmt.Errorf("batch config %+v: want durations and limits >= 0", b)
	}
	if b.Window == 0 {
		b.Window = defaultWindow
	}
	fail := make(map[string]int, len(b.FailLines)+len(cfg.FailCells))
	for _, c := range cfg.FailCells {
		fail[c] = http.StatusInternalServerError
	}
	for id, st := range b.FailLines {
		if st < 400 || st > 599 {
			return nil, fmt.Errorf("batch fail_lines %s: status %d, want 400-599", id, st)
		}
		fail[id] = st
	}
	b.FailLines = fail
	lines, err := New(Config{Models: cfg.Models, Now: cfg.Now, Forget: true, lineServer: true})
	if err != nil {
		return nil, err
	}
	return &batches{cfg: b, lines: lines, files: map[string]*simFile{}, batches: map[string]*simBatch{}}, nil
}

func (s *Server) registerBatches() {
	b := s.batches
	s.mux.HandleFunc("POST /v1/files", b.handleUpload)
	s.mux.HandleFunc("GET /v1/files", b.handleFiles)
	s.mux.HandleFunc("GET /v1/files/{id}", b.handleFile)
	s.mux.HandleFunc("GET /v1/files/{id}/content", b.handleFileContent)
	s.mux.HandleFunc("POST /v1/batches", b.handleCreate)
	s.mux.HandleFunc("GET /v1/batches", b.handleList)
	s.mux.HandleFunc("GET /v1/batches/{id}", b.handleRetrieve)
	s.mux.HandleFunc("POST /v1/batches/{id}/cancel", b.handleCancel)
	s.mux.HandleFunc("POST /v1/messages/batches", b.handleAnthropicCreate)
	s.mux.HandleFunc("GET /v1/messages/batches", b.handleAnthropicList)
	s.mux.HandleFunc("GET /v1/messages/batches/{id}", b.handleAnthropicRetrieve)
	s.mux.HandleFunc("POST /v1/messages/batches/{id}/cancel", b.handleAnthropicCancel)
	s.mux.HandleFunc("GET /v1/messages/batches/{id}/results", b.handleAnthropicResults)
}

// Batches returns every batch created so far, oldest first, with its status now.
func (s *Server) Batches() []Batch {
	b := s.batches
	now := s.cfg.Now()
	b.mu.Lock()
	list := make([]*simBatch, len(b.order))
	for i, id := range b.order {
		list[i] = b.batches[id]
	}
	b.mu.Unlock()
	out := make([]Batch, len(list))
	for i, sb := range list {
		ids := make([]string, len(sb.lines))
		for j, l := range sb.lines {
			ids[j] = l.customID
		}
		done := sb.done(now, b.cfg)
		out[i] = Batch{ID: sb.id, Format: sb.format, Endpoint: sb.endpoint, Model: sb.model,
			Metadata: sb.metadata, CustomIDs: ids, Created: sb.created, Status: sb.status(now, b.cfg),
			Ran: slices.Clone(ids[:done])}
		if sb.format == BatchAnthropic {
			out[i].Status = anthropicStatus(out[i].Status)
		}
	}
	return out
}

func (b *batches) newID(prefix string) string {
	b.next++
	return prefix + strconv.Itoa(b.next)
}

// cancelAt is when a cancel arrived; zero when none did.
func (sb *simBatch) cancelAt() time.Time {
	n := sb.cancelNanos.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// cancel records a cancel at now, unless one arrived earlier.
func (sb *simBatch) cancel(now time.Time) {
	sb.cancelNanos.CompareAndSwap(0, now.UnixNano())
}

// done is how many of the batch's lines have run by now: its first ones, evenly over the processing time,
// stopped by a cancel or the end of the window.
func (sb *simBatch) done(now time.Time, cfg BatchConfig) int {
	if len(sb.errors) > 0 {
		return 0
	}
	n := len(sb.lines)
	end := now
	if !sb.cancelAt().IsZero() && sb.cancelAt().Before(end) {
		end = sb.cancelAt()
	}
	if end.After(sb.expires) {
		end = sb.expires
	}
	if cfg.ProcessingTime == 0 {
		return n
	}
	el := end.Sub(sb.created)
	if el <= 0 {
		return 0
	}
	if el >= cfg.ProcessingTime {
		return n
	}
	return int(int64(n) * int64(el) / int64(cfg.ProcessingTime))
}

// status is the batch's OpenAI status now.
func (sb *simBatch) status(now time.Time, cfg BatchConfig) string {
	switch {
	case len(sb.errors) > 0:
		return "failed"
	case !sb.cancelAt().IsZero():
		if sb.done(sb.cancelAt(), cfg) == len(sb.lines) {
			return "completed" // everything had run before the cancel arrived
		}
		if now.Before(sb.cancelAt().Add(cfg.CancelTime)) {
			return "cancelling"
		}
		return "cancelled"
	case sb.done(now, cfg) == len(sb.lines):
		return "completed"
	case !now.Before(sb.expires):
		return "expired"
	}
	return "in_progress"
}

func terminal(status string) bool {
	switch status {
	case "completed", "failed", "expired", "cancelled":
		return true
	}
	return false
}

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

// run answers the batch's first n lines that have not run yet, outside the store's lock.
func (b *batches) run(sb *simBatch, n int) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for i := len(sb.results); i < n; i++ {
		sb.results = append(sb.results, b.answer(sb, sb.lines[i]))
	}
}

// answer runs one request through the synchronous handler.
func (b *batches) answer(sb *simBatch, l batchLine) lineResult {
	if l.refused != "" {
		return lineResult{status: http.StatusBadRequest, body: errorJSON("invalid_request_error", "", "", l.refused)}
	}
	if st, ok := b.cfg.FailLines[l.customID]; ok {
		if st == http.StatusBadRequest {
			return lineResult{status: st, body: errorJSON("invalid_request_error", "context_length_exceeded", "messages",
				"This model's maximum context length is 128000 tokens. However, your messages resulted in more tokens "+
					"(simulated: this line always fails).")}
		}
		return lineResult{status: st, body: errorJSON("server_error", "", "",
			"The server had an error processing your request (simulated: this line always fails).")}
	}
	path := sb.endpoint
	if sb.format == BatchAnthropic {
		path = "/v1/chat/completions"
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(l.body))
	req.Header.Set(CellHeader, l.customID)
	rec := httptest.NewRecorder()
	b.lines.ServeHTTP(rec, req)
	return lineResult{status: rec.Code, body: bytes.TrimSpace(rec.Body.Bytes())}
}

func errorJSON(typ, code, param, msg string) []byte {
	e := errorBody{Error: apiError{Message: msg, Type: typ}}
	if code != "" {
		e.Error.Code = &code
	}
	if param != "" {
		e.Error.Param = &param
	}
	body, _ := json.Marshal(e) // strings and pointers to strings always encode
	return body
}

// resultOrder is the order results are written in: not the input order (providers promise none), but the same
// every time.
func resultOrder(lines []batchLine) []int {
	idx := make([]int, len(lines))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, c int) int {
		ha, hc := fnvString(fnvOffset, lines[a].customID), fnvString(fnvOffset, lines[c].customID)
		switch {
		case ha < hc:
			return -1
		case ha > hc:
			return 1
		}
		return a - c
	})
	return idx
}

// --- OpenAI: files ---

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

func writeObject(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
		return
	}
	writeJSON(w, status, body)
}

func (b *batches) maxBytes(format string) int {
	if b.cfg.MaxBytes > 0 {
		return b.cfg.MaxBytes
	}
	if format == BatchAnthropic {
		return anthropicMaxBytes
	}
	return openAIMaxBytes
}

func (b *batches) maxRequests(format string) int {
	if b.cfg.MaxRequests > 0 {
		return b.cfg.MaxRequests
	}
	if format == BatchAnthropic {
		return anthropicMaxRequests
	}
	return openAIMaxRequests
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
	b.mu.Unlock()
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

func (b *batches) handleFileContent(w http.ResponseWriter, r *http.Request) {
	f := b.file(w, r)
	if f == nil {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	_, _ = w.Write(f.data) // the client went away otherwise
}

// --- OpenAI: batches ---

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
	b.mu.Lock()
	sb.id = b.newID("batch_sim")
	b.batches[sb.id] = sb
	b.order = append(b.order, sb.id)
	b.mu.Unlock()
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
	}
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
		// Every request that got an HTTP response, whatever its status, is in the output file with "error": null:
		// a 400 or 500 shows only in response.status_code.
		line, _ := json.Marshal(map[string]any{"id": reqID, "custom_id": l.customID,
			"response": map[string]any{"status_code": res.status, "request_id": "req_sim" + strconv.Itoa(i+1),
				"body": json.RawMessage(res.body)},
			"error": nil})
		out.Write(append(line, '\n'))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if out.Len() > 0 {
		f := &simFile{id: b.newID("file-sim"), name: sb.id + "_output.jsonl", purpose: "batch_output", created: now,
			data: out.Bytes()}
		b.files[f.id] = f
		sb.outputID = f.id
	}
	if errOut.Len() > 0 {
		f := &simFile{id: b.newID("file-sim"), name: sb.id + "_error.jsonl", purpose: "batch_output", created: now,
			data: errOut.Bytes()}
		b.files[f.id] = f
		sb.errorID = f.id
	}
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

func (b *batches) get(id, format string) *simBatch {
	b.mu.Lock()
	defer b.mu.Unlock()
	sb := b.batches[id]
	if sb == nil || sb.format != format {
		return nil
	}
	return sb
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
	}
	if terminal(st) && st != "cancelled" {
		writeError(w, http.StatusConflict, "invalid_request_error", "", "",
			fmt.Sprintf("Cannot cancel a batch with status %s.", st))
		return
	}
	writeObject(w, http.StatusOK, b.object(sb, now))
}

// listPage returns the ids of format's batches newest first, after the id after (exclusive), at most limit.
func (b *batches) listPage(format, after string, limit int) (ids []string, more bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	started := after == ""
	for i := len(b.order) - 1; i >= 0; i-- {
		id := b.order[i]
		if b.batches[id].format != format {
			continue
		}
		if !started {
			started = id == after
			continue
		}
		if len(ids) == limit {
			return ids, true
		}
		ids = append(ids, id)
	}
	return ids, false
}

func pageLimit(r *http.Request) (int, error) {
	limit := 20
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return 0, fmt.Errorf("limit %q: want 1 to 100", s)
		}
		limit = n
	}
	return limit, nil
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

// --- Anthropic: message batches ---

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
