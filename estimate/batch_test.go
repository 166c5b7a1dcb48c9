package estimate

import (
	"strconv"
	"testing"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/wire"
)

// TestBatchPriceAndCounts: a batch model costs half the sync price and its passes are cut into batches by
// max_requests; a sync model beside it is untouched.
func TestBatchPriceAndCounts(t *testing.T) {
	models := []string{
		"{id: b, name: gpt-4o-mini, params: {max_tokens: 20}, batch: {mode: batch, max_requests: 5}}",
		"{id: s, name: gpt-4o-mini, params: {max_tokens: 20}}",
	}
	spec := parse(t, specYAML(models, 2, 4, 3, "", "")) // 12 cells per pass: 3 batches of 5, 5, 2
	est, err := Compute(spec, tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	b, s := est.Models[0], est.Models[1]
	if b.Batch == nil || s.Batch != nil {
		t.Fatalf("batch estimates %+v, %+v; want one for the batch model alone", b.Batch, s.Batch)
	}
	if b.Batch.Batches != 6 || b.Batch.MaxPerPass != 3 || b.Batch.Format != wire.FormatOpenAI {
		t.Errorf("batches %+v, want 6 in all, 3 per pass, OpenAI format", b.Batch)
	}
	if !near(b.MinCostUSD, s.MinCostUSD/2) || !near(b.MaxCostUSD, s.MaxCostUSD/2) || b.MaxCostUSD == 0 {
		t.Errorf("batch cost %g – %g, sync %g – %g; want half", b.MinCostUSD, b.MaxCostUSD, s.MinCostUSD, s.MaxCostUSD)
	}
	if !near(b.Batch.SyncMinCostUSD, s.MinCostUSD) || !near(b.Batch.SyncMaxCostUSD, s.MaxCostUSD) {
		t.Errorf("sync cost of the batch model %g – %g, want %g – %g", b.Batch.SyncMinCostUSD, b.Batch.SyncMaxCostUSD, s.MinCostUSD, s.MaxCostUSD)
	}
	if b.LimitedBy != LimitBatch || b.MinWall != 0 {
		t.Errorf("batch model bound by %q, %v; want batch, 0", b.LimitedBy, b.MinWall)
	}

	// Bytes are the request lines a pass uploads: the sum of the exact lines.
	var want int64
	for sd := range spec.Seeds {
		for it := range spec.Questionnaire.Items {
			for p := range spec.Personas {
				c := experiment.Cell{Seed: sd, Item: it, Persona: p}
				msgs, _ := spec.Render(c, nil)
				body, _ := llm.ChatBody(llm.Request{Model: "gpt-4o-mini", Messages: msgs, Seed: spec.CallSeed(c), Params: spec.Models[0].Params})
				line, _ := batchformat.Line(wire.FormatOpenAI, batchformat.EndpointChat, spec.CellID(c), body)
				want += int64(len(line))
			}
		}
	}
	if b.Batch.Bytes != want {
		t.Errorf("bytes %d, want %d", b.Batch.Bytes, want)
	}
}

// TestBatchMaxBytes: max_bytes cuts a pass into more batches than max_requests alone would.
func TestBatchMaxBytes(t *testing.T) {
	one := parse(t, specYAML([]string{"{id: b, name: gpt-4o-mini, batch: {mode: batch}}"}, 1, 4, 3, "", ""))
	est, err := Compute(one, tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	if est.Models[0].Batch.Batches != 1 {
		t.Fatalf("%d batches under the default limits, want 1", est.Models[0].Batch.Batches)
	}
	perLine := est.Models[0].Batch.Bytes / 12
	spec := parse(t, specYAML([]string{"{id: b, name: gpt-4o-mini, batch: {mode: batch, max_bytes: " + strconv.FormatInt(perLine*3, 10) + "}}"}, 1, 4, 3, "", ""))
	est, err = Compute(spec, tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := est.Models[0].Batch.Batches; n < 4 {
		t.Errorf("%d batches of at most %d bytes for 12 lines of about %d, want at least 4", n, perLine*3, perLine)
	}
}

// TestBatch120k: 120,000 cells of one pass are 3 OpenAI batches.
func TestBatch120k(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 120,000 prompts")
	}
	spec := parse(t, specYAML([]string{"{id: b, name: gpt-4o-mini, batch: {mode: batch}}"}, 1, 400, 300, "", ""))
	est, err := Compute(spec, tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	if be := est.Models[0].Batch; be.Batches != 3 || be.MaxPerPass != 3 {
		t.Errorf("120,000 cells: %+v, want 3 batches", be)
	}
}

// TestEmbedBatch: an embed model in batch mode costs half the synchronous price, and its requests (one line per
// packed request) are cut into batches by max_requests.
func TestEmbedBatch(t *testing.T) {
	spec := parse(t, `name: e
kind: embed
models:
  - {id: b, name: text-embedding-3-small, batch: {mode: batch, max_requests: 2}}
  - {id: s, name: text-embedding-3-small}
questionnaire:
  options: ["yes", "no"]
  items: [{id: "1", text: one}, {id: "2", text: two}, {id: "3", text: three}, {id: "4", text: four}, {id: "5", text: five}]
embed: {texts: items, max_inputs_per_request: 2}
`)
	est, err := Compute(spec, tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	b, s := est.Models[0], est.Models[1]
	if b.Batch == nil || s.Batch != nil {
		t.Fatalf("batch estimates %+v, %+v; want one for the batch model alone", b.Batch, s.Batch)
	}
	// 5 texts in requests of 2: 3 requests, in batches of 2 requests: 2 batches.
	if b.Calls != 3 || b.Batch.Batches != 2 || b.Batch.Bytes == 0 {
		t.Errorf("calls %d, batches %+v; want 3 requests in 2 batches", b.Calls, b.Batch)
	}
	if !near(b.MinCostUSD, s.MinCostUSD/2) || b.MinCostUSD == 0 || !near(b.Batch.SyncMinCostUSD, s.MinCostUSD) {
		t.Errorf("batch cost %g (sync %g), the other model %g; want half", b.MinCostUSD, b.Batch.SyncMinCostUSD, s.MinCostUSD)
	}
}
