package batchapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

// GeminiSubmission is one chunk of requests to run as a Gemini batch.
type GeminiSubmission struct {
	Key batchformat.Key
	// Model is the model's name, without "models/".
	Model string
	// Input is the batch's JSONL input (batchformat.Encode of its lines in FormatGemini).
	Input []byte
	// Since bounds the listing: no batch of this key was created before it (the run's start). Zero: no bound.
	Since time.Time
	// Resumed says an earlier attempt of this submission ran, and may have created the batch: when the listing
	// shows none, Submit lists again, every geminiRelist, until the listing's lag has passed since it began,
	// before it creates one.
	Resumed bool
}

// DefaultGeminiListLag is how long Gemini's listing is assumed to lag behind a create at most: a batch created
// that long ago is in it. Google documents no bound; a lag of 40 s was seen to make a second batch when the bound
// was 10 s, so it is minutes, and it costs only the submissions that follow a failed attempt.
const DefaultGeminiListLag = 2 * time.Minute

// geminiRelist is how often a resumed submission lists the batches again while it waits out the listing's lag:
// a batch that shows sooner is adopted sooner.
const geminiRelist = 10 * time.Second

// Gemini drives Gemini's Batch API.
//
// Gemini's batches carry no metadata, but the listing returns each batch's display name, which is set at creation:
// a batch is named by its key and the digest of its input in its display name (batchformat.Key.DisplayName), and
// found again, adopted and converged exactly as the OpenAI format's batches are by their metadata. A listing can
// lag behind a create: the batch just created is kept even when the listing after it does not show it yet, and an
// attempt that follows one that may have created (GeminiSubmission.Resumed) lists again until the lag
// (DefaultGeminiListLag) has passed before it creates. Uploads (for inputs too large to send inline) are found
// again by display name and size, and deleted with the batch that read them (Cleanup).
type Gemini struct {
	c        *llm.GeminiClient
	pageSize int
	// listLag is the listing's assumed lag; sleep waits, or returns ctx's error.
	listLag time.Duration
	sleep   func(ctx context.Context, d time.Duration) error
	// inlineMax is the largest create body sent with its requests inline.
	inlineMax int
}

// NewGemini returns a driver of the API c calls.
func NewGemini(c *llm.GeminiClient) *Gemini {
	return &Gemini{c: c, pageSize: 100, listLag: DefaultGeminiListLag, sleep: sleepCtx, inlineMax: batchformat.GeminiInlineMax}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// Submit makes sure exactly one batch of s.Key runs s.Input and returns it: the batch an earlier attempt created,
// or a new one.
func (g *Gemini) Submit(ctx context.Context, s GeminiSubmission) (wire.BatchInfo, error) {
	digest := batchformat.Digest(s.Input)
	found, err := g.Find(ctx, s.Key, digest, s.Since)
	if err != nil {
		return wire.BatchInfo{}, err
	}
	// The create of the attempt before (which ended before this one began) may be younger than the listing: look
	// again until it cannot be. The waits are counted, not read from a clock: they are at least that long.
	for waited := time.Duration(0); len(found) == 0 && s.Resumed && waited < g.listLag; {
		step := min(geminiRelist, g.listLag-waited)
		if err := g.sleep(ctx, step); err != nil {
			return wire.BatchInfo{}, err
		}
		waited += step
		if found, err = g.Find(ctx, s.Key, digest, s.Since); err != nil {
			return wire.BatchInfo{}, err
		}
	}
	if len(found) > 0 {
		return g.converge(ctx, found)
	}
	body, err := g.createBody(ctx, s.Key, digest, s.Input)
	if err != nil {
		return wire.BatchInfo{}, err
	}
	data, err := g.c.CreateBatch(ctx, s.Model, body)
	if err != nil {
		return wire.BatchInfo{}, fmt.Errorf("create batch: %w", err)
	}
	mine, err := decodeGemini(data)
	if err != nil {
		return wire.BatchInfo{}, err
	}
	// Another attempt may have created one too: list again and keep one.
	if found, err = g.Find(ctx, s.Key, digest, s.Since); err != nil {
		return wire.BatchInfo{}, err
	}
	if !slices.ContainsFunc(found, func(b wire.BatchInfo) bool { return b.ID == mine.ID }) {
		found = append(found, mine) // a listing that lags behind the create
	}
	return g.converge(ctx, found)
}

// createBody is the BatchGenerateContentRequest of the batch of k: its requests inline when the body stays within
// inlineMax, else in an uploaded file.
func (g *Gemini) createBody(ctx context.Context, k batchformat.Key, digest string, input []byte) ([]byte, error) {
	type batch struct {
		DisplayName string `json:"displayName"`
		InputConfig struct {
			Requests json.RawMessage `json:"requests,omitempty"`
			FileName string          `json:"fileName,omitempty"`
		} `json:"inputConfig"`
	}
	b := batch{DisplayName: k.DisplayName(digest)}
	// The inline form of a request is longer than its line, so an input over the bound cannot go inline: it is
	// not encoded a second time to find out.
	if len(input) <= g.inlineMax {
		inline, err := batchformat.GeminiInline(input)
		if err != nil {
			return nil, err
		}
		b.InputConfig.Requests = inline
		body, err := json.Marshal(map[string]any{"batch": b})
		if err != nil {
			return nil, fmt.Errorf("encode batch: %w", err)
		}
		if len(body) <= g.inlineMax {
			return body, nil
		}
	}
	file, err := g.upload(ctx, fileName(k, digest), input)
	if err != nil {
		return nil, err
	}
	b.InputConfig.Requests, b.InputConfig.FileName = nil, file
	body, err := json.Marshal(map[string]any{"batch": b})
	if err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	return body, nil
}

// geminiFile is a file of the Files API.
type geminiFile struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	SizeBytes   string `json:"sizeBytes"`
}

// upload returns the name of a file named name holding data: one an earlier attempt uploaded, or a new one.
func (g *Gemini) upload(ctx context.Context, name string, data []byte) (string, error) {
	size := strconv.Itoa(len(data))
	token := ""
	for {
		raw, err := g.c.ListFiles(ctx, token, g.pageSize)
		if err != nil {
			return "", fmt.Errorf("list files: %w", err)
		}
		var page struct {
			Files         []geminiFile `json:"files"`
			NextPageToken string       `json:"nextPageToken"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return "", fmt.Errorf("list files: %w", err)
		}
		for _, f := range page.Files {
			if f.DisplayName == name && f.SizeBytes == size {
				return f.Name, nil
			}
		}
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}
	raw, err := g.c.UploadFile(ctx, name, data)
	if err != nil {
		return "", fmt.Errorf("upload batch input: %w", err)
	}
	var up struct {
		File geminiFile `json:"file"`
	}
	if err := json.Unmarshal(raw, &up); err != nil || up.File.Name == "" {
		return "", fmt.Errorf("upload batch input: the answer names no file")
	}
	return up.File.Name, nil
}

// converge keeps the batch created first (then the smallest name) and cancels the others that are still running.
func (g *Gemini) converge(ctx context.Context, found []wire.BatchInfo) (wire.BatchInfo, error) {
	slices.SortFunc(found, func(a, b wire.BatchInfo) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	for _, extra := range found[1:] {
		if extra.Status.Terminal() {
			continue
		}
		if _, err := g.Cancel(ctx, extra.ID); err != nil {
			return wire.BatchInfo{}, fmt.Errorf("cancel duplicate batch %s: %w", extra.ID, err)
		}
	}
	return found[0], nil
}

// Find lists the batches of key k with input digest among those created since (zero: all). Gemini documents no
// order of its listing, so every page is read. A batch of k with another digest is ErrChunkChanged.
func (g *Gemini) Find(ctx context.Context, k batchformat.Key, digest string, since time.Time) ([]wire.BatchInfo, error) {
	var out []wire.BatchInfo
	token := ""
	for {
		raw, err := g.c.ListBatches(ctx, token, g.pageSize)
		if err != nil {
			return nil, fmt.Errorf("list batches: %w", err)
		}
		var page struct {
			Operations    []batchformat.GeminiBatch `json:"operations"`
			NextPageToken string                    `json:"nextPageToken"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("list batches: %w", err)
		}
		for _, b := range page.Operations {
			created := b.Metadata.CreateTime
			// A second of slack for the provider's clock, as for Anthropic's intents.
			if !since.IsZero() && !created.IsZero() && created.Before(since.Add(-time.Second)) {
				continue
			}
			dn := b.Metadata.DisplayName
			if !k.NamesDisplay(dn) {
				continue
			}
			if !k.MatchesDisplay(dn, digest) {
				return nil, fmt.Errorf("%w: batch %s", ErrChunkChanged, b.Name)
			}
			info, err := batchformat.FromGemini(b)
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		token = page.NextPageToken
	}
}

func decodeGemini(data []byte) (wire.BatchInfo, error) {
	var b batchformat.GeminiBatch
	if err := json.Unmarshal(data, &b); err != nil {
		return wire.BatchInfo{}, fmt.Errorf("read batch: %w", err)
	}
	return batchformat.FromGemini(b)
}

// Poll returns batch id as it stands now, without the answers of an inline batch (Collect reads them).
func (g *Gemini) Poll(ctx context.Context, id string) (wire.BatchInfo, error) {
	data, err := g.c.GetBatch(ctx, id)
	if err != nil {
		return wire.BatchInfo{}, fmt.Errorf("get batch %s: %w", id, err)
	}
	return decodeGemini(data)
}

// Cancel asks for batch id to be cancelled and returns it as it then stands. A batch that already ended (the API
// refuses its cancel) is returned as it is.
func (g *Gemini) Cancel(ctx context.Context, id string) (wire.BatchInfo, error) {
	err := g.c.CancelBatch(ctx, id)
	var e *llm.Error
	if err != nil && !(errors.As(err, &e) && (e.Status == http.StatusBadRequest || e.Status == http.StatusConflict ||
		e.Status == http.StatusPreconditionFailed)) {
		return wire.BatchInfo{}, fmt.Errorf("cancel batch %s: %w", id, err)
	}
	return g.Poll(ctx, id)
}

// Collect streams every result of an ended batch to fn, texts of errors redacted: the lines of its responses file,
// or the inline responses of the batch itself. It can run again after dying half way, as OpenAI.Collect can.
func (g *Gemini) Collect(ctx context.Context, info wire.BatchInfo, fn func(batchformat.Result) error) (err error) {
	if info.ResponsesFile != "" {
		rc, err := g.c.DownloadFile(ctx, info.ResponsesFile)
		if err != nil {
			return fmt.Errorf("collect batch %s file %s: %w", info.ID, info.ResponsesFile, err)
		}
		defer func() { err = errors.Join(err, rc.Close()) }()
		if err := batchformat.Scan(wire.FormatGemini, rc, g.c.Redact, fn); err != nil {
			return fmt.Errorf("collect batch %s file %s: %w", info.ID, info.ResponsesFile, err)
		}
		return nil
	}
	rc, err := g.c.BatchWithResponses(ctx, info.ID)
	if err != nil {
		return fmt.Errorf("collect batch %s: %w", info.ID, err)
	}
	defer func() { err = errors.Join(err, rc.Close()) }()
	if err := batchformat.ScanGeminiInline(rc, g.c.Redact, fn); err != nil {
		return fmt.Errorf("collect batch %s: %w", info.ID, err)
	}
	return nil
}
