package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/respcache"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/wire"
)

// gridSpec is a spec of one batch-mode model over items × personas, with the given batch section.
func gridSpec(t testing.TB, items, personas int, batchJSON string) *experiment.Spec {
	t.Helper()
	return gridSpecOf(t, items, personas, `"name":"gpt-4o-mini"`, batchJSON)
}

// anthropicGridSpec is gridSpec with a model of provider anthropic.
func anthropicGridSpec(t testing.TB, items, personas int, batchJSON string) *experiment.Spec {
	t.Helper()
	return gridSpecOf(t, items, personas, `"name":"claude-haiku-4-5","provider":"anthropic"`, batchJSON)
}

// gridSpecOf is gridSpec with the given name and provider fields of the model.
func gridSpecOf(t testing.TB, items, personas int, modelJSON, batchJSON string) *experiment.Spec {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"name":"grid","seeds":[7],"models":[{"id":"m",` + modelJSON + `,"params":{"temperature":0,"max_tokens":4},"batch":` + batchJSON + `}],"personas":[`)
	for p := range personas {
		if p > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"p%d","attributes":{"name":"Person %d"}}`, p, p)
	}
	b.WriteString(`],"questionnaire":{"options":[{"id":"1","text":"1. No","weight":1},{"id":"2","text":"2. Yes","weight":2}],"items":[`)
	for i := range items {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"q%d","text":"Statement number %d."}`, i, i)
	}
	b.WriteString(`]}}`)
	s, err := specfile.ParseInput([]byte(b.String()), "input")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func allCells(s *experiment.Spec) []int {
	out := make([]int, s.NumCells())
	for i := range out {
		out[i] = i
	}
	return out
}

// TestBatchRequestsAreTheSyncRequests: every line carries the body the synchronous pass sends for its cell and
// has the cache key that pass would look up.
func TestBatchRequestsAreTheSyncRequests(t *testing.T) {
	spec := gridSpec(t, 3, 4, `{"mode":"batch"}`)
	reqs := buildLines(t, &Activities{}, spec, allCells(spec))
	sync := newPreparer(spec, spec.Models[0], nil, nil, true)
	for i, r := range reqs {
		c := spec.Cell(i)
		msgs, _ := spec.Render(c, nil)
		req := sync.finish(c, msgs, pictures{}).req
		if want := respcache.Key(respcache.Endpoint(spec.Models[0]), req); r.Key != want {
			t.Errorf("%s: key %x, want the sync pass's %x", spec.CellID(c), r.Key, want)
		}
		var line struct {
			CustomID string          `json:"custom_id"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(r.Line, &line); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(json.RawMessage(mustChatBody(t, req)))
		if line.CustomID != spec.CellID(c) || !bytes.Equal(line.Body, want) {
			t.Errorf("%s: line %s, want custom_id %s and body %s", spec.CellID(c), r.Line, spec.CellID(c), want)
		}
	}
}

// TestBatchPlanCutsByLimits: a pass's requests are cut by max_requests and max_bytes, and a chunk rebuilt from
// its cells is byte for byte the same input, so its digest finds its batch again.
func TestBatchPlanCutsByLimits(t *testing.T) {
	spec := gridSpec(t, 5, 4, `{"mode":"batch","max_requests":6}`)
	reqs := buildLines(t, &Activities{}, spec, allCells(spec))
	plan, _, _, err := planBatchChunks(spec, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 4 || plan[0].Len() != 6 || plan[3].Len() != 2 {
		t.Errorf("plan %v, want 6+6+6+2 cells", plan)
	}
	size := len(chunkInput(wire.FormatOpenAI, reqs)) / len(reqs)
	spec = gridSpec(t, 5, 4, fmt.Sprintf(`{"mode":"batch","max_bytes":%d}`, 3*size))
	reqs = buildLines(t, &Activities{}, spec, allCells(spec))
	plan, lines, _, err := planBatchChunks(spec, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) < 7 {
		t.Errorf("%d chunks of at most %d bytes for 20 lines of about %d, want at least 7", len(plan), 3*size, size)
	}
	for i, cells := range plan {
		b, err := (&Activities{}).batchBuilder(spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		again, err := b.batchRequests(context.Background(), cells.Indexes(), linesDigest(lines[i]))
		if err != nil {
			t.Fatalf("chunk %d rebuilt from its cells: %v", i, err)
		}
		in := chunkInput(wire.FormatOpenAI, again)
		if len(in) > 3*size {
			t.Errorf("chunk %d is %d bytes, over max_bytes %d", i, len(in), 3*size)
		}
		var orig []batchRequest
		for _, r := range reqs {
			for c := range cells.All() {
				if r.Cell.Index == c {
					orig = append(orig, r)
				}
			}
		}
		if batchformat.Digest(in) != batchformat.Digest(chunkInput(wire.FormatOpenAI, orig)) {
			t.Errorf("chunk %d rebuilt from its cells has another digest", i)
		}
	}
}

func TestBatchPlan120k(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 120,000 requests")
	}
	spec := gridSpec(t, 400, 300, `{"mode":"batch"}`)
	reqs := buildLines(t, &Activities{}, spec, allCells(spec))
	plan, _, _, err := planBatchChunks(spec, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 3 || plan[0].Len() != 50_000 || plan[1].Len() != 50_000 || plan[2].Len() != 20_000 {
		t.Errorf("120,000 cells: %d chunks, want 3 of 50,000, 50,000 and 20,000", len(plan))
	}
	// The plan is recorded in the workflow's history: spans, not 120,000 numbers.
	b, err := json.Marshal(wire.BatchPlan{Chunks: plan})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 200 {
		t.Errorf("the plan of 120,000 cells is %d bytes of JSON (%s), want spans of a few bytes", len(b), b)
	}
}

// buildLines builds the lines of cells of model 0, all of which must be sendable.
func buildLines(t testing.TB, a *Activities, spec *experiment.Spec, cells []int) []batchRequest {
	t.Helper()
	b, err := a.batchBuilder(spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := b.batchRequests(context.Background(), cells, "")
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

func mustChatBody(t *testing.T, req llm.Request) []byte {
	t.Helper()
	b, err := llm.ChatBody(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBatchPlan120kAnthropic: Anthropic takes 100,000 requests a batch, so a pass of 120,000 cells is 2 batches.
func TestBatchPlan120kAnthropic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 120,000 requests")
	}
	spec := anthropicGridSpec(t, 400, 300, `{"mode":"batch"}`)
	reqs := buildLines(t, &Activities{}, spec, allCells(spec))
	plan, _, _, err := planBatchChunks(spec, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := []experiment.CellSet{{{Start: 0, End: 100_000}}, {{Start: 100_000, End: 120_000}}}
	if !reflect.DeepEqual(plan, want) {
		t.Errorf("120,000 cells: chunks %v, want 2: cells [0, 100,000) and [100,000, 120,000)", plan)
	}
}

// TestAnthropicBatchRequestsAreTheSyncRequests: an Anthropic line carries a valid custom_id and, as its params,
// the body the synchronous pass sends to /v1/messages for its cell, and has that pass's cache key.
func TestAnthropicBatchRequestsAreTheSyncRequests(t *testing.T) {
	spec := anthropicGridSpec(t, 3, 4, `{"mode":"batch"}`)
	reqs := buildLines(t, &Activities{}, spec, allCells(spec))
	m := spec.Models[0]
	sync := newPreparer(spec, m, nil, nil, true)
	for i, r := range reqs {
		c := spec.Cell(i)
		msgs, _ := spec.Render(c, nil)
		req := sync.finish(c, msgs, pictures{}).req
		if want := respcache.Key(respcache.Endpoint(m), req); r.Key != want || !strings.HasPrefix(respcache.Endpoint(m), respcache.AnthropicEndpointPrefix) {
			t.Errorf("%s: key %x, want the sync pass's %x", spec.CellID(c), r.Key, want)
		}
		var line struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(r.Line, &line); err != nil {
			t.Fatal(err)
		}
		want, err := llm.AnthropicBody(req)
		if err != nil {
			t.Fatal(err)
		}
		if line.CustomID != batchformat.SafeID(spec.CellID(c)) || !bytes.Equal(line.Params, want) {
			t.Errorf("%s: line %s, want custom_id %s and params %s", spec.CellID(c), r.Line, batchformat.SafeID(spec.CellID(c)), want)
		}
	}
}
