package llm

import (
	"context"
	"io"

	openai "github.com/sashabaranov/go-openai"
)

// The Files and Batches API of an OpenAI-compatible endpoint, one HTTP request per method like Chat, with the
// same error classes and the same redaction of the key from everything the provider sends back. Package batchapi
// drives them exactly once per batch.

// UploadBatchFile uploads data as a file of purpose "batch" named name.
func (c *Client) UploadBatchFile(ctx context.Context, name string, data []byte) (openai.File, error) {
	capt := &capture{}
	f, err := c.oc.CreateFileBytes(context.WithValue(ctx, captureKey{}, capt),
		openai.FileBytesRequest{Name: name, Bytes: data, Purpose: openai.PurposeBatch})
	if err != nil {
		return openai.File{}, c.fail(err, capt)
	}
	return f, nil
}

// ListFiles lists the files of the account.
func (c *Client) ListFiles(ctx context.Context) ([]openai.File, error) {
	capt := &capture{}
	l, err := c.oc.ListFiles(context.WithValue(ctx, captureKey{}, capt))
	if err != nil {
		return nil, c.fail(err, capt)
	}
	return l.Files, nil
}

// CreateBatch creates a batch of the uploaded file fileID for endpoint, with a 24 h window and metadata.
func (c *Client) CreateBatch(ctx context.Context, fileID, endpoint string, metadata map[string]string) (openai.Batch, error) {
	md := make(map[string]any, len(metadata))
	for k, v := range metadata {
		md[k] = v
	}
	capt := &capture{}
	b, err := c.oc.CreateBatch(context.WithValue(ctx, captureKey{}, capt), openai.CreateBatchRequest{
		InputFileID: fileID, Endpoint: openai.BatchEndpoint(endpoint), CompletionWindow: "24h", Metadata: md})
	if err != nil {
		return openai.Batch{}, c.fail(err, capt)
	}
	return b.Batch, nil
}

// RetrieveBatch returns batch id as the provider describes it now.
func (c *Client) RetrieveBatch(ctx context.Context, id string) (openai.Batch, error) {
	capt := &capture{}
	b, err := c.oc.RetrieveBatch(context.WithValue(ctx, captureKey{}, capt), id)
	if err != nil {
		return openai.Batch{}, c.fail(err, capt)
	}
	return b.Batch, nil
}

// CancelBatch asks the provider to cancel batch id.
func (c *Client) CancelBatch(ctx context.Context, id string) (openai.Batch, error) {
	capt := &capture{}
	b, err := c.oc.CancelBatch(context.WithValue(ctx, captureKey{}, capt), id)
	if err != nil {
		return openai.Batch{}, c.fail(err, capt)
	}
	return b.Batch, nil
}

// ListBatches returns one page of the account's batches, newest first: at most limit, after the batch id after
// ("" for the first page).
func (c *Client) ListBatches(ctx context.Context, after string, limit int) (batches []openai.Batch, more bool, err error) {
	capt := &capture{}
	var a *string
	if after != "" {
		a = &after
	}
	l, err := c.oc.ListBatch(context.WithValue(ctx, captureKey{}, capt), a, &limit)
	if err != nil {
		return nil, false, c.fail(err, capt)
	}
	return l.Data, l.HasMore, nil
}

// FileContent streams the content of file id; the caller closes it. Its text is the provider's: redact what is
// recorded of it (see Redactor).
func (c *Client) FileContent(ctx context.Context, id string) (io.ReadCloser, error) {
	capt := &capture{}
	rc, err := c.oc.GetFileContent(context.WithValue(ctx, captureKey{}, capt), id)
	if err != nil {
		return nil, c.fail(err, capt)
	}
	return rc, nil
}

// DeleteFile deletes file id. A file the provider does not have is an *Error of status 404.
func (c *Client) DeleteFile(ctx context.Context, id string) error {
	capt := &capture{}
	if err := c.oc.DeleteFile(context.WithValue(ctx, captureKey{}, capt), id); err != nil {
		return c.fail(err, capt)
	}
	return nil
}

// Redact applies the client's redaction (its key, and anything shaped like an OpenAI key) to s.
func (c *Client) Redact(s string) string { return c.redact(s) }
