package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The simulator's batch APIs: OpenAI's Files and Batches (/v1/files, /v1/batches), Anthropic's Message
// Batches (/v1/messages/batches) and Gemini's Batch API (/v1beta/batches, batch_gemini.go). A batch's requests are answered by the same code as the synchronous endpoints
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
	// ListLag is how long a new Gemini batch stays out of the Gemini listing, as a listing that lags behind
	// creates would leave it out. Optional: 0 lists it at once.
	ListLag time.Duration
	// EnqueuedTokens is the organisation's enqueued-token limit per model (OpenAI format): a create whose input
	// tokens plus those of the model's batches still in progress exceed it makes a batch that is failed at once
	// with token_limit_exceeded and OpenAI's message (line null). Optional: 0 is no limit.
	EnqueuedTokens int
	// OddLines are custom_ids whose result line, once their request ran, is written in a shape no format
	// documents (OpenAI: neither a response nor an error; Anthropic: a result type "pending"; Gemini: neither a
	// response nor a status), as a provider's change or a gateway's fault would. Optional.
	OddLines []string
	// RejectLines are custom_ids whose line fails the whole OpenAI batch at its validation: the batch is failed,
	// nothing runs, and errors.data names each such line (code invalid_request, its line number). Optional.
	RejectLines []string
	// DropMetadata makes /v1/batches accept a create's metadata and keep none of it, as some OpenAI-format
	// gateways do (LiteLLM's proxy, for some backends): the batch comes back, and is listed, without metadata.
	DropMetadata bool
	// StateDir is where the simulator keeps its files and batches (batchstate.go), so that a simulator started
	// again on the same directory serves them: the embedded simulator of `starter run` keeps them in the state dir
	// (.silico/sim), and a run resumed after a kill -9 of its starter finds its batches. Optional: empty keeps them
	// in memory, gone with the process.
	StateDir string
	// GeminiJobStates makes the Gemini API report its batches' states by the JOB_STATE_* names of Google's SDKs
	// and Vertex AI (JOB_STATE_RUNNING, JOB_STATE_SUCCEEDED, …) instead of BATCH_STATE_*.
	GeminiJobStates bool
	// GeminiStatusShape is where a Gemini result's failure is written: GeminiStatusError (the default, the
	// field the API writes), GeminiStatusField (a "status" field) or GeminiStatusTop (a google.rpc.Status at the
	// top level of the line). Google's guide names no field.
	GeminiStatusShape string
}

// The shapes of BatchConfig.GeminiStatusShape.
const (
	GeminiStatusError = "error"
	GeminiStatusField = "status"
	GeminiStatusTop   = "top"
)

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
	BatchGemini    = "gemini"
)

// Batch is one batch the simulator was asked to create, as Server.Batches reports it.
type Batch struct {
	ID     string
	Format string // BatchOpenAI, BatchAnthropic or BatchGemini
	// Endpoint is the OpenAI batch's endpoint (/v1/chat/completions, /v1/embeddings); /v1/messages for Anthropic.
	Endpoint string
	Model    string
	// Metadata is an OpenAI batch's metadata; a Gemini batch's display name is under "display_name".
	Metadata map[string]string
	// CustomIDs are the batch's requests, in input order.
	CustomIDs []string
	Created   time.Time
	// Status is OpenAI's status, Anthropic's processing_status or Gemini's state, now.
	Status string
	// Ran are the custom_ids of the requests that have run so far, in input order: what the provider bills.
	Ran []string
	// InputFile is the id of the OpenAI batch's input file (empty for Anthropic).
	InputFile string
	// Errors are the codes of the reasons an OpenAI batch failed as a whole, in order.
	Errors []string
	// Deleted says the (Anthropic) batch was deleted: it is listed here still, and nowhere in the API.
	Deleted bool
}

// File is one file of the simulator's Files API, as Server.Files reports it.
type File struct {
	ID, Name, Purpose string
	Bytes             int
	Created           time.Time
}

// Files returns every file the simulator holds (uploaded, or written as a batch's results, and not deleted: the
// OpenAI API's files and the Gemini API's), in order of creation: a test reads in it whether a client uploaded the same input twice, or left files behind.
func (s *Server) Files() []File {
	b := s.batches
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]File, 0, len(b.files)+len(b.gfiles))
	for _, files := range []map[string]*simFile{b.files, b.gfiles} {
		for _, f := range files {
			out = append(out, File{ID: f.id, Name: f.name, Purpose: f.purpose, Bytes: len(f.data), Created: f.created})
		}
	}
	slices.SortFunc(out, func(x, y File) int {
		return cmp.Or(x.Created.Compare(y.Created), cmp.Compare(len(x.ID), len(y.ID)), cmp.Compare(x.ID, y.ID))
	})
	return out
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
	deleted                     bool // guarded by the store's lock
	lines                       []batchLine
	// errors are why an OpenAI batch failed validation; a batch with errors runs nothing.
	errors []batchValidationError
	// tokens are its requests' input tokens, which count against BatchConfig.EnqueuedTokens while it runs.
	tokens int
	// cancelNanos is when a cancel arrived (Unix nanoseconds), 0 when none did. Atomic: handlers read it
	// without the store's lock.
	cancelNanos atomic.Int64

	mu       sync.Mutex   // guards results, and the ids of the result files once written
	results  []lineResult // per line, filled as lines run
	outputID string
	errorID  string
}

type batchValidationError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
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
	gfiles  map[string]*simFile // Gemini's Files API, by name ("files/...")
	uploads map[string]pendingUpload
	batches map[string]*simBatch
	order   []string // batch ids by creation
	next    int
	// deletions are the ids of the files and batches deleted, in order: what Server.Deletions reports.
	deletions []string
	// uploaded are the files uploaded with purpose batch, deleted ones included: what Server.Uploads reports.
	uploaded []File
}

func newBatches(cfg Config) (*batches, error) {
	b := cfg.Batch
	if b.ProcessingTime < 0 || b.Window < 0 || b.CancelTime < 0 || b.MaxRequests < 0 || b.MaxBytes < 0 || b.ListLag < 0 ||
		b.EnqueuedTokens < 0 {
		return nil, fmt.Errorf("batch config %+v: want durations and limits >= 0", b)
	}
	if b.Window == 0 {
		b.Window = defaultWindow
	}
	switch b.GeminiStatusShape {
	case "", GeminiStatusError, GeminiStatusField, GeminiStatusTop:
	default:
		return nil, fmt.Errorf("batch config: gemini status shape %q, want %q, %q or %q", b.GeminiStatusShape,
			GeminiStatusError, GeminiStatusField, GeminiStatusTop)
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
	b.RejectLines = slices.Clone(b.RejectLines)
	b.OddLines = slices.Clone(b.OddLines)
	// The lines are answered by the same snapshots as synchronous calls.
	lines, err := New(Config{Models: cfg.Models, Now: cfg.Now, Forget: true, lineServer: true,
		ServedModel: cfg.ServedModel, SystemFingerprint: cfg.SystemFingerprint, SnapshotChange: cfg.SnapshotChange, Sampling: cfg.Sampling})
	if err != nil {
		return nil, err
	}
	bs := &batches{cfg: b, lines: lines, files: map[string]*simFile{}, batches: map[string]*simBatch{},
		gfiles: map[string]*simFile{}, uploads: map[string]pendingUpload{}}
	if b.StateDir != "" {
		if err := bs.load(); err != nil {
			return nil, err
		}
	}
	return bs, nil
}

func (s *Server) registerBatches() {
	b := s.batches
	s.mux.HandleFunc("POST /v1/files", b.handleUpload)
	s.mux.HandleFunc("GET /v1/files", b.handleFiles)
	s.mux.HandleFunc("GET /v1/files/{id}", b.handleFile)
	s.mux.HandleFunc("GET /v1/files/{id}/content", b.handleFileContent)
	s.mux.HandleFunc("DELETE /v1/files/{id}", b.handleFileDelete)
	s.mux.HandleFunc("POST /v1/batches", b.handleCreate)
	s.mux.HandleFunc("GET /v1/batches", b.handleList)
	s.mux.HandleFunc("GET /v1/batches/{id}", b.handleRetrieve)
	s.mux.HandleFunc("POST /v1/batches/{id}/cancel", b.handleCancel)
	s.mux.HandleFunc("POST /v1/messages/batches", b.handleAnthropicCreate)
	s.mux.HandleFunc("GET /v1/messages/batches", b.handleAnthropicList)
	s.mux.HandleFunc("GET /v1/messages/batches/{id}", b.handleAnthropicRetrieve)
	s.mux.HandleFunc("POST /v1/messages/batches/{id}/cancel", b.handleAnthropicCancel)
	s.mux.HandleFunc("GET /v1/messages/batches/{id}/results", b.handleAnthropicResults)
	s.registerGemini()
	s.mux.HandleFunc("DELETE /v1/messages/batches/{id}", b.handleAnthropicDelete)
}

// Batches returns every batch created so far, oldest first, with its status now.
func (s *Server) Batches() []Batch {
	b := s.batches
	now := s.cfg.Now()
	b.mu.Lock()
	list := make([]*simBatch, len(b.order))
	deleted := make([]bool, len(b.order))
	for i, id := range b.order {
		list[i] = b.batches[id]
		deleted[i] = list[i].deleted
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
			Ran: slices.Clone(ids[:done]), InputFile: sb.inputFileID, Deleted: deleted[i]}
		for _, e := range sb.errors {
			out[i].Errors = append(out[i].Errors, e.Code)
		}
		switch sb.format {
		case BatchAnthropic:
			out[i].Status = anthropicStatus(out[i].Status)
		case BatchGemini:
			out[i].Status = geminiState(out[i].Status, b.cfg.GeminiJobStates)
		}
	}
	return out
}

// deleteBatch marks the batch deleted and logs it (Server.Deletions); false when it already was. The error is
// the state dir's.
func (b *batches) deleteBatch(sb *simBatch) (bool, error) {
	b.mu.Lock()
	if sb.deleted {
		b.mu.Unlock()
		return false, nil
	}
	sb.deleted = true
	b.deletions = append(b.deletions, sb.id)
	b.mu.Unlock()
	return true, b.saveBatch(sb)
}

// deleteFile removes file id from files (OpenAI's or Gemini's Files API) and logs it; false when there is none.
// The error is the state dir's.
func (b *batches) deleteFile(files map[string]*simFile, id string) (bool, error) {
	b.mu.Lock()
	if _, ok := files[id]; !ok {
		b.mu.Unlock()
		return false, nil
	}
	delete(files, id)
	b.deletions = append(b.deletions, id)
	b.mu.Unlock()
	return true, b.removeFile(id)
}

// Uploads returns the batch input files uploaded so far (OpenAI's and Gemini's), deleted ones included, in order: a test reads in it
// whether a client uploaded the same input twice, whatever was deleted since.
func (s *Server) Uploads() []File {
	b := s.batches
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.uploaded)
}

// Deletions returns the ids of the files and batches deleted so far, in the order they were: the log of the
// simulator's DELETE requests that found what they deleted.
func (s *Server) Deletions() []string {
	b := s.batches
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.deletions)
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
	if sb.format == BatchAnthropic || sb.format == BatchGemini {
		path = "/v1/chat/completions" // their lines were translated to chat completions
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

func (b *batches) get(id, format string) *simBatch {
	b.mu.Lock()
	defer b.mu.Unlock()
	sb := b.batches[id]
	if sb == nil || sb.format != format || sb.deleted {
		return nil
	}
	return sb
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
		if b.batches[id].deleted {
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

// odd reports whether the result line of request id is written in a shape no format documents (OddLines).
func (b *batches) odd(id string) bool { return slices.Contains(b.cfg.OddLines, id) }
