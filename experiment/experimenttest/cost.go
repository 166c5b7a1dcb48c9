package experimenttest

import (
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/usage"
)

// WorstBatchCost is the most cells [from, to) of spec can cost in batch mode, recomputed apart from the code a
// budget test checks: each prompt as tok counts it and the model's longest completion, at the batch price.
func WorstBatchCost(t testing.TB, spec experiment.Spec, tok *llm.Tokenizer, from, to int) usage.USD {
	t.Helper()
	m := spec.Models[spec.Cell(from).Model]
	price, ok := llm.BatchPriceFor(m)
	if !ok {
		t.Fatalf("model %s has no batch price", m.ID)
	}
	var c usage.USD
	for i := from; i < to; i++ {
		msgs, err := spec.Render(spec.Cell(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		c += llm.Cost(price, tok.CountMessages(m.Name, msgs), m.Params.MaxTokens)
	}
	return c
}
