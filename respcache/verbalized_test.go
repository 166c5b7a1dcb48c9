package respcache

import (
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/experiment/experimenttest"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
)

// TestKeyCoversTheAnswerMode: the same cell under modes text, json_schema and verbalized sends different
// requests (the verbalized one its own schema and instruction), so no mode's answer is served to another.
func TestKeyCoversTheAnswerMode(t *testing.T) {
	seen := map[store.CacheKey]experiment.AnswerMode{}
	for _, mode := range []experiment.AnswerMode{experiment.AnswerText, experiment.AnswerJSONSchema, experiment.AnswerVerbalized} {
		spec := experimenttest.Grid(1, 1, 1, 1, experimenttest.Defaults())
		spec.Run.Answer = &experiment.AnswerSettings{Mode: mode}
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		c := spec.Cell(0)
		msgs, err := spec.Render(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		k := Key("http://sim/v1", llm.Request{Model: spec.Models[0].Name, Messages: msgs, Seed: spec.Seeds[0], Params: spec.CallParams(c)})
		if other, ok := seen[k]; ok {
			t.Errorf("modes %s and %s share a cache key", other, mode)
		}
		seen[k] = mode
	}
}
