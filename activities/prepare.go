package activities

import (
	"context"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
)

// prepared is a cell ready to be sent: its messages as sent (cumulative history and pictures included), the
// request, and the request's response-cache key. One preparation serves the cache lookup and the call.
type prepared struct {
	cell experiment.Cell
	msgs []experiment.Message
	pics pictures
	req  llm.Request
	// key is the request's cache key; zero when the pass uses no cache.
	key store.CacheKey
	// err says the cell could not be prepared: its prompt did not render, or a picture could not be fetched
	// (imageError). Such a cell is recorded failed and never sent.
	err error
}

// preparer turns cells into prepared requests, the same way whether the response cache is on or off.
type preparer struct {
	spec   *experiment.Spec
	model  experiment.Model
	memory *memory
	images *passImages
	// endpoint names the model's endpoint in cache keys; keyed says keys are computed (the pass uses a cache).
	endpoint string
	keyed    bool
}

func newPreparer(spec *experiment.Spec, m experiment.Model, mem *memory, images *passImages, keyed bool) *preparer {
	return &preparer{spec: spec, model: m, memory: mem, images: images, endpoint: respcache.Endpoint(m), keyed: keyed}
}

// prepareAll prepares cells; their pictures are fetched side by side. A cell whose preparation ended because ctx
// did (a picture download cut short) has stopped set: it stays unfinished for the next attempt.
func (pr *preparer) prepareAll(ctx context.Context, cells []int) (map[int]prepared, map[int]bool) {
	out := make(map[int]prepared, len(cells))
	stopped := map[int]bool{}
	rendered := make(map[int][]experiment.Message, len(cells))
	for _, i := range cells {
		c := pr.spec.Cell(i)
		msgs, err := pr.spec.Render(c, pr.memory.of(c.Persona))
		if err != nil {
			out[i] = prepared{cell: c, err: err}
			continue
		}
		rendered[i] = msgs
	}
	pics, errs := pr.images.resolveAll(ctx, rendered)
	for i, msgs := range rendered {
		c := pr.spec.Cell(i)
		if err := errs[i]; err != nil {
			if ctx.Err() != nil {
				stopped[i] = true
			} else {
				out[i] = prepared{cell: c, err: imageError{err}}
			}
			continue
		}
		out[i] = pr.finish(c, msgs, pics[i])
	}
	return out, stopped
}

// prepare prepares one cell; ok is false when ctx ended while its pictures were fetched.
func (pr *preparer) prepare(ctx context.Context, idx int) (prepared, bool) {
	got, stopped := pr.prepareAll(ctx, []int{idx})
	return got[idx], !stopped[idx]
}

// finish builds the request of cell c with msgs and its cache key.
func (pr *preparer) finish(c experiment.Cell, msgs []experiment.Message, pics pictures) prepared {
	req := llm.Request{
		Model:    pr.model.Name,
		Messages: msgs,
		Seed:     pr.spec.CallSeed(c),
		Params:   pr.spec.CallParams(c),
		CellID:   pr.spec.CellID(c),
	}
	if len(pics.sha) > 0 {
		req.ImageSHA256, req.ImageDetail = pics.sha, pr.spec.Image.Detail
	}
	p := prepared{cell: c, msgs: msgs, pics: pics, req: req}
	if pr.keyed {
		p.key = respcache.Key(pr.endpoint, req)
	}
	return p
}

// userMessage is the plain (history-free) user message of a cell: what a cumulative history repeats.
func (pr *preparer) userMessage(c experiment.Cell) string {
	msgs, err := pr.spec.Render(c, nil)
	if err != nil || len(msgs) == 0 {
		return ""
	}
	return msgs[len(msgs)-1].Content
}
