package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/sim"
)

// pictureServer serves PNG pictures by path and counts the requests of each; any other path is a 404.
type pictureServer struct {
	*httptest.Server
	pics map[string][]byte

	mu   sync.Mutex
	hits map[string]int
}

func newPictureServer(t *testing.T, sizes map[string][2]int) *pictureServer {
	t.Helper()
	ps := &pictureServer{pics: map[string][]byte{}, hits: map[string]int{}}
	for path, wh := range sizes {
		var b bytes.Buffer
		if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, wh[0], wh[1]))); err != nil {
			t.Fatal(err)
		}
		ps.pics[path] = b.Bytes()
	}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps.mu.Lock()
		ps.hits[r.URL.Path]++
		ps.mu.Unlock()
		pic, ok := ps.pics[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pic)
	}))
	t.Cleanup(ps.Close)
	return ps
}

func (ps *pictureServer) count(path string) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.hits[path]
}

func (ps *pictureServer) digest(path string) string {
	sum := sha256.Sum256(ps.pics[path])
	return hex.EncodeToString(sum[:])
}

// readRows reads a run's results.jsonl.
func readRows(t *testing.T, dir string) []results.Row {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []results.Row
	if err := results.ReadJSONL(f, func(r results.Row) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return rows
}

// Items and a persona show pictures served by a local server: inline (through the response cache's window) and
// by URL (without the cache, so every cell is called), then a missing picture under raise and under skip.
func TestImageItems(t *testing.T) {
	s := newStack(t, sim.Config{})
	pics := newPictureServer(t, map[string][2]int{"/face.png": {1024, 1024}, "/ad.png": {512, 512}, "/me.png": {100, 100}})
	spec := gridSpec(1, 1, 3, 2)
	spec.Questionnaire.Items[0].Images = []string{pics.URL + "/face.png"}
	spec.Questionnaire.Items[1].Images = []string{pics.URL + "/face.png", pics.URL + "/ad.png"}
	spec.Personas[1].Images = []string{pics.URL + "/me.png"}
	spec.ApplyDefaults()

	// face 765 tokens, ad 255, me 255 (never scaled up: one tile each for the small ones).
	wantTokens := map[string]int{"1/p0": 765, "1/p1": 765 + 255, "2/p0": 765 + 255, "2/p1": 765 + 255 + 255, "3/p0": 0, "3/p1": 255}
	wantSHA := map[string]string{
		"1/p0": pics.digest("/face.png"),
		"1/p1": pics.digest("/me.png") + "," + pics.digest("/face.png"),
		"2/p0": pics.digest("/face.png") + "," + pics.digest("/ad.png"),
		"2/p1": pics.digest("/me.png") + "," + pics.digest("/face.png") + "," + pics.digest("/ad.png"),
		"3/p0": "",
		"3/p1": pics.digest("/me.png"),
	}
	check := func(name string, res []results.Row, from int) {
		t.Helper()
		for _, r := range res {
			k := r.ItemID + "/" + r.PersonaID
			if r.Status == "failed" || r.ImageSHA256 != wantSHA[k] {
				t.Errorf("%s: cell %s: status %s (%s), image_sha256 %q, want %q", name, k, r.Status, r.ErrorMessage, r.ImageSHA256, wantSHA[k])
			}
		}
		reqs := s.sim.Requests()[from:]
		if len(reqs) != 6 {
			t.Fatalf("%s: %d requests, want 6", name, len(reqs))
		}
		for _, q := range reqs {
			k := strings.Join(strings.Split(q.Cell, "/")[2:], "/")
			if q.ImageTokens != wantTokens[k] {
				t.Errorf("%s: cell %s charged %d image tokens, want %d", name, q.Cell, q.ImageTokens, wantTokens[k])
			}
		}
	}

	res := s.run(t, "images-inline", spec)
	check("inline", readRows(t, res.OutputDir), 0)
	for _, p := range []string{"/face.png", "/ad.png", "/me.png"} {
		if n := pics.count(p); n != 1 {
			t.Errorf("inline: %s downloaded %d times, want once (the worker's LRU)", p, n)
		}
	}

	byURL := spec
	byURL.Run.ImageTransport = experiment.ImageURL
	byURL.Run.Cache = experiment.CacheOff
	res = s.run(t, "images-url", byURL)
	check("url", readRows(t, res.OutputDir), 6)
	// The worker's LRU still holds the pictures; the simulator downloads each picture of each call.
	if n := pics.count("/face.png"); n != 1+4 {
		t.Errorf("url: face.png downloaded %d times, want 5 (once by the worker, 4 by the simulator)", n)
	}

	missing := spec
	missing.Run.Cache = experiment.CacheOff
	missing.Questionnaire.Items = append([]experiment.Item(nil), spec.Questionnaire.Items...)
	missing.Questionnaire.Items[2].Images = []string{pics.URL + "/gone.png", pics.URL + "/ad.png"}
	res = s.run(t, "images-raise", missing)
	for _, r := range readRows(t, res.OutputDir) {
		failed := r.ItemID == "3"
		if failed != (r.Status == "failed") {
			t.Errorf("raise: cell %s/%s status %s, want failed only for item 3", r.ItemID, r.PersonaID, r.Status)
		}
		if failed && (r.ErrorClass != errclass.ImageUnavailable || r.ErrorCode != "http_404" || !strings.Contains(r.ErrorMessage, "/gone.png")) {
			t.Errorf("raise: cell %s/%s: %s %s %q; want ImageUnavailable, http_404, naming the picture", r.ItemID, r.PersonaID, r.ErrorClass, r.ErrorCode, r.ErrorMessage)
		}
	}
	if n := pics.count("/gone.png"); n != 1 {
		t.Errorf("a 404 was downloaded %d times, want once (permanent, and shared by both cells)", n)
	}

	missing.Image.OnFailure = experiment.ImageSkip
	res = s.run(t, "images-skip", missing)
	for _, r := range readRows(t, res.OutputDir) {
		if r.Status == "failed" {
			t.Errorf("skip: cell %s/%s failed: %s", r.ItemID, r.PersonaID, r.ErrorMessage)
		}
		if r.ItemID != "3" {
			continue
		}
		want := pics.digest("/ad.png")
		if r.PersonaID == "p1" {
			want = pics.digest("/me.png") + "," + want
		}
		if r.ImageSHA256 != want || !strings.Contains(r.ErrorMessage, "image skipped") || !strings.Contains(r.ErrorMessage, "/gone.png") {
			t.Errorf("skip: cell 3/%s: image_sha256 %q (want %q), error_message %q (want the skipped picture)", r.PersonaID, r.ImageSHA256, want, r.ErrorMessage)
		}
	}
}
