package batchapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

// What a collected batch leaves at its provider, and how it is removed. A batch's input and results stay at the
// provider (OpenAI keeps the files until they are deleted; Anthropic keeps an ended batch's results for 29 days),
// holding the prompts and answers of a run outside its store. Cleanup removes them once the collect is recorded,
// so it must never run before: the results are read from what it deletes. Deleting what is already gone (an
// earlier attempt of the cleanup got that far) is no error, so a cleanup can simply run again.

// NotFound reports whether err says the provider does not have what was asked for (HTTP 404): a file or batch
// already deleted, or one it no longer knows.
func NotFound(err error) bool {
	var e *llm.Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// Cleanup deletes the batch's input, output and error files. The batch object itself cannot be deleted through
// the API; it holds no request or answer.
func (o *OpenAI) Cleanup(ctx context.Context, info wire.BatchInfo) error {
	var errs []error
	for _, id := range []string{info.InputFileID, info.OutputFileID, info.ErrorFileID} {
		if id == "" {
			continue
		}
		if err := o.c.DeleteFile(ctx, id); err != nil && !NotFound(err) {
			errs = append(errs, fmt.Errorf("delete file %s of batch %s: %w", id, info.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Cleanup deletes the ended batch, and its results with it (Message Batches have no separate files).
func (a *Anthropic) Cleanup(ctx context.Context, info wire.BatchInfo) error {
	if err := a.c.DeleteMessageBatch(ctx, info.ID); err != nil && !NotFound(err) {
		return fmt.Errorf("delete message batch %s: %w", info.ID, err)
	}
	return nil
}

// Cleanup deletes the ended batch (its inline answers with it), its responses file and its uploaded input file
// (InputFileID, which the batch names in its inputConfig; a caller that submits the same lines again clears it).
// The Files API would delete the upload 48 hours after it was made; until then it holds the chunk's prompts.
func (g *Gemini) Cleanup(ctx context.Context, info wire.BatchInfo) error {
	var errs []error
	for _, f := range []string{info.ResponsesFile, info.InputFileID} {
		if f == "" {
			continue
		}
		if err := g.c.DeleteFile(ctx, f); err != nil && !NotFound(err) {
			errs = append(errs, fmt.Errorf("delete file %s of batch %s: %w", f, info.ID, err))
		}
	}
	if err := g.c.DeleteBatch(ctx, info.ID); err != nil && !NotFound(err) {
		errs = append(errs, fmt.Errorf("delete batch %s: %w", info.ID, err))
	}
	return errors.Join(errs...)
}
