package activities

import (
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/batchformat"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
)

// TestBatchEmbedPassLines: an embed pass in batch mode sends the synchronous pass's requests as lines and records
// what they answer as that pass does (vectors, each text's share of the tokens, a repeated text once, a text too
// long failed without a call) at the batch price; a line failing with a 500 goes again, and the texts to send
// again are packed anew (a line of texts from two requests of the first round), under the digest the collect
// gave for them; a line failing with a 400 fails its cells.
func TestBatchEmbedPassLines(t *testing.T) {
	// Without a tokenizer a text counts len/4 tokens: requests of at most 10 tokens pack these as m/0 [a a'] (a'
	// is a again: sent once), m/1 [b c] and m/3 [d e], and leave the long text out. m/0 and m/3 fail with a 500:
	// a, a', d and e go again, packed as m/0 [a a' d] and m/4 [e].
	texts := []string{
		strings.Repeat("a", 24), strings.Repeat("b", 24), strings.Repeat("c", 12), strings.Repeat("d", 12),
		strings.Repeat("e", 12), strings.Repeat("a", 24), strings.Repeat("f", 80),
	}
	h := newBatchHarness(t, sim.BatchConfig{FailLines: map[string]int{"m/0": 500, "m/3": 500, "m/4": 400}})
	syncSpec := embedSpec(h.url, texts, 3, 10)
	sh := newHarness(t, syncSpec)
	if _, err := sh.runPass(ratelimit.Limits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	want := sh.records()

	spec := embedSpec(h.url, texts, 3, 10)
	spec.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch}
	h.save("run", spec)
	plan := h.drive("run", time.Hour, 2)
	if len(plan.Chunks) != 1 || plan.Failed != 1 {
		t.Fatalf("plan %+v, want one chunk and the long text failed", plan)
	}
	bs := h.sim.Batches()
	if len(bs) != 2 || strings.Join(bs[0].CustomIDs, " ") != "m/0 m/1 m/3" || strings.Join(bs[1].CustomIDs, " ") != "m/0 m/4" {
		t.Fatalf("batches %+v; want the lines m/0 m/1 m/3, then m/0 m/4", bs)
	}
	if bs[0].Endpoint != string(batchformat.EndpointEmbeddings) {
		t.Errorf("endpoint %s", bs[0].Endpoint)
	}
	got := h.records("run")
	if len(got) != 4 {
		t.Fatalf("%d records, want b and c, e (400) and the long text; a, a' and d failed twice with a 500", len(got))
	}
	for _, i := range []int{1, 2} { // answered like the synchronous pass, at half the price
		g, w := got[i], want[i]
		if g.Status != store.StatusOK || g.Raw != w.Raw || g.PromptTokens != w.PromptTokens || g.Attempts != 1 ||
			max(g.CostUSD-w.CostUSD/2, w.CostUSD/2-g.CostUSD) > 1 || w.CostUSD == 0 {
			t.Errorf("cell %d: batch %+v, sync %+v", i, g, w)
		}
	}
	if r := got[4]; r.Status != store.StatusFailed || r.ErrorClass != "InvalidRequest" || r.ErrorCode != "context_length_exceeded" ||
		r.Attempts != 2 {
		t.Errorf("cell 4, of the 400 line in the second round: %+v", r)
	}
	if r := got[6]; r.ErrorClass != errclass.TextTooLong || r.Status != store.StatusFailed {
		t.Errorf("the long text: %+v", r)
	}
}

// TestBatchEmbedPassServesTheCache: vectors a batch pass kept in the response cache are served to the next run
// at once, as the synchronous pass serves them, with no batch.
func TestBatchEmbedPassServesTheCache(t *testing.T) {
	texts := []string{"alpha", "beta", "gamma", "alpha", "delta"}
	h := newBatchHarness(t, sim.BatchConfig{})
	spec := embedSpec(h.url, texts, 2, 100)
	spec.Models[0].Batch = &experiment.BatchSettings{Mode: experiment.BatchBatch}
	h.save("first", spec)
	h.drive("first", time.Hour, 1)
	first := h.records("first")
	if len(first) != 5 || len(h.sim.Batches()) != 1 {
		t.Fatalf("%d records in %d batches", len(first), len(h.sim.Batches()))
	}
	h.save("second", spec)
	plan := h.drive("second", time.Hour, 1)
	if plan.Cached != 5 || len(plan.Chunks) != 0 || len(h.sim.Batches()) != 1 || plan.Usage.SavedUSD == 0 {
		t.Errorf("plan %+v with %d batches, want every text served from the cache", plan, len(h.sim.Batches()))
	}
	for i, r := range h.records("second") {
		if !r.Cached || r.Raw != first[i].Raw || r.Status != store.StatusOK {
			t.Errorf("cell %d: %+v, want the first run's vector, cached", i, r)
		}
	}
}
