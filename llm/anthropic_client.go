package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
)

// AnthropicClient calls Anthropic's Messages API and Message Batches with one API key (sent as x-api-key, with
// anthropic-version). Like Client it is safe for concurrent use, sends each call as exactly one HTTP request,
// returns only *Error values, and removes the key from everything the provider sends back.
type AnthropicClient struct {
	hc      *http.Client
	baseURL string
	key     string
	redact  func(string) string
	now     func() time.Time
}

// NewAnthropicClient returns a client of the API at baseURL (DefaultAnthropicBaseURL, or a simulator's
// "http://127.0.0.1:8088/v1"). hc is the process's shared *http.Client (its transport and timeout are used);
// nil means a private one.
//
// The client follows no redirect: net/http drops Authorization on a redirect to another host but forwards any
// other header, x-api-key included, and Anthropic's API does not redirect. A 3xx is returned as an error.
func NewAnthropicClient(baseURL, apiKey string, hc *http.Client) *AnthropicClient {
	own := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if hc != nil {
		own.Transport, own.Timeout, own.Jar = hc.Transport, hc.Timeout, hc.Jar
	}
	return &AnthropicClient{hc: own, baseURL: strings.TrimRight(baseURL, "/"), key: apiKey, redact: redactor(apiKey),
		now: time.Now}
}

// String describes the client without its key.
func (c *AnthropicClient) String() string {
	key := "none"
	if c.key != "" {
		key = "set"
	}
	return fmt.Sprintf("llm.AnthropicClient{base_url: %s, api_key: %s}", c.baseURL, key)
}

// GoString is String, so %#v cannot print the key either.
func (c *AnthropicClient) GoString() string { return c.String() }

// BaseURL is the API the client calls.
func (c *AnthropicClient) BaseURL() string { return c.baseURL }

// Redact applies the client's redaction to s.
func (c *AnthropicClient) Redact(s string) string { return c.redact(s) }

// Chat sends one Messages API request built by AnthropicBody. Errors are classified by AnthropicError from the
// response's status and error type, with RetryAfter from the retry-after header; transport failures as Classify
// classifies them.
func (c *AnthropicClient) Chat(ctx context.Context, req Request) (Response, error) {
	body, err := AnthropicBody(req)
	if err != nil {
		return Response{}, &Error{Class: errclass.InvalidRequest, Message: err.Error(), cause: err}
	}
	// No cell id goes with it (Request.CellID): provider anthropic is a real provider, which must not learn them.
	data, err := c.do(ctx, http.MethodPost, experiment.PathMessages, body)
	if err != nil {
		return Response{}, err
	}
	resp, err := AnthropicAnswer(data)
	if err != nil {
		return Response{}, err
	}
	return resp.Redacted(c.redact), nil
}

// CreateMessageBatch creates a Message Batch of body ({"requests": [...]}, batchformat.Encode) and returns the batch
// object as JSON.
func (c *AnthropicClient) CreateMessageBatch(ctx context.Context, body []byte) ([]byte, error) {
	return c.do(ctx, http.MethodPost, "/messages/batches", body)
}

// RetrieveMessageBatch returns batch id's object as JSON.
func (c *AnthropicClient) RetrieveMessageBatch(ctx context.Context, id string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, "/messages/batches/"+url.PathEscape(id), nil)
}

// CancelMessageBatch asks for batch id to be cancelled and returns its object as JSON.
func (c *AnthropicClient) CancelMessageBatch(ctx context.Context, id string) ([]byte, error) {
	return c.do(ctx, http.MethodPost, "/messages/batches/"+url.PathEscape(id)+"/cancel", nil)
}

// DeleteMessageBatch deletes ended batch id, its results with it. A batch the API does not have is an *Error of
// status 404.
func (c *AnthropicClient) DeleteMessageBatch(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, "/messages/batches/"+url.PathEscape(id), nil)
	return err
}

// ListMessageBatches returns one page of the account's batches, newest first, after afterID ("" for the first
// page), as JSON ({"data": [...], "has_more": ..., "last_id": ...}).
func (c *AnthropicClient) ListMessageBatches(ctx context.Context, afterID string, limit int) ([]byte, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if afterID != "" {
		q.Set("after_id", afterID)
	}
	return c.do(ctx, http.MethodGet, "/messages/batches?"+q.Encode(), nil)
}

// MessageBatchResults streams the JSONL results of ended batch id from resultsURL, the batch's results_url (the
// API asks clients not to assume its path); the caller closes them. A results URL of another origin than the
// client's base URL is refused: the key would go with the request. An empty resultsURL takes the documented path.
func (c *AnthropicClient) MessageBatchResults(ctx context.Context, id, resultsURL string) (io.ReadCloser, error) {
	target := c.baseURL + "/messages/batches/" + url.PathEscape(id) + "/results"
	if resultsURL != "" {
		u, err := url.Parse(resultsURL)
		base, berr := url.Parse(c.baseURL)
		if err != nil || berr != nil || u.Scheme != base.Scheme || u.Host != base.Host {
			return nil, &Error{Class: errclass.InvalidRequest, Code: "results_url",
				Message: fmt.Sprintf("batch %s: results_url %q is not on %s", id, c.redact(resultsURL), base.Host)}
		}
		target = resultsURL
	}
	resp, err := c.send(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// do sends one request and returns its body when the status is 200.
func (c *AnthropicClient) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	resp, err := c.send(ctx, method, c.baseURL+path, body)
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
// *Error.
func (c *AnthropicClient) send(ctx context.Context, method, target string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, &Error{Class: errclass.InvalidRequest, Message: c.redact(err.Error()), cause: err}
	}
	if c.key != "" {
		r.Header.Set("x-api-key", c.key)
	}
	r.Header.Set("anthropic-version", AnthropicVersion)
	if body != nil {
		r.Header.Set("content-type", "application/json")
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
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &er) == nil && er.Error.Type != "" {
		msg = er.Error.Message
	}
	e := AnthropicError(resp.StatusCode, c.redact(er.Error.Type), c.redact(msg))
	e.RetryAfter = retryDelay(resp.Header, resp.StatusCode, c.now())
	return nil, e
}

// fail classifies a transport failure, its text redacted. The cause (which Temporal would record level by level)
// is kept only when its text holds no key.
func (c *AnthropicClient) fail(err error) *Error {
	e := Classify(err)
	out := &Error{Class: e.Class, Status: e.Status, Code: e.Code, Message: c.redact(e.Message)}
	if !strings.Contains(err.Error(), c.key) || c.key == "" {
		out.cause = err
	}
	return out
}
