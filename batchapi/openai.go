// Package batchapi drives a provider's batch API once per batch: it submits a chunk of requests so that an
// attempt that died after uploading or after creating, or a stale attempt that wakes up late, adopts the batch
// already there instead of creating another, and two attempts that both created one overlap only briefly; it
// polls batches, streams their results and cancels them.
//
// A batch is named by a batchformat.Key (run, pass, chunk, round) in its metadata, with the digest of its input. Before
// creating, Submit lists the account's batches for one of that key and digest and adopts it; uploads are found
// again by file name (which names the key and the digest) and size, and a batch created from the chunk's upload is
// adopted too, whatever its metadata: some gateways serve /v1/batches but drop metadata. A gateway that does not
// list the file just uploaded is refused before the create (ErrNotFindable). Two attempts that both found nothing and both created converge: every attempt
// that lists afterwards sees both, keeps the one created first (then the smaller id) and cancels the others,
// which the provider stops within minutes, before most of their requests ran.
package batchapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

// ErrNotFindable is returned by Submit, before anything is paid, when the endpoint does not list the file it
// just uploaded: a gateway that also drops a batch's metadata (LiteLLM's proxy does for some backends) would then
// leave a retry that follows a lost create no way to find the batch, and it would pay for the chunk again.
var ErrNotFindable = errors.New("batchapi: the endpoint does not list the uploaded batch file, so a batch of it could not be found again")

// ErrChunkChanged is returned by Submit when the provider holds a batch of the same key with another input:
// the requests of a chunk changed between two attempts of one run, which a deterministic plan never does.
var ErrChunkChanged = errors.New("batchapi: a batch of this run, pass, chunk and round exists with other requests")

// Submission is one chunk of requests to run as a batch.
type Submission struct {
	Key      batchformat.Key
	Endpoint batchformat.Endpoint
	// Input is the batch's JSONL input file (batchformat.Encode of its lines).
	Input []byte
	// Since bounds the listing of existing batches: none of this key was created before it (the run's start).
	// Optional: zero lists every batch of the account.
	Since time.Time
	// Prior are the batches the chunk submitted before (earlier rounds and tries), which read the same input
	// file when their lines were the same: one of them is never adopted again through that file.
	Prior []string
}

// OpenAI drives the Files and Batches API of an OpenAI-compatible endpoint.
type OpenAI struct {
	c *llm.Client
	// pageSize is how many batches one list request asks for.
	pageSize int
}

// NewOpenAI returns a driver of the endpoint c calls.
func NewOpenAI(c *llm.Client) *OpenAI { return &OpenAI{c: c, pageSize: 100} }

// fileName is the name of the input file of k with the given digest (an OpenAI file's name, a Gemini file's
// display name): what finds an upload again, and through it a batch of it whose metadata a gateway dropped. It names the content and the chunk, not the round or the try, so
// a resubmission of the same lines (a batch that failed as a whole, or expired before any of its requests ran)
// reuses the file already uploaded instead of uploading it anew; and the run and the pass by 16 hex digits of
// their SHA-256, so that another run (or pass) of the same requests never shares the file, nor a batch found
// through it.
func fileName(k batchformat.Key, digest string) string {
	tag := batchformat.Digest([]byte(k.Run + "\x00" + k.Pass))[:16]
	return fmt.Sprintf("silico-%s-chunk%d-%s-%s.jsonl", digest[:16], k.Chunk, digest[16:32], tag)
}

// Submit makes sure exactly one batch of s.Key runs s.Input and returns it: the batch an earlier attempt created,
// or a new one. See the package doc for how it stays exactly once.
//
// A batch is found by its metadata, or by its input file: the upload of the chunk (found by name and size) is
// looked up first, and a batch created from it is the chunk's whatever its metadata says, so adoption works through
// a gateway that serves /v1/batches but drops metadata. Such a gateway must then list files: a fresh upload that
// the file list does not show is ErrNotFindable, before the create.
func (o *OpenAI) Submit(ctx context.Context, s Submission) (wire.BatchInfo, error) {
	digest := batchformat.Digest(s.Input)
	name := fileName(s.Key, digest)
	files, err := o.findUploads(ctx, name, len(s.Input))
	if err != nil {
		return wire.BatchInfo{}, err
	}
	found, err := o.find(ctx, s.Key, digest, s.Since, files, s.Prior)
	if err != nil {
		return wire.BatchInfo{}, err
	}
	if len(found) > 0 {
		return o.converge(ctx, found)
	}
	if len(files) == 0 {
		f, err := o.c.UploadBatchFile(ctx, name, s.Input)
		if err != nil {
			return wire.BatchInfo{}, fmt.Errorf("upload batch input: %w", err)
		}
		if files, err = o.findUploads(ctx, name, len(s.Input)); err != nil {
			return wire.BatchInfo{}, err
		}
		if len(files) == 0 {
			return wire.BatchInfo{}, fmt.Errorf("%w: %s (%s)", ErrNotFindable, f.ID, name)
		}
	}
	fileID := files[0]
	created, err := o.c.CreateBatch(ctx, fileID, string(s.Endpoint), s.Key.Metadata(digest))
	if err != nil {
		return wire.BatchInfo{}, fmt.Errorf("create batch: %w", err)
	}
	mine, err := batchformat.FromOpenAI(created)
	if err != nil {
		return wire.BatchInfo{}, err
	}
	// Another attempt may have created one too: list again and keep one.
	if found, err = o.find(ctx, s.Key, digest, s.Since, files, s.Prior); err != nil {
		return wire.BatchInfo{}, err
	}
	if !slices.ContainsFunc(found, func(b wire.BatchInfo) bool { return b.ID == mine.ID }) {
		found = append(found, mine) // a listing that lags behind the create
	}
	return o.converge(ctx, found)
}

// findUploads returns the ids of the batch files named name of size bytes that attempts uploaded, ascending (none
// when there is none). Several (two attempts that uploaded at once) are the same bytes: a create reads the first,
// so that every attempt that sees them all takes the same one, and a batch created from any of them is the chunk's.
func (o *OpenAI) findUploads(ctx context.Context, name string, size int) ([]string, error) {
	files, err := o.c.ListFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	var ids []string
	for _, f := range files {
		if f.FileName == name && f.Bytes == size && f.Purpose == string(openai.PurposeBatch) {
			ids = append(ids, f.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// converge keeps the batch created first (then the smallest id) and cancels the others that are still running.
func (o *OpenAI) converge(ctx context.Context, found []wire.BatchInfo) (wire.BatchInfo, error) {
	slices.SortFunc(found, func(a, b wire.BatchInfo) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	for _, extra := range found[1:] {
		if extra.Status.Terminal() || extra.Status == wire.BatchStatusCancelling {
			continue
		}
		if _, err := o.Cancel(ctx, extra.ID); err != nil {
			return wire.BatchInfo{}, fmt.Errorf("cancel duplicate batch %s: %w", extra.ID, err)
		}
	}
	return found[0], nil
}

// Find lists the batches of key k with input digest, newest first, among those created since (zero: all). A
// batch of k with another digest is ErrChunkChanged.
func (o *OpenAI) Find(ctx context.Context, k batchformat.Key, digest string, since time.Time) ([]wire.BatchInfo, error) {
	return o.find(ctx, k, digest, since, nil, nil)
}

// find is Find, with the batches without silico's metadata (a gateway dropped it) created from one of the input
// files named files, still running or completed, and not among prior (the chunk's earlier batches): those are k's.
func (o *OpenAI) find(ctx context.Context, k batchformat.Key, digest string, since time.Time, files, prior []string) ([]wire.BatchInfo, error) {
	var out []wire.BatchInfo
	after := ""
	for {
		page, more, err := o.c.ListBatches(ctx, after, o.pageSize)
		if err != nil {
			return nil, fmt.Errorf("list batches: %w", err)
		}
		for _, b := range page {
			if !since.IsZero() && b.CreatedAt > 0 && time.Unix(int64(b.CreatedAt), 0).Before(since.Truncate(time.Second)) {
				return out, nil // newest first: every later one is older still
			}
			md := metadata(b.Metadata)
			// A batch that carries silico's metadata is named by it alone (another round or try of the chunk
			// reads the same file); one without (a gateway dropped it) is the chunk's by its input file, unless
			// the chunk submitted it before.
			// A cancelled or failed one is no submission to adopt: a duplicate another attempt cancelled, or an
			// earlier try's.
			byFile := slices.Contains(files, b.InputFileID) && md[batchformat.MetaRun] == "" && !slices.Contains(prior, b.ID) &&
				!slices.Contains([]string{"cancelling", "cancelled", "failed", "expired"}, string(b.Status))
			if !k.Names(md) && !byFile {
				continue
			}
			if k.Names(md) && !k.Matches(md, digest) {
				return nil, fmt.Errorf("%w: batch %s", ErrChunkChanged, b.ID)
			}
			info, err := batchformat.FromOpenAI(b)
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
		if !more || len(page) == 0 {
			return out, nil
		}
		after = page[len(page)-1].ID
	}
}

func metadata(md map[string]any) map[string]string {
	out := make(map[string]string, len(md))
	for k, v := range md {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// Poll returns batch id as it stands now.
func (o *OpenAI) Poll(ctx context.Context, id string) (wire.BatchInfo, error) {
	b, err := o.c.RetrieveBatch(ctx, id)
	if err != nil {
		return wire.BatchInfo{}, fmt.Errorf("retrieve batch %s: %w", id, err)
	}
	return batchformat.FromOpenAI(b)
}

// Cancel asks for batch id to be cancelled and returns it. A batch that already ended is returned as it is.
func (o *OpenAI) Cancel(ctx context.Context, id string) (wire.BatchInfo, error) {
	b, err := o.c.CancelBatch(ctx, id)
	var e *llm.Error
	if errors.As(err, &e) && (e.Status == http.StatusConflict || e.Status == http.StatusBadRequest) {
		return o.Poll(ctx, id) // it ended before the cancel arrived
	}
	if err != nil {
		return wire.BatchInfo{}, fmt.Errorf("cancel batch %s: %w", id, err)
	}
	return batchformat.FromOpenAI(b)
}

// Collect streams every result of an ended batch to fn: the output file's lines, then the error file's, each
// line once, texts of errors redacted. A collect that dies half way can simply run again: fn sees every line
// again, and recording a cell twice is a no-op of the results store.
func (o *OpenAI) Collect(ctx context.Context, info wire.BatchInfo, fn func(batchformat.Result) error) error {
	for _, id := range []string{info.OutputFileID, info.ErrorFileID} {
		if id == "" {
			continue
		}
		if err := o.scan(ctx, id, fn); err != nil {
			return fmt.Errorf("collect batch %s file %s: %w", info.ID, id, err)
		}
	}
	return nil
}

func (o *OpenAI) scan(ctx context.Context, fileID string, fn func(batchformat.Result) error) (err error) {
	rc, err := o.c.FileContent(ctx, fileID)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rc.Close()) }()
	return batchformat.Scan(wire.FormatOpenAI, rc, o.c.Redact, fn)
}
