package respcache

import (
	"context"
	"fmt"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
)

// heldBatch is how many cells Held looks up at once.
const heldBatch = 500

// Held counts, by model id, the cells of spec whose answers the cache holds (valid entries only), for the models
// whose policy reads the cache. It renders every cell as a pass would. In cumulative mode a cell's prompt carries
// the persona's earlier answers, so a persona's cells count as held up to its first item the cache lacks: after
// that the history would hold a fresh answer, unknown before the run.
func Held(ctx context.Context, g Getter, spec *experiment.Spec) (map[string]int, error) {
	if spec.IsEmbed() {
		return heldVectors(ctx, g, spec)
	}
	held := make(map[string]int, len(spec.Models))
	perItem := len(spec.Personas)
	n := spec.NumCells()
	if n == 0 || perItem == 0 {
		return held, nil
	}
	step := heldBatch
	if spec.Run.Cumulative {
		step = perItem // one item's personas at a time: the next item's prompts need their answers
	}
	var (
		pass    = -1
		history [][]experiment.Turn // by persona, in the current (model, seed)
		broken  []bool              // by persona: an earlier item was not held
	)
	perModel := n / len(spec.Models)
	for start, end := 0, 0; start < n; start = end {
		first := spec.Cell(start)
		end = min(n, start+step, (first.Model+1)*perModel) // a batch never spans two models
		m := spec.Models[first.Model]
		if !spec.CachePolicy(m).Reads() {
			continue
		}
		if p := first.Model*len(spec.Seeds) + first.Seed; p != pass {
			pass, history, broken = p, make([][]experiment.Turn, perItem), make([]bool, perItem)
		}
		endpoint := Endpoint(m)
		keys := make([]store.CacheKey, 0, end-start)
		cells := make([]experiment.Cell, 0, end-start)
		users := make([]string, 0, end-start)
		for i := start; i < end; i++ {
			c := spec.Cell(i)
			if broken[c.Persona] {
				continue
			}
			msgs, err := spec.Render(c, history[c.Persona])
			if err != nil {
				return nil, fmt.Errorf("cache: render cell %s: %w", spec.CellID(c), err)
			}
			keys = append(keys, Key(endpoint, llm.Request{Model: m.Name, Messages: msgs, Seed: spec.CallSeed(c), Params: spec.CallParams(c)}))
			cells = append(cells, c)
			users = append(users, msgs[len(msgs)-1].Content)
		}
		found, err := Lookup(ctx, g, keys)
		if err != nil {
			return nil, fmt.Errorf("cache: look up cells of model %s: %w", m.ID, err)
		}
		for i, c := range cells {
			a, ok := found.Answers[keys[i]]
			switch {
			case ok:
				held[m.ID]++
				if spec.Run.Cumulative {
					history[c.Persona] = append(history[c.Persona], experiment.Turn{User: users[i], Assistant: a.Text})
				}
			case spec.Run.Cumulative:
				broken[c.Persona] = true
			}
		}
	}
	return held, nil
}

// heldVectors counts, by model id, the texts of an embed spec whose vectors the cache holds (valid entries of
// the dimensions asked for, any length when the spec asks none).
func heldVectors(ctx context.Context, g Getter, spec *experiment.Spec) (map[string]int, error) {
	held := make(map[string]int, len(spec.Models))
	texts, err := spec.EmbedTexts()
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	for _, m := range spec.Models {
		if !spec.CachePolicy(m).Reads() {
			continue
		}
		keys := make([]store.CacheKey, len(texts))
		for i, t := range texts {
			keys[i] = VectorKey(Endpoint(m), m.Name, t.Text, spec.Embed.Dimensions)
		}
		valid := map[store.CacheKey]bool{}
		for start := 0; start < len(keys); start += heldBatch {
			entries, err := g.CacheGet(ctx, keys[start:min(len(keys), start+heldBatch)])
			if err != nil {
				return nil, fmt.Errorf("cache: look up vectors of model %s: %w", m.ID, err)
			}
			for _, e := range entries {
				if _, err := ReadVector(e, e.Key, spec.Embed.Dimensions); err == nil {
					valid[e.Key] = true
				}
			}
		}
		for _, k := range keys {
			if valid[k] {
				held[m.ID]++
			}
		}
	}
	return held, nil
}
