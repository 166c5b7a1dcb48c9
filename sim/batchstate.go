package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The simulator's batches and files on disk (BatchConfig.StateDir). A provider keeps its batches whatever
// happens to the client; the embedded simulator of `starter run` lives in the starter's process, so without this a
// kill -9 of the starter took every batch in flight with it, and the run it resumed polled batches the simulator
// no longer knew. With a state dir every file and batch is written (each to a file of its own, replaced whole by
// a rename) before the request that made or changed it is answered, and a simulator started on the same
// directory serves them again, on its own clock: a batch created before the kill has run on meanwhile. The
// answers of a batch's requests are not stored: the line server computes them again, the same way (they depend
// on the request alone). Ids go on from the largest one loaded, so no id is given twice.

// storedFile is a file of the Files API (OpenAI's, or Gemini's with gemini set) on disk.
type storedFile struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Purpose string    `json:"purpose"`
	Created time.Time `json:"created"`
	Data    []byte    `json:"data"`
	Gemini  bool      `json:"gemini,omitempty"`
}

// storedLine is one request of a stored batch.
type storedLine struct {
	CustomID string `json:"custom_id"`
	Body     []byte `json:"body,omitempty"`
	Refused  string `json:"refused,omitempty"`
}

// storedBatch is a batch on disk: what it was created with, and what happened to it since (a cancel, its result
// files, its deletion).
type storedBatch struct {
	ID          string                 `json:"id"`
	Seq         int                    `json:"seq"` // its place in the order of creation
	Format      string                 `json:"format"`
	Endpoint    string                 `json:"endpoint"`
	Model       string                 `json:"model"`
	InputFileID string                 `json:"input_file_id,omitempty"`
	Metadata    map[string]string      `json:"metadata,omitempty"`
	Created     time.Time              `json:"created"`
	Expires     time.Time              `json:"expires"`
	Deleted     bool                   `json:"deleted,omitempty"`
	Lines       []storedLine           `json:"lines"`
	Errors      []batchValidationError `json:"errors,omitempty"`
	Tokens      int                    `json:"tokens,omitempty"`
	CancelNanos int64                  `json:"cancel_nanos,omitempty"`
	OutputID    string                 `json:"output_id,omitempty"`
	ErrorID     string                 `json:"error_id,omitempty"`
}

// stateName is the file name of the object id (ids hold slashes: "batches/sim-gemini-3").
func stateName(id string) string { return strings.ReplaceAll(id, "/", "~") + ".json" }

// writeState writes v as JSON to dir/sub/name atomically: a reader (the next simulator) sees the old or the new
// file, never half of one.
func writeState(dir, sub, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("simulator state: %w", err)
	}
	d := filepath.Join(dir, sub)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("simulator state: %w", err)
	}
	tmp, err := os.CreateTemp(d, ".tmp-*")
	if err != nil {
		return fmt.Errorf("simulator state: %w", err)
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(d, name))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("simulator state: %w", werr)
	}
	return nil
}

// saveFile writes file f (gemini: of Gemini's Files API) to the state dir, if there is one.
func (b *batches) saveFile(f *simFile, gemini bool) error {
	if b.cfg.StateDir == "" {
		return nil
	}
	return writeState(b.cfg.StateDir, "files", stateName(f.id), storedFile{ID: f.id, Name: f.name, Purpose: f.purpose,
		Created: f.created, Data: f.data, Gemini: gemini})
}

// removeFile removes file id from the state dir, if there is one.
func (b *batches) removeFile(id string) error {
	if b.cfg.StateDir == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(b.cfg.StateDir, "files", stateName(id))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("simulator state: %w", err)
	}
	return nil
}

// saveBatch writes batch sb as it stands to the state dir, if there is one.
func (b *batches) saveBatch(sb *simBatch) error {
	if b.cfg.StateDir == "" {
		return nil
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return b.saveBatchLocked(sb)
}

// saveBatchLocked is saveBatch for a caller that holds sb.mu (which is taken before b.mu, as finalize does).
func (b *batches) saveBatchLocked(sb *simBatch) error {
	if b.cfg.StateDir == "" {
		return nil
	}
	b.mu.Lock()
	rec := storedBatch{ID: sb.id, Seq: slices.Index(b.order, sb.id), Format: sb.format, Endpoint: sb.endpoint,
		Model: sb.model, InputFileID: sb.inputFileID, Metadata: sb.metadata, Created: sb.created, Expires: sb.expires,
		Deleted: sb.deleted, Errors: sb.errors, Tokens: sb.tokens, CancelNanos: sb.cancelNanos.Load()}
	b.mu.Unlock()
	rec.OutputID, rec.ErrorID = sb.outputID, sb.errorID
	rec.Lines = make([]storedLine, len(sb.lines))
	for i, l := range sb.lines {
		rec.Lines[i] = storedLine{CustomID: l.customID, Body: l.body, Refused: l.refused}
	}
	return writeState(b.cfg.StateDir, "batches", stateName(sb.id), rec)
}

// load reads the files and batches of the state dir into b (a directory not made yet holds none), and sets the
// next id past every id it read.
func (b *batches) load() error {
	dir := b.cfg.StateDir
	var files []storedFile
	if err := readState(filepath.Join(dir, "files"), func(raw []byte) error {
		var f storedFile
		err := json.Unmarshal(raw, &f)
		files = append(files, f)
		return err
	}); err != nil {
		return err
	}
	var stored []storedBatch
	if err := readState(filepath.Join(dir, "batches"), func(raw []byte) error {
		var sb storedBatch
		err := json.Unmarshal(raw, &sb)
		stored = append(stored, sb)
		return err
	}); err != nil {
		return err
	}
	for _, f := range files {
		sf := &simFile{id: f.ID, name: f.Name, purpose: f.Purpose, created: f.Created, data: f.Data}
		if f.Gemini {
			b.gfiles[f.ID] = sf
		} else {
			b.files[f.ID] = sf
		}
		b.next = max(b.next, idNumber(f.ID))
	}
	slices.SortFunc(stored, func(x, y storedBatch) int { return x.Seq - y.Seq })
	for _, r := range stored {
		sb := &simBatch{id: r.ID, format: r.Format, endpoint: r.Endpoint, model: r.Model, inputFileID: r.InputFileID,
			metadata: r.Metadata, created: r.Created, expires: r.Expires, deleted: r.Deleted, errors: r.Errors,
			tokens: r.Tokens, outputID: r.OutputID, errorID: r.ErrorID}
		sb.cancelNanos.Store(r.CancelNanos)
		for _, l := range r.Lines {
			sb.lines = append(sb.lines, batchLine{customID: l.CustomID, body: l.Body, refused: l.Refused})
		}
		b.batches[sb.id] = sb
		b.order = append(b.order, sb.id)
		b.next = max(b.next, idNumber(r.ID))
	}
	return nil
}

// readState calls fn with the contents of every object file of dir, in name order; a missing dir has none.
func readState(dir string, fn func([]byte) error) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("simulator state: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("simulator state: %w", err)
		}
		if err := fn(raw); err != nil {
			return fmt.Errorf("simulator state %s: %w", filepath.Join(dir, e.Name()), err)
		}
	}
	return nil
}

// idNumber is the number that ends id (newID's counter); 0 when none does.
func idNumber(id string) int {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(id[i:])
	return n
}
