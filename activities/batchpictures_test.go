package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/imagefetch"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// noisePNG is a w×h PNG of pixels drawn from seed: noise does not compress, so its size is about w×h bytes.
func noisePNG(t testing.TB, w, h int, seed uint32) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	x := seed | 1
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = byte(x)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pictureHost serves PNGs by path on loopback; set replaces one, and down makes every download a 503.
type pictureHost struct {
	*httptest.Server
	mu   sync.Mutex
	pics map[string][]byte
	down bool
}

func servePictures(t testing.TB, pics map[string][]byte) *pictureHost {
	ps := &pictureHost{pics: pics}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps.mu.Lock()
		pic, ok := ps.pics[r.URL.Path]
		down := ps.down
		ps.mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
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

func (ps *pictureHost) set(path string, b []byte) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.pics[path] = b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// wireLog serves h and keeps the body of every chat request by its cell header.
type wireLog struct {
	h      http.Handler
	mu     sync.Mutex
	bodies map[string][]byte
}

func (l *wireLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/chat/completions" {
		l.mu.Lock()
		l.bodies[r.Header.Get(sim.CellHeader)] = body
		l.mu.Unlock()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	l.h.ServeHTTP(w, r)
}

// TestBatchLinesCarryTheSyncWireBodyWithPictures: with pictures inlined, the body of every batch line is byte
// for byte what the synchronous call of its cell put on the wire (the pictures' data URLs included), and its
// cache key and picture digests are those the synchronous pass recorded.
func TestBatchLinesCarryTheSyncWireBodyWithPictures(t *testing.T) {
	pics := servePictures(t, map[string][]byte{"/a.png": noisePNG(t, 40, 30, 1), "/b.png": noisePNG(t, 20, 20, 2)})
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lg := &wireLog{h: s, bodies: map[string][]byte{}}
	srv := httptest.NewServer(lg)
	defer srv.Close()
	spec := testSpec(srv.URL, 3, 2)
	spec.Models[0].Name = "sim-chat"
	spec.Questionnaire.Items[0].Images = []string{pics.URL + "/a.png"}
	spec.Questionnaire.Items[2].Images = []string{pics.URL + "/a.png", pics.URL + "/b.png"}
	spec.Personas[1].Images = []string{pics.URL + "/b.png"}
	h := newHarness(t, spec)
	h.acts.Images = imagefetch.New(imagefetch.Config{})
	if _, err := h.runPass(ratelimit.Limits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	want := h.records()
	saved, err := h.acts.spec(context.Background(), "run") // as the run resolved it
	if err != nil {
		t.Fatal(err)
	}
	reqs := buildLines(t, h.acts, saved, allCells(saved))
	if len(reqs) != 6 || len(lg.bodies) != 6 {
		t.Fatalf("%d lines, %d synchronous calls; want 6 of each", len(reqs), len(lg.bodies))
	}
	inlined := 0
	for _, r := range reqs {
		var line struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(r.Line, &line); err != nil {
			t.Fatal(err)
		}
		wire := lg.bodies[r.CustomID]
		if !bytes.Equal(line.Body, wire) {
			t.Errorf("%s: line body\n%.300s\nwire body\n%.300s", r.CustomID, line.Body, wire)
		}
		inlined += bytes.Count(line.Body, []byte(`"url":"data:image/png;base64,`))
		if got, w := strings.Join(r.Pics.sha, ","), want[r.Cell.Index].ImageSHA256; got != w {
			t.Errorf("%s: picture digests %q, the synchronous record %q", r.CustomID, got, w)
		}
	}
	// a: item 1 for both personas, item 3 for both; b: item 3 for both, persona p1 on each of its 3 items.
	if inlined != 2+4+3 {
		t.Errorf("%d pictures inlined in the lines, want 9", inlined)
	}
}

// TestBatchPlanSplitsBigPictureLinesByMaxBytes: lines with inlined pictures are cut into chunks within
// max_bytes (here two lines a chunk), every rebuilt chunk is within it and has its planned digest, and a line
// larger than max_bytes on its own fails its cell alone while the others run.
func TestBatchPlanSplitsBigPictureLinesByMaxBytes(t *testing.T) {
	paths := map[string][]byte{}
	for i := range 6 {
		paths[fmt.Sprintf("/%d.png", i)] = noisePNG(t, 120, 100, uint32(i+1))
	}
	paths["/huge.png"] = noisePNG(t, 400, 400, 99)
	pics := servePictures(t, paths)
	h := newBatchHarness(t, sim.BatchConfig{})
	h.acts.Images = imagefetch.New(imagefetch.Config{})
	_, spec := h.specs(7, 1, 100)
	for i := range 6 {
		spec.Questionnaire.Items[i].Images = []string{fmt.Sprintf("%s/%d.png", pics.URL, i)}
	}
	spec.Questionnaire.Items[6].Images = []string{pics.URL + "/huge.png"}
	one := buildLines(t, h.acts, &spec, []int{0})[0].Size
	spec.Models[0].Batch.MaxBytes = one*5/2 + 100 // two lines fit, three do not; the huge one alone does not
	h.save("run", spec)
	pass := spec.Passes()[0]
	plan := run[wire.BatchPlan](h, h.acts.PlanBatchPass, wire.BatchPassInput{RunID: "run", Pass: pass})
	if len(plan.Chunks) != 3 || plan.Failed != 1 {
		t.Fatalf("plan %+v, want 3 chunks of 2 lines and the huge line failed", plan)
	}
	saved, err := h.acts.spec(context.Background(), "run")
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.acts.batchBuilder(saved, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, cells := range plan.Chunks {
		reqs, err := b.batchRequests(context.Background(), cells.Indexes(), plan.Digests[i])
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		in := chunkInput(wire.FormatOpenAI, reqs)
		if len(reqs) != 2 || len(in) > spec.Models[0].Batch.MaxBytes || len(in) < 2*one {
			t.Errorf("chunk %d: %d lines in %d bytes, want 2 within max_bytes %d", i, len(reqs), len(in), spec.Models[0].Batch.MaxBytes)
		}
	}
	r := h.records("run")[6]
	if r.Status != store.StatusFailed || r.ErrorClass != errclass.BatchRefused || r.ErrorCode != "request_too_large" ||
		!strings.Contains(r.ErrorMessage, "max_bytes") {
		t.Errorf("the huge line's cell: %+v, want failed as too large for a batch", r)
	}
	if n := len(h.records("run")); n != 1 {
		t.Errorf("%d records after the plan, want only the huge line's", n)
	}
	h.drive("run", time.Hour, 1)
	if n := len(h.records("run")); n != 7 || len(h.sim.Batches()) != 3 {
		t.Errorf("%d records in %d batches, want 7 in 3", n, len(h.sim.Batches()))
	}
}

// TestBatchPictureChangedBetweenAttempts: a worker whose fetcher holds a chunk's pictures builds the chunk's lines
// again exactly, so its submission and its collect go through; a worker that downloads a picture whose bytes
// changed at its URL since the plan refuses both, without a retry, rather than create another batch or record
// answers under digests of bytes that were not sent.
func TestBatchPictureChangedBetweenAttempts(t *testing.T) {
	old := noisePNG(t, 30, 30, 1)
	pics := servePictures(t, map[string][]byte{"/a.png": old})
	h := newBatchHarness(t, sim.BatchConfig{})
	h.acts.Images = imagefetch.New(imagefetch.Config{})
	_, spec := h.specs(2, 2, 100)
	spec.Questionnaire.Items[1].Images = []string{pics.URL + "/a.png"}
	h.save("run", spec)
	pass := spec.Passes()[0]
	plan := run[wire.BatchPlan](h, h.acts.PlanBatchPass, wire.BatchPassInput{RunID: "run", Pass: pass})
	if len(plan.Chunks) != 1 {
		t.Fatalf("plan %+v", plan)
	}
	pics.set("/a.png", noisePNG(t, 30, 30, 2))

	// Another worker: the same store, its own fetcher.
	other := &Activities{Store: h.st, Models: h.acts.Models, Images: imagefetch.New(imagefetch.Config{})}
	var suite testsuite.WorkflowTestSuite
	otherEnv := suite.NewTestActivityEnvironment()
	otherEnv.RegisterActivity(other)
	refusedLinesChanged := func(what string, err error) {
		t.Helper()
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != errclass.BatchRefused || !ae.NonRetryable() || !strings.Contains(err.Error(), "picture") {
			t.Errorf("%s with a changed picture: %v, want a non-retryable %s naming the picture", what, err, errclass.BatchRefused)
		}
	}
	in := wire.BatchChunkInput{RunID: "run", Pass: pass, Cells: plan.Chunks[0], Digest: plan.Digests[0]}
	_, err := otherEnv.ExecuteActivity(other.SubmitBatch, in)
	refusedLinesChanged("submit", err)
	if n := len(h.sim.Batches()); n != 0 {
		t.Fatalf("%d batches created from changed lines", n)
	}

	// A worker that cannot reach the picture now: an error a retry may cure, not a refusal.
	pics.mu.Lock()
	pics.down = true
	pics.mu.Unlock()
	third := &Activities{Store: h.st, Models: h.acts.Models, Images: imagefetch.New(imagefetch.Config{Backoff: time.Millisecond})}
	thirdEnv := suite.NewTestActivityEnvironment()
	thirdEnv.RegisterActivity(third)
	_, err = thirdEnv.ExecuteActivity(third.SubmitBatch, in)
	var ae *temporal.ApplicationError
	if err == nil || (errors.As(err, &ae) && ae.NonRetryable()) || !strings.Contains(err.Error(), "503") {
		t.Errorf("submit while the picture's server is down: %v, want a retryable error naming the 503", err)
	}
	pics.mu.Lock()
	pics.down = false
	pics.mu.Unlock()

	info := run[wire.BatchInfo](h, h.acts.SubmitBatch, in) // the planning worker: its fetcher holds the old bytes
	info = run[wire.BatchInfo](h, h.acts.PollBatch, wire.BatchRef{RunID: "run", ID: info.ID})
	_, err = otherEnv.ExecuteActivity(other.CollectBatch, wire.BatchCollectInput{BatchChunkInput: in, Batch: info})
	refusedLinesChanged("collect", err)
	if n := len(h.records("run")); n != 0 {
		t.Fatalf("%d records from a refused collect", n)
	}
	got := run[wire.BatchCollected](h, h.acts.CollectBatch, wire.BatchCollectInput{BatchChunkInput: in, Batch: info})
	if got.Recorded != 4 {
		t.Errorf("collected %+v, want 4 recorded", got)
	}
	for _, r := range h.records("run") {
		c := spec.Cell(r.Index)
		if want := map[bool]string{true: sha(old)}[c.Item == 1]; r.ImageSHA256 != want || r.Status == store.StatusFailed {
			t.Errorf("cell %d: %s, image_sha256 %q, want %q: the bytes the batch sent", r.Index, r.Status, r.ImageSHA256, want)
		}
	}
}
