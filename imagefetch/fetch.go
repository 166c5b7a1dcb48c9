// Package imagefetch downloads the pictures of a run's cells. One Fetcher serves every pass of a worker process:
// it keeps the pictures it fetched in an LRU keyed by URL, so a picture shown by many cells is downloaded once,
// and concurrent requests for one URL share one download. Each pass bounds its own downloads with Slots.
package imagefetch

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
)

// Image is a picture's bytes and what a cell records of them.
type Image struct {
	Data []byte
	// MediaType is the sniffed type, such as "image/png".
	MediaType string
	// SHA256 is the hex digest of Data: the picture's identity in results and in the response cache key.
	SHA256 string
}

// DataURL is the picture as a data URL, the inline transport's form.
func (im Image) DataURL() string {
	return "data:" + im.MediaType + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

// newImage wraps fetched bytes; it fails when they are not a picture.
func newImage(data []byte, mediaType string) (Image, error) {
	if mediaType == "" {
		mediaType = http.DetectContentType(data)
	}
	if !strings.HasPrefix(mediaType, "image/") {
		return Image{}, fmt.Errorf("not an image (%s)", mediaType)
	}
	sum := sha256.Sum256(data)
	return Image{Data: data, MediaType: mediaType, SHA256: hex.EncodeToString(sum[:])}, nil
}

// Error is a picture that could not be fetched.
type Error struct {
	URL string
	// Status is the last HTTP status, 0 when none came.
	Status int
	// Tries is how many downloads were made.
	Tries int
	// Permanent says that trying again would not help (404, 403, not an image).
	Permanent bool
	Err       error
}

func (e *Error) Error() string {
	tries := "1 try"
	if e.Tries != 1 {
		tries = fmt.Sprintf("%d tries", e.Tries)
	}
	return fmt.Sprintf("image %s: %v (%s)", e.URL, e.Err, tries)
}

func (e *Error) Unwrap() error { return e.Err }

// Code is the error's short name for a record's error_code: "http_404", "not_an_image", "transport".
func (e *Error) Code() string {
	switch {
	case e.Status != 0 && e.Status != http.StatusOK:
		return fmt.Sprintf("http_%d", e.Status)
	case e.Permanent:
		return "not_an_image"
	}
	return "transport"
}

// Defaults of Config.
const (
	DefaultEntries    = 512
	DefaultMaxTries   = 4
	DefaultBackoff    = 250 * time.Millisecond
	DefaultTryTimeout = 30 * time.Second
	DefaultFailureTTL = time.Minute
	// MaxBytes is the largest picture accepted (providers refuse larger ones anyway).
	MaxBytes = 20 << 20
)

// Config tunes a Fetcher; zero values mean the defaults.
type Config struct {
	// Client makes the downloads: the process's shared client (nil: a private one).
	Client *http.Client
	// Entries is the LRU's size in pictures.
	Entries int
	// MaxTries bounds the downloads of one picture against transient failures (5xx, 429, resets, timeouts);
	// these tries are the fetcher's own, apart from the tries of the model call.
	MaxTries int
	// Backoff is the wait after the first failed try; it doubles after each.
	Backoff time.Duration
	// TryTimeout bounds one download.
	TryTimeout time.Duration
	// FailureTTL is how long a permanent failure (404, not an image) is remembered, so that the cells that
	// share a missing picture cost one download, and a picture put in place later is found again.
	FailureTTL time.Duration
}

// Fetcher downloads pictures. It is safe for concurrent use.
type Fetcher struct {
	cfg     Config
	cache   *lru.Cache[string, entry]
	flights singleflight.Group
}

// New returns a fetcher with cfg.
func New(cfg Config) *Fetcher {
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Entries <= 0 {
		cfg.Entries = DefaultEntries
	}
	if cfg.MaxTries <= 0 {
		cfg.MaxTries = DefaultMaxTries
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.TryTimeout <= 0 {
		cfg.TryTimeout = DefaultTryTimeout
	}
	if cfg.FailureTTL <= 0 {
		cfg.FailureTTL = DefaultFailureTTL
	}
	c, err := lru.New[string, entry](cfg.Entries)
	if err != nil {
		panic(err) // only for a size ≤ 0, excluded above
	}
	return &Fetcher{cfg: cfg, cache: c}
}

// NewSlots returns the download slots of one pass: at most n downloads at once.
func NewSlots(n int) *semaphore.Weighted { return semaphore.NewWeighted(int64(max(1, n))) }

// Get returns the picture ref names: a data URL is decoded, a URL is taken from the LRU or downloaded within
// slots. A download serves every caller that asks for its URL meanwhile; it runs to its end even when the
// caller that started it goes away, so the others still get it.
func (f *Fetcher) Get(ctx context.Context, ref string, slots *semaphore.Weighted) (Image, error) {
	if strings.HasPrefix(ref, "data:") {
		return DecodeDataURL(ref)
	}
	if e, ok := f.cached(ref); ok {
		return e.im, e.err
	}
	fctx := context.WithoutCancel(ctx)
	ch := f.flights.DoChan(ref, func() (any, error) {
		if e, ok := f.cached(ref); ok { // landed between the lookup and the flight
			return e.im, e.err
		}
		im, err := f.download(fctx, ref, slots)
		var fe *Error
		switch {
		case err == nil:
			f.cache.Add(ref, entry{im: im})
		case errors.As(err, &fe) && fe.Permanent:
			f.cache.Add(ref, entry{err: err, until: time.Now().Add(f.cfg.FailureTTL)})
		}
		return im, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return Image{}, r.Err
		}
		return r.Val.(Image), nil
	case <-ctx.Done():
		return Image{}, ctx.Err()
	}
}

// entry is what the LRU holds of a URL: its picture, or a permanent failure until a time.
type entry struct {
	im    Image
	err   error
	until time.Time
}

// cached is the LRU's entry of url, unless it is a failure that has expired.
func (f *Fetcher) cached(url string) (entry, bool) {
	e, ok := f.cache.Get(url)
	if !ok || (e.err != nil && !time.Now().Before(e.until)) {
		return entry{}, false
	}
	return e, true
}

// DecodeDataURL reads a data URL of a picture (data:image/png;base64,...).
func DecodeDataURL(ref string) (Image, error) {
	head, payload, ok := strings.Cut(strings.TrimPrefix(ref, "data:"), ",")
	if !ok || !strings.HasSuffix(head, ";base64") {
		return Image{}, &Error{URL: shortRef(ref), Permanent: true, Err: errors.New("a data URL must be data:image/<type>;base64,<bytes>")}
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return Image{}, &Error{URL: shortRef(ref), Permanent: true, Err: fmt.Errorf("data URL: %w", err)}
	}
	im, err := newImage(data, strings.TrimSuffix(head, ";base64"))
	if err != nil {
		return Image{}, &Error{URL: shortRef(ref), Permanent: true, Err: err}
	}
	return im, nil
}

// shortRef names a reference in messages: a data URL by its head only.
func shortRef(ref string) string {
	if len(ref) > 48 && strings.HasPrefix(ref, "data:") {
		return ref[:48] + "…"
	}
	return ref
}

// download fetches url, trying again after transient failures.
func (f *Fetcher) download(ctx context.Context, url string, slots *semaphore.Weighted) (Image, error) {
	wait := f.cfg.Backoff
	for try := 1; ; try++ {
		im, status, err := f.try(ctx, url, slots)
		if err == nil {
			return im, nil
		}
		e := &Error{URL: url, Status: status, Tries: try, Err: err, Permanent: permanent(status, err)}
		if e.Permanent || try >= f.cfg.MaxTries {
			return Image{}, e
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Image{}, e
		}
		wait *= 2
	}
}

// errNotImage marks bytes that are no picture: permanent.
var errNotImage = errors.New("not an image")

// permanent says whether a failed download would fail again: any 4xx status but 408 and 429, or bytes that are
// no picture. Server errors, resets and timeouts are transient.
func permanent(status int, err error) bool {
	if errors.Is(err, errNotImage) {
		return true
	}
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// try makes one download within a slot.
func (f *Fetcher) try(ctx context.Context, url string, slots *semaphore.Weighted) (Image, int, error) {
	if err := slots.Acquire(ctx, 1); err != nil {
		return Image{}, 0, err
	}
	defer slots.Release(1)
	ctx, cancel := context.WithTimeout(ctx, f.cfg.TryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Image{}, 0, fmt.Errorf("%w: %v", errNotImage, err)
	}
	resp, err := f.cfg.Client.Do(req)
	if err != nil {
		return Image{}, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) // lets the connection be reused
		return Image{}, resp.StatusCode, errors.New(resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	if err != nil {
		return Image{}, resp.StatusCode, err
	}
	if len(data) > MaxBytes {
		return Image{}, resp.StatusCode, fmt.Errorf("%w: larger than %d MiB", errNotImage, MaxBytes>>20)
	}
	im, err := newImage(data, mediaType(resp.Header.Get("Content-Type")))
	if err != nil {
		return Image{}, resp.StatusCode, fmt.Errorf("%w: %v", errNotImage, err)
	}
	return im, resp.StatusCode, nil
}

// mediaType is the type of a Content-Type header when it names an image, else "" (sniffed from the bytes).
func mediaType(h string) string {
	t, _, _ := strings.Cut(h, ";")
	t = strings.TrimSpace(strings.ToLower(t))
	if strings.HasPrefix(t, "image/") {
		return t
	}
	return ""
}
