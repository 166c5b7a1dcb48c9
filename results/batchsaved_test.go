package results

import (
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/usage"
)

// TestBatchSaved: the summary says what a batch model's cells saved against synchronous calls; a sync model,
// a cached cell and a cell sent synchronously at the full price save nothing.
func TestBatchSaved(t *testing.T) {
	price := &experiment.Price{InputPerMTok: 1, OutputPerMTok: 2}
	spec := &experiment.Spec{Models: []experiment.Model{
		{ID: "b", Name: "x", Price: price, Batch: &experiment.BatchSettings{Mode: experiment.BatchBatch}},
		{ID: "s", Name: "x", Price: price},
	}}
	z := newSummarizer(spec, "run", 0)
	full := usage.Dollars(3) // 1M prompt and 1M completion tokens
	z.add(&Row{Model: "b", Status: "ok", PromptTokens: 1e6, CompletionTokens: 1e6, CostUSD: full / 2})
	z.add(&Row{Model: "b", Status: "ok", PromptTokens: 1e6, CompletionTokens: 1e6, CostUSD: full}) // on_expired: sync
	z.add(&Row{Model: "b", Status: "ok", PromptTokens: 1e6, CompletionTokens: 1e6, CostUSD: full / 2, Cached: true})
	z.add(&Row{Model: "s", Status: "ok", PromptTokens: 1e6, CompletionTokens: 1e6, CostUSD: full})
	s := z.summary()
	if s.BatchSavedUSD != usage.Dollars(1.5) || s.Models[0].BatchSavedUSD != usage.Dollars(1.5) || s.Models[1].BatchSavedUSD != 0 {
		t.Errorf("saved %v (models %v, %v), want 1.5 by the batch model alone", s.BatchSavedUSD, s.Models[0].BatchSavedUSD, s.Models[1].BatchSavedUSD)
	}
}
