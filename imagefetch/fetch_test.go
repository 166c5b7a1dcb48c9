package imagefetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pngBytes is a w×h PNG.
func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fakeServer answers in memory after latency (fake time inside a synctest bubble) and counts the requests per
// URL and the most in flight at once.
type fakeServer struct {
	latency time.Duration
	body    []byte
	status  map[string][]int // statuses to answer per URL, in turn; then 200

	mu       sync.Mutex
	requests map[string]int
	inFlight int
	peak     int
}

func (s *fakeServer) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.requests[r.URL.String()]++
	s.inFlight++
	s.peak = max(s.peak, s.inFlight)
	status := http.StatusOK
	if st := s.status[r.URL.String()]; len(st) > 0 {
		status, s.status[r.URL.String()] = st[0], st[1:]
	}
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.inFlight--; s.mu.Unlock() }()
	select {
	case <-time.After(s.latency):
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(s.body)), Request: r}, nil
}

func newFake(t *testing.T) *fakeServer {
	return &fakeServer{latency: 100 * time.Millisecond, body: pngBytes(t, 4, 3), requests: map[string]int{}, status: map[string][]int{}}
}

func (s *fakeServer) count(url string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[url]
}

// Concurrent requests for one URL download it once; later ones are served from the LRU; the LRU forgets the
// least recently used picture first.
func TestSharedDownloadAndLRU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(t)
		f := New(Config{Client: &http.Client{Transport: srv}, Entries: 2})
		slots := NewSlots(4)
		ctx := context.Background()
		var wg sync.WaitGroup
		var digests sync.Map
		for i := range 10 {
			wg.Go(func() {
				im, err := f.Get(ctx, "https://img.test/a.png", slots)
				if err != nil {
					t.Error(err)
					return
				}
				digests.Store(i, im.SHA256)
			})
		}
		wg.Wait()
		if n := srv.count("https://img.test/a.png"); n != 1 {
			t.Fatalf("10 concurrent requests for one URL made %d downloads, want 1", n)
		}
		for _, u := range []string{"https://img.test/b.png", "https://img.test/a.png", "https://img.test/c.png"} {
			if _, err := f.Get(ctx, u, slots); err != nil {
				t.Fatal(err)
			}
		}
		// a was used after b, so c evicted b.
		for _, u := range []string{"https://img.test/a.png", "https://img.test/b.png"} {
			if _, err := f.Get(ctx, u, slots); err != nil {
				t.Fatal(err)
			}
		}
		if a, b := srv.count("https://img.test/a.png"), srv.count("https://img.test/b.png"); a != 1 || b != 2 {
			t.Errorf("downloads: a %d (want 1, kept), b %d (want 2, evicted and fetched again)", a, b)
		}
		im, _ := f.Get(ctx, "https://img.test/a.png", slots)
		if im.MediaType != "image/png" || len(im.SHA256) != 64 {
			t.Errorf("image = %s %q", im.MediaType, im.SHA256)
		}
	})
}

// A pass's slots bound its downloads at once, and the downloads take as long as the bound implies.
func TestSlotsBoundDownloads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(t)
		f := New(Config{Client: &http.Client{Transport: srv}})
		slots := NewSlots(3)
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				if _, err := f.Get(context.Background(), fmt.Sprintf("https://img.test/%d.png", i), slots); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if srv.peak != 3 {
			t.Errorf("peak downloads in flight = %d, want 3", srv.peak)
		}
		if d := time.Since(start); d != 400*time.Millisecond {
			t.Errorf("12 downloads of 100 ms through 3 slots took %v, want 400ms", d)
		}
	})
}

// Transient failures are tried again with backoff; a 404 is permanent at once; the tries are the fetcher's own.
func TestRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(t)
		srv.status["https://img.test/flaky.png"] = []int{503, 500}
		srv.status["https://img.test/gone.png"] = []int{404}
		srv.status["https://img.test/down.png"] = []int{502, 502, 502, 502, 502}
		f := New(Config{Client: &http.Client{Transport: srv}})
		slots := NewSlots(2)
		ctx := context.Background()
		if _, err := f.Get(ctx, "https://img.test/flaky.png", slots); err != nil {
			t.Errorf("two 5xx then 200: %v", err)
		}
		if n := srv.count("https://img.test/flaky.png"); n != 3 {
			t.Errorf("flaky: %d downloads, want 3", n)
		}
		_, err := f.Get(ctx, "https://img.test/gone.png", slots)
		var e *Error
		if !errors.As(err, &e) || !e.Permanent || e.Tries != 1 || e.Code() != "http_404" {
			t.Errorf("404: err = %v, want a permanent http_404 after 1 try", err)
		}
		_, err = f.Get(ctx, "https://img.test/down.png", slots)
		if !errors.As(err, &e) || e.Permanent || e.Tries != DefaultMaxTries || e.Code() != "http_502" {
			t.Errorf("502 every time: err = %v, want http_502 after %d tries", err, DefaultMaxTries)
		}
		// A permanent failure is remembered for FailureTTL, a transient one not at all.
		if _, err := f.Get(ctx, "https://img.test/gone.png", slots); err == nil || srv.count("https://img.test/gone.png") != 1 {
			t.Errorf("a 404 asked again at once: err %v after %d downloads, want the remembered 404 after 1", err, srv.count("https://img.test/gone.png"))
		}
		time.Sleep(DefaultFailureTTL)
		if _, err := f.Get(ctx, "https://img.test/gone.png", slots); err != nil {
			t.Errorf("a 404 asked again after FailureTTL (now served): %v", err)
		}
		if _, err := f.Get(ctx, "https://img.test/down.png", slots); err != nil {
			t.Errorf("5xx asked again (now served): %v", err)
		}
	})
}

func TestDataURL(t *testing.T) {
	data := pngBytes(t, 2, 2)
	im, err := newImage(data, "")
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeDataURL(im.DataURL())
	if err != nil || back.SHA256 != im.SHA256 || back.MediaType != "image/png" {
		t.Errorf("DecodeDataURL(DataURL()) = %v, %v", back.SHA256, err)
	}
	if _, err := DecodeDataURL("data:text/plain;base64,aGVsbG8="); err == nil {
		t.Error("a data URL of text: want an error")
	}
}
