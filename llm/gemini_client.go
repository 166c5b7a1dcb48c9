package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/silicolab/silico/errclass"
)

// GeminiClient calls the batch and file methods of Gemini's native API with one API key, sent as the
// x-goog-api-key header (never in a URL, where it would reach logs). Like Client it is safe for concurrent use,
// sends each call as exactly one HTTP request (an upload is two: its start and its bytes), returns only *Error
// values, and removes the key from everything the provider sends back. Synchronous calls of provider gemini do
// not go through it: they use Client on the API's OpenAI-compatible endpoint.
type GeminiClient struct {
	hc      *http.Client
	baseURL string
	key     string
	redact  func(string) string
	now     func() time.Time
	// noFields is set once the API refused a poll's partial response: polls then get the whole batch.
	noFields atomic.Bool
}

// NewGeminiClient returns a client of the native API at baseURL (DefaultGeminiBaseURL, or a simulator's
// "http://127.0.0.1:8088/v1beta"). hc is the process's shared *http.Client; nil means a private one. The client
// follows no redirect, as AnthropicClient does not: the key is a header net/http would forward to another host.
func NewGeminiClient(baseURL, apiKey string, hc *http.Client) *GeminiClient {
	own := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if hc != nil {
		own.Transport, own.Timeout, own.Jar = hc.Transport, hc.Timeout, hc.Jar
	}
	return &GeminiClient{hc: own, baseURL: strings.TrimRight(baseURL, "/"), key: apiKey, redact: redactor(apiKey), now: time.Now}
}

// String describes the client without its key.
func (c *GeminiClient) String() string {
	key := "none"
	if c.key != "" {
		key = "set"
	}
	return fmt.Sprintf("llm.GeminiClient{base_url: %s, api_key: %s}", c.baseURL, key)
}

// GoString is String, so %#v cannot print the key either.
func (c *GeminiClient) GoString() string { return c.String() }

// BaseURL is the native API the client calls.
func (c *GeminiClient) BaseURL() string { return c.baseURL }

// Redact applies the client's redaction to s.
func (c *GeminiClient) Redact(s string) string { return c.redact(s) }

// prefixed is the base URL with prefix ("/upload", "/download") in front of its path: where the API takes and
// gives the bytes of files.
func (c *GeminiClient) prefixed(prefix string) string {
	u, err := url.Parse(c.baseURL)
	if err != nil {
		return c.baseURL
	}
	u.Path = prefix + u.Path
	return strings.TrimRight(u.String(), "/")
}

// CreateBatch creates a batch of model (its name without "models/") from body, the BatchGenerateContentRequest
// ({"batch": {...}}), and returns the operation as JSON.
func (c *GeminiClient) CreateBatch(ctx context.Context, model string, body []byte) ([]byte, error) {
	return c.do(ctx, http.MethodPost, c.baseURL+"/models/"+url.PathEscape(model)+":batchGenerateContent", body, nil)
}

// geminiPollFields is the partial response a poll asks for (the API's "fields" system parameter): the batch's
// state, counts and result file, without the answers of an inline batch, which would otherwise be downloaded on
// every poll.
const geminiPollFields = "name,done,error,metadata(displayName,model,state,createTime,updateTime,endTime,batchStats,output/responsesFile)"

// GetBatch returns batch name ("batches/...") as JSON, without the answers of an inline batch where the API takes
// the partial response; where it refuses it (400: the batch is an operation's metadata, which a field selection
// may not reach into), the whole batch, from then on.
func (c *GeminiClient) GetBatch(ctx context.Context, name string) ([]byte, error) {
	target := c.baseURL + "/" + batchPath(name)
	if !c.noFields.Load() {
		data, err := c.do(ctx, http.MethodGet, target+"?"+url.Values{"fields": {geminiPollFields}}.Encode(), nil, nil)
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			return data, err
		}
		c.noFields.Store(true)
	}
	return c.do(ctx, http.MethodGet, target, nil, nil)
}

// BatchWithResponses streams batch name as JSON, with the answers of an inline batch; the caller closes it.
func (c *GeminiClient) BatchWithResponses(ctx context.Context, name string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, http.MethodGet, c.baseURL+"/"+batchPath(name), nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// CancelBatch asks for batch name to be cancelled.
func (c *GeminiClient) CancelBatch(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPost, c.baseURL+"/"+batchPath(name)+":cancel", nil, nil)
	return err
}

// DeleteBatch deletes the ended batch name ("batches/..."), its inline answers with it.
func (c *GeminiClient) DeleteBatch(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, c.baseURL+"/"+batchPath(name), nil, nil)
	return err
}

// DeleteFile deletes the file name ("files/...") of the Files API.
func (c *GeminiClient) DeleteFile(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, c.baseURL+"/"+filePath(name), nil, nil)
	return err
}

// ListBatches returns one page of the account's batches (pageToken "" for the first) as JSON
// ({"operations": [...], "nextPageToken": ...}).
func (c *GeminiClient) ListBatches(ctx context.Context, pageToken string, pageSize int) ([]byte, error) {
	q := url.Values{"pageSize": {strconv.Itoa(pageSize)}}
	if pageToken != "" {
		q.Set("pageToken", pageToken)
	}
	return c.do(ctx, http.MethodGet, c.baseURL+"/batches?"+q.Encode(), nil, nil)
}

// ListFiles returns one page of the account's files as JSON ({"files": [...], "nextPageToken": ...}).
func (c *GeminiClient) ListFiles(ctx context.Context, pageToken string, pageSize int) ([]byte, error) {
	q := url.Values{"pageSize": {strconv.Itoa(pageSize)}}
	if pageToken != "" {
		q.Set("pageToken", pageToken)
	}
	return c.do(ctx, http.MethodGet, c.baseURL+"/files?"+q.Encode(), nil, nil)
}

// UploadFile uploads data as a JSONL file named displayName through the Files API's resumable upload (a start
// request, then the bytes in one request that finalizes it) and returns the file as JSON ({"file": {...}}). The
// upload URL the start returns must be on the client's host: the key goes with the bytes.
func (c *GeminiClient) UploadFile(ctx context.Context, displayName string, data []byte) ([]byte, error) {
	meta, err := json.Marshal(map[string]any{"file": map[string]string{"displayName": displayName}})
	if err != nil {
		return nil, &Error{Class: errclass.InvalidRequest, Message: err.Error(), cause: err}
	}
	resp, err := c.send(ctx, http.MethodPost, c.prefixed("/upload")+"/files", meta, http.Header{
		"X-Goog-Upload-Protocol":              {"resumable"},
		"X-Goog-Upload-Command":               {"start"},
		"X-Goog-Upload-Header-Content-Length": {strconv.Itoa(len(data))},
		"X-Goog-Upload-Header-Content-Type":   {"application/jsonl"},
	})
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	target := resp.Header.Get("X-Goog-Upload-URL")
	u, uerr := url.Parse(target)
	base, berr := url.Parse(c.baseURL)
	if target == "" || uerr != nil || berr != nil || u.Scheme != base.Scheme || u.Host != base.Host {
		return nil, &Error{Class: errclass.InvalidRequest, Code: "upload_url",
			Message: fmt.Sprintf("upload of %s: the upload URL %q is not on %s", displayName, c.redact(target), base.Host)}
	}
	return c.do(ctx, http.MethodPost, target, data, http.Header{
		"X-Goog-Upload-Command": {"upload, finalize"},
		"X-Goog-Upload-Offset":  {"0"},
	})
}

// DownloadFile streams the bytes of file name ("files/..."); the caller closes them.
func (c *GeminiClient) DownloadFile(ctx context.Context, name string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, http.MethodGet, c.prefixed("/download")+"/"+filePath(name)+":download?alt=media", nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// batchPath is name as a path: "batches/" and its id, escaped.
func batchPath(name string) string {
	return "batches/" + url.PathEscape(strings.TrimPrefix(name, "batches/"))
}

func filePath(name string) string {
	return "files/" + url.PathEscape(strings.TrimPrefix(name, "files/"))
}

// do sends one request and returns its body when the status is 200.
func (c *GeminiClient) do(ctx context.Context, method, target string, body []byte, h http.Header) ([]byte, error) {
	resp, err := c.send(ctx, method, target, body, h)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, c.fail(err)
	}
	return data, nil
}

// send sends one request to target and returns the response when its status is 200; any other status is an
// *Error classified by GeminiError.
func (c *GeminiClient) send(ctx context.Context, method, target string, body []byte, h http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, &Error{Class: errclass.InvalidRequest, Message: c.redact(err.Error())}
	}
	for k, vs := range h {
		r.Header[k] = vs
	}
	if c.key != "" {
		r.Header.Set("x-goog-api-key", c.key)
	}
	if body != nil && r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(r)
	if err != nil {
		return nil, c.fail(err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)) // the status says enough if the body is cut
	var er struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &er) == nil && er.Error.Message != "" {
		msg = er.Error.Message
	}
	e := GeminiError(resp.StatusCode, false, c.redact(er.Error.Status), c.redact(msg))
	e.RetryAfter = retryDelay(resp.Header, resp.StatusCode, c.now())
	return nil, e
}

// fail classifies a transport failure, its text redacted; the cause is kept only when its text holds no key.
func (c *GeminiClient) fail(err error) *Error {
	e := Classify(err)
	out := &Error{Class: e.Class, Status: e.Status, Code: e.Code, Message: c.redact(e.Message)}
	if c.key == "" || !strings.Contains(err.Error(), c.key) {
		out.cause = err
	}
	return out
}
