package estimate

import (
	"fmt"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
)

// computeEmbed sizes an embed spec: a model's cells are its texts, its calls the requests they pack into
// (experiment.PackTexts, each distinct text once, as a pass packs them), its prompt tokens the tiktoken counts
// of the distinct texts sent. Embeddings have no completion, so the cost is exact for a priced model, and the
// wall-time bound counts requests against rpm and tokens against tpm.
func computeEmbed(spec *experiment.Spec, tok *llm.Tokenizer) (Estimate, error) {
	texts, err := spec.EmbedTexts()
	if err != nil {
		return Estimate{}, fmt.Errorf("estimate: %w", err)
	}
	est := Estimate{Grid: spec.Grid()}
	var tooLong int
	for _, m := range spec.Models {
		var tokens []int
		var distinct []string
		seen := map[string]bool{}
		for _, t := range texts {
			if !seen[t.Text] {
				seen[t.Text] = true
				tokens = append(tokens, tok.Count(m.Name, t.Text))
				distinct = append(distinct, t.Text)
			}
		}
		batches, long := experiment.PackTexts(tokens, spec.Embed.MaxInputsPerRequest, spec.Embed.MaxTokensPerRequest)
		tooLong = max(tooLong, len(long))
		me := ModelEstimate{Model: m.ID, Name: m.Name, Cells: len(texts), Calls: len(batches)}
		for _, b := range batches {
			for _, i := range b {
				me.PromptTokens += tokens[i]
			}
		}
		if price, ok := llm.PriceFor(m); ok {
			me.Priced = true
			me.MinCostUSD = llm.Cost(price, me.PromptTokens, 0).Float()
			me.MaxCostUSD = me.MinCostUSD
		}
		me.MinWall, me.LimitedBy = wallBound(m, me.Calls, me.PromptTokens)
		if spec.Batched(m) {
			be, err := embedBatchEstimate(spec, m, distinct, batches)
			if err != nil {
				return Estimate{}, err
			}
			be.SyncMinCostUSD, be.SyncMaxCostUSD = me.MinCostUSD, me.MaxCostUSD
			price, ok := llm.BatchPriceFor(m)
			me.Priced = ok
			me.MinCostUSD = llm.Cost(price, me.PromptTokens, 0).Float()
			me.MaxCostUSD = me.MinCostUSD
			me.Batch = be
			if me.Calls > 0 {
				me.MinWall, me.LimitedBy = 0, LimitBatch
			}
		}
		est.Models = append(est.Models, me)
	}
	est.total(spec)
	est.Notes = append([]string{fmt.Sprintf("embed: cells are texts, calls are requests of at most %d texts and %d tokens, each distinct text sent once",
		spec.Embed.MaxInputsPerRequest, spec.Embed.MaxTokensPerRequest)}, est.Notes...)
	if tooLong > 0 {
		est.Notes = append(est.Notes, fmt.Sprintf("embed: %d texts are longer than max_tokens_per_request and will fail without a call", tooLong))
	}
	return est, nil
}

// embedBatchEstimate counts the batches of an embed model in batch mode: one line per packed request (the
// synchronous request's body), cut by the model's limits and the 50,000 inputs a batch may carry.
func embedBatchEstimate(spec *experiment.Spec, m experiment.Model, texts []string, requests [][]int) (*BatchEstimate, error) {
	set := spec.BatchSettings(m)
	f := formatOf(m)
	be := &BatchEstimate{Format: f, MaxRequests: set.MaxRequests, MaxBytes: set.MaxBytes}
	sizes := make([]batchformat.Item, 0, len(requests))
	for i, req := range requests {
		input := make([]string, len(req))
		for j, t := range req {
			input[j] = texts[t]
		}
		body, err := llm.EmbedBody(llm.EmbedRequest{Model: m.Name, Input: input, Dimensions: spec.Embed.Dimensions})
		if err != nil {
			return nil, fmt.Errorf("estimate: model %s: %w", m.ID, err)
		}
		line, err := batchformat.Line(f, batchformat.EndpointEmbeddings, fmt.Sprintf("%s/%d", m.ID, i), body)
		if err != nil {
			return nil, fmt.Errorf("estimate: model %s: %w", m.ID, err)
		}
		sizes = append(sizes, batchformat.Item{Bytes: len(line), Inputs: len(req)})
	}
	chunks, err := batchformat.Split(f, sizes, batchformat.Limits{MaxRequests: set.MaxRequests, MaxBytes: int64(set.MaxBytes),
		MaxInputs: batchformat.DefaultLimits(f, batchformat.EndpointEmbeddings).MaxInputs})
	if err != nil {
		return nil, fmt.Errorf("estimate: model %s: %w", m.ID, err)
	}
	for _, ch := range chunks {
		be.Bytes += ch.Bytes
	}
	be.Batches, be.MaxPerPass = len(chunks), len(chunks)
	return be, nil
}
