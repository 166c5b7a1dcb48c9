package activities

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/silicolab/silico/batch"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
)

// errBatchPictures refuses batch mode for specs with pictures until their bytes (image_transport inline) are
// fetched before the lines are built, as the synchronous pass fetches them before each call.
var errBatchPictures = errors.New("batch mode does not send pictures yet")

// batchRequest is one cell's request in a batch pass: what the synchronous pass would send for it, as a batch
// line, with the same response cache key.
type batchRequest struct {
	Cell     experiment.Cell
	CustomID string
	Key      store.CacheKey
	Line     []byte
	// Msgs are the rendered messages, which the worst-case cost is counted from.
	Msgs []experiment.Message
}

// formatOf is model m's batch format.
func formatOf(m experiment.Model) batch.Format {
	if m.Provider == experiment.ProviderAnthropic {
		return batch.FormatAnthropic
	}
	return batch.FormatOpenAI
}

// batchRequests builds the requests of the given cells (indexes of one model's cells, in order) exactly as the
// synchronous pass builds them (its preparer: model name, messages, seed, params, and the cache key of the
// model's endpoint), encoded as lines of the model's batch format. The lines are a function of
// the spec and the cells alone, so every attempt builds the same bytes for a chunk and Submit finds its batch
// by their digest.
func batchRequests(spec *experiment.Spec, cells []int) ([]batchRequest, error) {
	if spec.HasImages() {
		return nil, errBatchPictures
	}
	out := make([]batchRequest, 0, len(cells))
	ids := make([]string, len(cells))
	for i, idx := range cells {
		ids[i] = spec.CellID(spec.Cell(idx))
	}
	if len(cells) == 0 {
		return out, nil
	}
	m := spec.Models[spec.Cell(cells[0]).Model]
	f := formatOf(m)
	custom, err := batch.CustomIDs(f, ids)
	if err != nil {
		return nil, err
	}
	prep := newPreparer(spec, m, nil, nil, true)
	for i, idx := range cells {
		c := spec.Cell(idx)
		if spec.Models[c.Model].ID != m.ID {
			return nil, fmt.Errorf("batch: cell %s is not of model %s: a batch serves one model", ids[i], m.ID)
		}
		msgs, err := spec.Render(c, nil)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", ids[i], err)
		}
		pc := prep.finish(c, msgs, pictures{})
		req := pc.req
		var body json.RawMessage
		if f == batch.FormatAnthropic {
			body, err = llm.AnthropicBody(req)
		} else {
			body, err = llm.ChatBody(req)
		}
		if err != nil {
			return nil, fmt.Errorf("request of %s: %w", ids[i], err)
		}
		line, err := batch.Line(f, batch.EndpointChat, custom[i], body)
		if err != nil {
			return nil, err
		}
		out = append(out, batchRequest{Cell: c, CustomID: custom[i], Key: pc.key, Line: line, Msgs: msgs})
	}
	return out, nil
}

// planBatchChunks cuts a pass's requests into the chunks of its batches (batch.Split by the model's
// max_requests and max_bytes) and returns each chunk's cells. The workflow records this plan once, and
// every attempt of a chunk's submission rebuilds its lines from these cells: a plan made again after more cells
// were answered (from the cache of another run, say) would cut other chunks, whose batches Submit could not
// recognise.
func planBatchChunks(spec *experiment.Spec, reqs []batchRequest) ([]experiment.CellSet, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	m := spec.Models[reqs[0].Cell.Model]
	set := spec.BatchSettings(m)
	items := make([]batch.Item, len(reqs))
	for i, r := range reqs {
		items[i] = batch.Item{Bytes: len(r.Line)}
	}
	chunks, err := batch.Split(formatOf(m), items, batch.Limits{MaxRequests: set.MaxRequests, MaxBytes: int64(set.MaxBytes)})
	if err != nil {
		return nil, err
	}
	out := make([]experiment.CellSet, len(chunks))
	for i, ch := range chunks {
		var b experiment.CellSetBuilder
		for _, r := range reqs[ch.Start:ch.End] {
			b.Add(r.Cell.Index)
		}
		out[i] = b.Set()
	}
	return out, nil
}

// chunkInput is the input of a chunk's batch: its requests' lines in the model's format.
func chunkInput(f batch.Format, reqs []batchRequest) []byte {
	lines := make([][]byte, len(reqs))
	for i, r := range reqs {
		lines[i] = r.Line
	}
	return batch.Encode(f, lines)
}

// worstCost is the most the requests can cost at model m's batch price: each prompt as the tokenizer counts it and
// the longest completion, as the synchronous pass reserves before each call. Zero when the run has no budget or
// the model no price (a budget does not bound what it cannot price, in either mode).
func worstCost(spec *experiment.Spec, tok *llm.Tokenizer, reqs []batchRequest) float64 {
	if spec.BudgetUSD <= 0 || tok == nil || len(reqs) == 0 {
		return 0
	}
	m := spec.Models[reqs[0].Cell.Model]
	pr := batchPricingOf(m)
	if !pr.priced {
		return 0
	}
	total := 0.0
	for _, r := range reqs {
		total += llm.Cost(pr.price, tok.CountMessages(m.Name, r.Msgs), maxTokens(m))
	}
	return total
}
