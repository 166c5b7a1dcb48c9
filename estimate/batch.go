package estimate

import (
	"encoding/json"
	"fmt"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

// BatchEstimate says how the calls of a model in batch mode go through its provider's batch API. A batch pass is
// one (model, seed): its calls are split into batches of at most max_requests requests and max_bytes bytes, one
// input file (OpenAI) or create request (Anthropic) each; for Gemini, a create request with its requests inline, or
// an uploaded file when the create would exceed 20 MB.
type BatchEstimate struct {
	// Format is the provider's batch format (wire.FormatOpenAI, wire.FormatAnthropic or wire.FormatGemini).
	Format wire.BatchFormat `json:"format"`
	// Batches is how many batches the model's passes submit, at least (a resubmission of what expired adds
	// more); MaxPerPass the most of one pass.
	Batches    int `json:"batches"`
	MaxPerPass int `json:"max_per_pass"`
	// Bytes is the size of all the batches' inputs: the exact request lines a run uploads, except that pictures
	// given by URL are counted as their URLs, though a run with image_transport inline sends their bytes.
	Bytes int64 `json:"bytes"`
	// MaxRequests and MaxBytes are the limits the batches were cut by.
	MaxRequests int `json:"max_requests"`
	MaxBytes    int `json:"max_bytes"`
	// SyncMinCostUSD and SyncMaxCostUSD are what the same calls cost sent synchronously; the model's own cost
	// range is at the batch price, so the difference is what batch mode saves.
	SyncMinCostUSD float64 `json:"sync_min_cost_usd"`
	SyncMaxCostUSD float64 `json:"sync_max_cost_usd"`
}

// formatOf is the batch format of model m.
func formatOf(m experiment.Model) wire.BatchFormat {
	switch m.Provider {
	case experiment.ProviderAnthropic:
		return wire.FormatAnthropic
	case experiment.ProviderGemini:
		return wire.FormatGemini
	}
	return wire.FormatOpenAI
}

// batchEstimate encodes every request of model m (index mi) exactly as a batch pass would, one (model, seed) at a
// time, and counts the batches Split cuts them into.
func batchEstimate(spec *experiment.Spec, mi int) (*BatchEstimate, error) {
	m := spec.Models[mi]
	set := spec.BatchSettings(m)
	f := formatOf(m)
	lim := batchformat.Limits{MaxRequests: set.MaxRequests, MaxBytes: int64(set.MaxBytes)}
	be := &BatchEstimate{Format: f, MaxRequests: set.MaxRequests, MaxBytes: set.MaxBytes}
	items, personas := len(spec.Questionnaire.Items), len(spec.Personas)
	sizes := make([]batchformat.Item, 0, items*personas)
	for sd := range spec.Seeds {
		sizes = sizes[:0]
		for pv := range spec.NumPromptVariants() {
			for it := range items {
				for v := range spec.Variants(it) {
					for p := range personas {
						c := experiment.Cell{Model: mi, Seed: sd, PromptVariant: pv, Item: it, Variant: v, Persona: p}
						msgs, err := spec.Render(c, nil)
						if err != nil {
							return nil, fmt.Errorf("estimate: render %s: %w", spec.CellID(c), err)
						}
						line, err := requestLine(f, llm.Request{Model: m.Name, Messages: msgs, Seed: spec.CallSeed(c),
							Params: spec.CallParams(c), ImageDetail: imageDetail(spec, msgs)}, spec.CellID(c))
						if err != nil {
							return nil, fmt.Errorf("estimate: %s: %w", spec.CellID(c), err)
						}
						sizes = append(sizes, batchformat.Item{Bytes: len(line)})
						be.Bytes += int64(len(line))
					}
				}
			}
		}
		chunks, err := batchformat.Split(f, sizes, lim)
		if err != nil {
			return nil, fmt.Errorf("estimate: model %s seed %d: %w", m.ID, spec.Seeds[sd], err)
		}
		for _, ch := range chunks {
			// The envelope bytes are the chunk's beyond its lines.
			var lines int64
			for _, s := range sizes[ch.Start:ch.End] {
				lines += int64(s.Bytes)
			}
			be.Bytes += ch.Bytes - lines
		}
		be.Batches += len(chunks)
		be.MaxPerPass = max(be.MaxPerPass, len(chunks))
	}
	return be, nil
}

// imageDetail is the detail a pass sends with pictures: the spec's, when the messages carry any.
func imageDetail(spec *experiment.Spec, msgs []experiment.Message) string {
	for _, m := range msgs {
		if len(m.Images) > 0 {
			return spec.Image.Detail
		}
	}
	return ""
}

// requestLine is the batch line of one request in format f.
func requestLine(f wire.BatchFormat, req llm.Request, cellID string) ([]byte, error) {
	var body json.RawMessage
	var err error
	id := cellID
	switch f {
	case wire.FormatAnthropic:
		body, err = llm.AnthropicBody(req)
		id = batchformat.SafeID(cellID)
	case wire.FormatGemini:
		body, err = llm.GeminiBody(req)
	default:
		body, err = llm.ChatBody(req)
	}
	if err != nil {
		return nil, err
	}
	return batchformat.Line(f, batchformat.EndpointChat, id, body)
}
