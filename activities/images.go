package activities

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/imagefetch"
	"github.com/silicolab/silico/store"
)

// pictures are what a cell's pictures add to its record: their digests, and under on_failure skip which were
// left out.
type pictures struct {
	sha     []string
	skipped []string
}

// note is what the record of a cell that skipped pictures says in error_message.
func (ps pictures) note() string {
	if len(ps.skipped) == 0 {
		return ""
	}
	return "image skipped: " + strings.Join(ps.skipped, "; ")
}

// stamp puts the pictures' facts on a record.
func (ps pictures) stamp(r *store.Record) {
	r.ImageSHA256 = strings.Join(ps.sha, ",")
	if n := ps.note(); n != "" && r.ErrorMessage == "" {
		r.ErrorMessage = n
	}
}

// passImages fetches the pictures of one pass: through the worker's shared fetcher, within the pass's own
// download slots (image.max_concurrent_downloads).
type passImages struct {
	f         *imagefetch.Fetcher
	slots     *semaphore.Weighted
	transport experiment.ImageTransport
	detail    string
	skip      bool
	window    int // how many cells ahead the dispatcher starts downloads

	mu     sync.Mutex
	warmed map[int]bool
	warm   sync.WaitGroup
}

// newPassImages is nil for a spec without pictures. f is the worker's fetcher; nil gives the pass its own.
func newPassImages(f *imagefetch.Fetcher, spec *experiment.Spec, m experiment.Model) *passImages {
	if !spec.HasImages() {
		return nil
	}
	if f == nil {
		f = imagefetch.New(imagefetch.Config{})
	}
	n := spec.Image.MaxConcurrentDownloads
	if n <= 0 {
		n = experiment.DefaultMaxConcurrentDownloads
	}
	return &passImages{f: f, slots: imagefetch.NewSlots(n), transport: spec.ImageTransport(m), detail: spec.Image.Detail,
		skip: spec.Image.OnFailure == experiment.ImageSkip, window: 4 * n, warmed: map[int]bool{}}
}

// resolve fetches the pictures on msgs and returns the messages as sent (each picture as a data URL under
// transport inline, as its URL under url; a data URL stays as it is) and the pictures' facts. Under on_failure
// raise a picture that cannot be fetched fails the cell with an *imagefetch.Error; under skip it is left out and
// noted. The cell's pictures are fetched side by side.
func (pi *passImages) resolve(ctx context.Context, msgs []experiment.Message) ([]experiment.Message, pictures, error) {
	var ps pictures
	if pi == nil {
		return msgs, ps, nil
	}
	type got struct {
		im  imagefetch.Image
		err error
	}
	var refs []string
	for _, m := range msgs {
		refs = append(refs, m.Images...)
	}
	if len(refs) == 0 {
		return msgs, ps, nil
	}
	res := make([]got, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Go(func() {
			im, err := pi.f.Get(ctx, ref, pi.slots)
			res[i] = got{im, err}
		})
	}
	wg.Wait()
	out := make([]experiment.Message, len(msgs))
	k := 0
	for i, m := range msgs {
		out[i] = m
		if len(m.Images) == 0 {
			continue
		}
		out[i].Images = make([]string, 0, len(m.Images))
		for _, ref := range m.Images {
			r := res[k]
			k++
			if r.err != nil {
				var fe *imagefetch.Error
				if !pi.skip || !errors.As(r.err, &fe) {
					return nil, ps, r.err // a cancelled context is never skipped
				}
				ps.skipped = append(ps.skipped, fe.Error())
				continue
			}
			ps.sha = append(ps.sha, r.im.SHA256)
			if pi.transport == experiment.ImageURL || strings.HasPrefix(ref, "data:") {
				out[i].Images = append(out[i].Images, ref)
			} else {
				out[i].Images = append(out[i].Images, r.im.DataURL())
			}
		}
	}
	return out, ps, nil
}

// resolveAll resolves the messages of many cells side by side (the response cache's window). A cell whose
// messages failed to render (nil) is left alone.
func (pi *passImages) resolveAll(ctx context.Context, msgs map[int][]experiment.Message) (map[int]pictures, map[int]error) {
	pics := make(map[int]pictures, len(msgs))
	errs := map[int]error{}
	if pi == nil {
		return pics, errs
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	resolved := make(map[int][]experiment.Message, len(msgs)) // msgs is written once the loop over it is done
	for i, m := range msgs {
		wg.Go(func() {
			out, ps, err := pi.resolve(ctx, m)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[i] = err
				return
			}
			resolved[i], pics[i] = out, ps
		})
	}
	wg.Wait()
	maps.Copy(msgs, resolved)
	return pics, errs
}

// prefetch starts the downloads of the pictures of the next cells in the background, so that the dispatcher
// rarely waits for one: the fetcher's LRU keeps them and a download under way is joined.
func (pi *passImages) prefetch(ctx context.Context, spec *experiment.Spec, next []int) {
	if pi == nil {
		return
	}
	pi.mu.Lock()
	defer pi.mu.Unlock()
	for _, idx := range next[:min(len(next), pi.window)] {
		if pi.warmed[idx] {
			continue
		}
		pi.warmed[idx] = true
		c := spec.Cell(idx)
		refs := append(append([]string(nil), spec.Personas[c.Persona].Images...), spec.Questionnaire.Items[c.Item].Images...)
		for _, ref := range refs {
			if strings.HasPrefix(ref, "data:") {
				continue // nothing to download
			}
			pi.warm.Go(func() { _, _ = pi.f.Get(ctx, ref, pi.slots) })
		}
	}
}

// wait waits for the background downloads; call it once the dispatch has ended.
func (pi *passImages) wait() {
	if pi != nil {
		pi.warm.Wait()
	}
}

// imageFailure is the record of a cell whose picture could not be fetched.
func imageFailure(idx int, err error) store.Record {
	r := store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: errclass.ImageUnavailable, ErrorMessage: err.Error()}
	var fe *imagefetch.Error
	if errors.As(err, &fe) {
		r.ErrorCode = fe.Code()
	}
	return r
}

// imageError marks a cell's preparation error as a picture's.
type imageError struct{ err error }

func (e imageError) Error() string { return e.err.Error() }
func (e imageError) Unwrap() error { return e.err }

// unprepared is the record of a cell that could not be prepared: its prompt did not render, or a picture could
// not be fetched.
func unprepared(idx int, err error) store.Record {
	var ie imageError
	if errors.As(err, &ie) {
		return imageFailure(idx, ie.err)
	}
	return store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: string(errclass.InvalidRequest),
		ErrorMessage: "render prompt: " + err.Error()}
}

// ahead is how many cells ahead of the dispatcher pictures are downloaded.
func (pi *passImages) ahead() int {
	if pi == nil {
		return 0
	}
	return pi.window
}
