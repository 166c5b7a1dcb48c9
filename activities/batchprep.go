package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/batchapi"
	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/imagefetch"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// errLinesChanged says that the lines built for a chunk now are not the lines its plan (or, for a later round,
// the collect before it) built: a picture's bytes changed at its URL between two attempts, a picture that was
// fetched then fails now, or two workers count an embedding text's tokens differently. Such a chunk is not
// submitted (its batch could not be found again by its digest, and it could exceed the size the plan cut it to)
// nor collected (its answers would be recorded under the keys and picture digests of other requests than those
// sent). It is batchapi.ErrChunkChanged, which no retry cures.
var errLinesChanged = fmt.Errorf("%w: its requests differ from those built for it before", batchapi.ErrChunkChanged)

// batchRequest is one line of a batch pass: the request the synchronous pass would send, as a batch line, with
// the cache keys its answers are kept under. A chat line is one cell's request; an embeddings line is one
// request of several texts, each with the cells that have it, packed as the synchronous embed pass packs them.
type batchRequest struct {
	// Cell is the line's cell (chat), or its first cell, with only Index and Model set (embeddings).
	Cell     experiment.Cell
	CustomID string
	// Key is a chat request's cache key; Pics are its cell's pictures, whose digests its answer records.
	Key  store.CacheKey
	Pics pictures
	// Msgs are a chat request's rendered messages, without their pictures: the worst-case cost is counted from
	// them.
	Msgs []experiment.Message
	// Embed is an embeddings request's texts, their cells and tokens; Keys are its texts' vector keys.
	Embed *embedBatch
	Keys  []store.CacheKey
	// Line is the encoded line; the plan drops it once it is sized. Size is its length, Sum the digest of the
	// line and its keys (see linesDigest).
	Line []byte
	Size int
	Sum  [sha256.Size]byte
}

// cells are the cells the line answers, ascending.
func (r *batchRequest) cells() []int {
	if r.Embed == nil {
		return []int{r.Cell.Index}
	}
	var out []int
	for _, cs := range r.Embed.cells {
		out = append(out, cs...)
	}
	return out
}

// inputs is the line's number of embedding inputs (0 for a chat line).
func (r *batchRequest) inputs() int {
	if r.Embed == nil {
		return 0
	}
	return len(r.Embed.texts)
}

// seal sizes the line and digests it with its keys.
func (r *batchRequest) seal() {
	h := sha256.New()
	h.Write(r.Line)
	h.Write(r.Key[:])
	for _, k := range r.Keys {
		h.Write(k[:])
	}
	r.Size = len(r.Line)
	h.Sum(r.Sum[:0])
}

// linesDigest is the digest of a chunk's requests, in order: each line's bytes and the cache keys of its answers.
// A key holds the digests of the request's pictures, so a picture sent by URL, whose bytes are in no line, is
// covered too. The plan records it for every chunk, and every later build of the chunk must give the same.
func linesDigest(reqs []batchRequest) string {
	h := sha256.New()
	for _, r := range reqs {
		h.Write(r.Sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// unsentCell is a cell no line can carry, with the record it gets: a picture that could not be fetched (under
// image.on_failure raise), a text too long for any embeddings request, or a request larger than a batch may be.
type unsentCell struct {
	rec store.Record
	// err is the picture's failure, when that is why.
	err error
}

// formatOf is model m's batch format.
func formatOf(m experiment.Model) wire.BatchFormat {
	switch m.Provider {
	case experiment.ProviderAnthropic:
		return wire.FormatAnthropic
	case experiment.ProviderGemini:
		return wire.FormatGemini
	}
	return wire.FormatOpenAI
}

// batchEndpoint is the endpoint of a spec's batches.
func batchEndpoint(spec *experiment.Spec) batchformat.Endpoint {
	if spec.IsEmbed() {
		return batchformat.EndpointEmbeddings
	}
	return batchformat.EndpointChat
}

// batchWindow is how many cells' pictures a batch pass fetches side by side, as the synchronous pass's window.
const batchWindow = 256

// batchBuilder builds the lines of one model's cells in a batch pass exactly as the synchronous pass builds its
// requests: a chat cell through the synchronous pass's preparer (rendered messages, pictures fetched through the
// worker's fetcher, the request and its cache key); embeddings texts packed as the synchronous embed pass packs
// them, in llm.EmbedBody's bytes.
type batchBuilder struct {
	spec     *experiment.Spec
	model    experiment.Model
	format   wire.BatchFormat
	endpoint batchformat.Endpoint
	prep     *preparer
	texts    []experiment.EmbedText
	count    func(string) int
}

// batchBuilder returns the builder of the lines of model mi of spec. Pictures are fetched through the worker's
// fetcher, so a batch line inlines the bytes (and its key holds the digest) a synchronous call on this worker
// would send; its LRU keeps them while the worker runs, which is what makes every attempt of a chunk build the
// same lines.
func (a *Activities) batchBuilder(spec *experiment.Spec, mi int) (*batchBuilder, error) {
	m := spec.Models[mi]
	b := &batchBuilder{spec: spec, model: m, format: formatOf(m), endpoint: batchEndpoint(spec)}
	if !spec.IsEmbed() {
		b.prep = newPreparer(spec, m, nil, newPassImages(a.Images, spec, m), true)
		return b, nil
	}
	if b.format != wire.FormatOpenAI {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("batch: model %s: embeddings batches run only in the OpenAI format", m.ID), errclass.BatchRefused, nil)
	}
	texts, err := spec.EmbedTexts()
	if err != nil {
		return nil, fmt.Errorf("embed texts: %w", err)
	}
	b.texts, b.count = texts, tokenCounter(a.Tokenizer, m.Name)
	return b, nil
}

// build builds the lines of cells (indexes of the builder's model, ascending) and hands each to fn, in order.
// The lines are a function of the cells and of what the fetcher returns for their pictures. The cells no line can
// carry come back with their records. A picture download cut short by ctx ends the build with ctx's error.
func (b *batchBuilder) build(ctx context.Context, cells []int, fn func(batchRequest) error) ([]unsentCell, error) {
	if b.spec.IsEmbed() {
		return b.buildEmbed(cells, fn)
	}
	return b.buildChat(ctx, cells, fn)
}

func (b *batchBuilder) buildChat(ctx context.Context, cells []int, fn func(batchRequest) error) ([]unsentCell, error) {
	ids := make([]string, len(cells))
	for i, idx := range cells {
		c := b.spec.Cell(idx)
		ids[i] = b.spec.CellID(c)
		if b.spec.Models[c.Model].ID != b.model.ID {
			return nil, fmt.Errorf("batch: cell %s is not of model %s: a batch serves one model", ids[i], b.model.ID)
		}
	}
	custom, err := batchformat.CustomIDs(b.format, ids)
	if err != nil {
		return nil, err
	}
	var unsent []unsentCell
	for w := 0; w < len(cells); w += batchWindow {
		win := cells[w:min(len(cells), w+batchWindow)]
		got, stopped := b.prep.prepareAll(ctx, win)
		if len(stopped) > 0 {
			return nil, fmt.Errorf("fetch pictures: %w", context.Cause(ctx))
		}
		for k, idx := range win {
			pc := got[idx]
			if pc.err != nil {
				unsent = append(unsent, unsentCell{rec: unprepared(idx, pc.err), err: pc.err})
				continue
			}
			var body json.RawMessage
			switch b.format {
			case wire.FormatAnthropic:
				body, err = llm.AnthropicBody(pc.req)
			case wire.FormatGemini:
				body, err = llm.GeminiBody(pc.req)
			default:
				body, err = llm.ChatBody(pc.req)
			}
			if err != nil {
				return nil, fmt.Errorf("request of %s: %w", ids[w+k], err)
			}
			line, err := batchformat.Line(b.format, b.endpoint, custom[w+k], body)
			if err != nil {
				return nil, err
			}
			r := batchRequest{Cell: pc.cell, CustomID: custom[w+k], Key: pc.key, Pics: pc.pics, Line: line,
				Msgs: textOnly(pc.msgs)}
			r.seal()
			if err := fn(r); err != nil {
				return nil, err
			}
		}
	}
	return unsent, nil
}

func (b *batchBuilder) buildEmbed(cells []int, fn func(batchRequest) error) ([]unsentCell, error) {
	reqs, long := packTexts(b.spec, b.texts, cells, b.count)
	var unsent []unsentCell
	for _, l := range long {
		for _, idx := range l.cells[0] {
			unsent = append(unsent, unsentCell{rec: textTooLong(b.spec, idx, l.tokens[0])})
		}
	}
	// A line is named by its first cell: unique in the pass, and short (some providers allow 64 characters).
	ids := make([]string, len(reqs))
	for i, e := range reqs {
		ids[i] = fmt.Sprintf("%s/%d", b.model.ID, e.key())
	}
	custom, err := batchformat.CustomIDs(b.format, ids)
	if err != nil {
		return nil, err
	}
	endpoint := respcache.Endpoint(b.model)
	for i, e := range reqs {
		body, err := llm.EmbedBody(llm.EmbedRequest{Model: b.model.Name, Input: e.texts, Dimensions: b.spec.Embed.Dimensions})
		if err != nil {
			return nil, fmt.Errorf("request of %s: %w", ids[i], err)
		}
		line, err := batchformat.Line(b.format, b.endpoint, custom[i], body)
		if err != nil {
			return nil, err
		}
		keys := make([]store.CacheKey, len(e.texts))
		for j, t := range e.texts {
			keys[j] = respcache.VectorKey(endpoint, b.model.Name, t, b.spec.Embed.Dimensions)
		}
		model, _ := b.spec.EmbedCell(e.key())
		r := batchRequest{Cell: experiment.Cell{Index: e.key(), Model: model}, CustomID: custom[i],
			Embed: e, Keys: keys, Line: line}
		r.seal()
		if err := fn(r); err != nil {
			return nil, err
		}
	}
	return unsent, nil
}

// textOnly is msgs without their pictures (a copy).
func textOnly(msgs []experiment.Message) []experiment.Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].Images = nil
	}
	return out
}

// batchRequests builds the lines of cells, all of which must be sendable: the chunk of a recorded plan, whose
// lines must be those the plan built, with the given digest (none: not checked). A cell that cannot be sent now
// although it could when the plan was made, or lines of another digest, are errLinesChanged; a picture that fails
// transiently is an error a retry may cure.
func (b *batchBuilder) batchRequests(ctx context.Context, cells []int, digest string) ([]batchRequest, error) {
	var reqs []batchRequest
	unsent, err := b.build(ctx, cells, func(r batchRequest) error {
		reqs = append(reqs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(unsent) > 0 {
		u := unsent[0]
		if fe := (*imagefetch.Error)(nil); errors.As(u.err, &fe) && !fe.Permanent {
			return nil, fmt.Errorf("cell %d: %w", u.rec.Index, u.err) // the picture's server may come back
		}
		return nil, fmt.Errorf("%w: cell %d cannot be sent now (%s)", errLinesChanged, u.rec.Index, u.rec.ErrorMessage)
	}
	if got := linesDigest(reqs); digest != "" && got != digest {
		return nil, fmt.Errorf("%w (digest %s, before %s): a picture's bytes changed at its URL since they were "+
			"first fetched, or this worker counts tokens otherwise than the one that built them", errLinesChanged, got[:16], digest[:min(16, len(digest))])
	}
	return reqs, nil
}

// planBatchChunks cuts a pass's requests into the chunks of its batches (batchformat.Split by the model's
// max_requests and max_bytes, and for embeddings the provider's inputs per batch) and returns each chunk's cells
// and its requests. A line larger than a batch may be on its own (inline pictures are
// big) is not cut into any chunk: its cells come back unsent, to be recorded failed, and the others run. The
// workflow records this plan once, and every attempt of a chunk's submission rebuilds its lines from these
// cells: a plan made again after more cells were answered (from the cache of another run, say) would cut other
// chunks, whose batches Submit could not recognise.
func planBatchChunks(spec *experiment.Spec, reqs []batchRequest) (chunks []experiment.CellSet, lines [][]batchRequest, tooBig []unsentCell, err error) {
	if len(reqs) == 0 {
		return nil, nil, nil, nil
	}
	m := spec.Models[reqs[0].Cell.Model]
	f, e := formatOf(m), batchEndpoint(spec)
	set := spec.BatchSettings(m)
	lim := batchformat.Limits{MaxRequests: set.MaxRequests, MaxBytes: int64(set.MaxBytes), MaxInputs: batchformat.DefaultLimits(f, e).MaxInputs}
	open, _, end := batchformat.Envelope(f)
	fit := reqs[:0:0]
	for _, r := range reqs {
		if int64(len(open)+len(end)+r.Size) <= lim.MaxBytes {
			fit = append(fit, r)
			continue
		}
		msg := fmt.Sprintf("its request is %d bytes, more than a batch of this model may hold (batch.max_bytes %d): "+
			"raise max_bytes, send pictures by URL (image_transport: url), or run the model with mode: sync", r.Size, lim.MaxBytes)
		for _, idx := range r.cells() {
			tooBig = append(tooBig, unsentCell{rec: store.Record{Index: idx, Status: store.StatusFailed, ErrorClass: errclass.BatchRefused,
				ErrorCode: "request_too_large", ErrorMessage: msg}})
		}
	}
	items := make([]batchformat.Item, len(fit))
	for i, r := range fit {
		items[i] = batchformat.Item{Bytes: r.Size, Inputs: r.inputs()}
	}
	cut, err := batchformat.Split(f, items, lim)
	if err != nil {
		return nil, nil, nil, err
	}
	chunks, lines = make([]experiment.CellSet, len(cut)), make([][]batchRequest, len(cut))
	for i, ch := range cut {
		var cells []int
		for _, r := range fit[ch.Start:ch.End] {
			cells = append(cells, r.cells()...)
		}
		slices.Sort(cells)
		chunks[i] = experiment.CellsOf(cells...)
		lines[i] = fit[ch.Start:ch.End]
	}
	return chunks, lines, tooBig, nil
}

// chunkInput is the input of a chunk's batch: its requests' lines in the model's format.
func chunkInput(f wire.BatchFormat, reqs []batchRequest) []byte {
	lines := make([][]byte, len(reqs))
	for i, r := range reqs {
		lines[i] = r.Line
	}
	return batchformat.Encode(f, lines)
}

// worstCost is the most the requests can cost at model m's batch price, as the synchronous pass reserves before
// each call: a chat request's prompt as the tokenizer counts it and the longest completion; an embeddings
// request's texts as its pass counted them. Zero when the run has no budget or the model no price (a budget does
// not bound what it cannot price, in either mode), and for chat requests without a tokenizer.
func worstCost(spec *experiment.Spec, tok *llm.Tokenizer, reqs []batchRequest) usage.USD {
	if spec.BudgetUSD <= 0 || len(reqs) == 0 {
		return 0
	}
	m := spec.Models[reqs[0].Cell.Model]
	pr := batchPricingOf(m)
	if !pr.priced {
		return 0
	}
	var total usage.USD
	for _, r := range reqs {
		switch {
		case r.Embed != nil:
			total += llm.Cost(pr.price, r.Embed.total, 0)
		case tok != nil:
			total += llm.Cost(pr.price, tok.CountMessages(m.Name, r.Msgs), maxTokens(m))
		}
	}
	return total
}
