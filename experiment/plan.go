package experiment

import (
	"fmt"
	"strconv"
)

// Cell is one model call of the grid. Its Index is its position in submission order: models (outer) → seeds →
// items → personas (inner). Model, Seed, Item and Persona index the spec's slices.
type Cell struct {
	Index   int
	Model   int
	Seed    int
	Item    int
	Persona int
}

// NumCells is the number of model calls of the grid.
func (s *Spec) NumCells() int {
	if s.IsEmbed() {
		return len(s.Models) * s.numEmbedTexts()
	}
	return len(s.Models) * len(s.Seeds) * len(s.Questionnaire.Items) * len(s.Personas)
}

// Cell returns the cell at index i of submission order. It panics when i is out of range, and for a kind: embed
// spec without personas or items (texts: items, personas or csv), whose cells are (model, text) pairs that
// EmbedCell splits: such a spec has no grid to place them in.
func (s *Spec) Cell(i int) Cell {
	if i < 0 || i >= s.NumCells() {
		panic(fmt.Sprintf("experiment: cell index %d out of range [0,%d)", i, s.NumCells()))
	}
	if len(s.Personas) == 0 || len(s.Questionnaire.Items) == 0 || len(s.Seeds) == 0 {
		panic(fmt.Sprintf("experiment: Cell(%d) of a spec with %d personas, %d items and %d seeds: a kind: embed "+
			"spec's cells are (model, text), see EmbedCell", i, len(s.Personas), len(s.Questionnaire.Items), len(s.Seeds)))
	}
	p, i2 := i%len(s.Personas), i/len(s.Personas)
	it, i3 := i2%len(s.Questionnaire.Items), i2/len(s.Questionnaire.Items)
	sd, m := i3%len(s.Seeds), i3/len(s.Seeds)
	return Cell{Index: i, Model: m, Seed: sd, Item: it, Persona: p}
}

// CellID is the stable id of a cell: model/seed/item/persona.
func (s *Spec) CellID(c Cell) string {
	return s.Models[c.Model].ID + "/" + strconv.FormatInt(s.Seeds[c.Seed], 10) + "/" +
		s.Questionnaire.Items[c.Item].ID + "/" + s.Personas[c.Persona].ID
}

// Pass is a contiguous range [Start, End) of cells of one (model, seed), run by one RunSeedPass activity.
// A (model, seed) with more cells than the chunk size is split into several passes at item boundaries.
type Pass struct {
	Index int `json:"index"`
	Model int `json:"model"`
	Seed  int `json:"seed"`
	Start int `json:"start"`
	End   int `json:"end"`
}

// Len is the number of cells of the pass.
func (p Pass) Len() int { return p.End - p.Start }

// Passes plans the passes in submission order. Cumulative runs are never chunked: a persona's memory runs
// through the whole (model, seed).
func (s *Spec) Passes() []Pass {
	if s.IsEmbed() {
		return s.embedPasses()
	}
	perItem := len(s.Personas)
	perSeed := len(s.Questionnaire.Items) * perItem
	itemsPerChunk := len(s.Questionnaire.Items)
	if !s.Run.Cumulative {
		chunk := s.Run.ChunkSize
		if chunk <= 0 {
			chunk = DefaultChunkSize
		}
		itemsPerChunk = max(1, chunk/max(1, perItem))
	}
	var out []Pass
	for m := range s.Models {
		step := itemsPerChunk
		if s.Batched(s.Models[m]) {
			// A batch pass is its whole (model, seed): its batches are cut by max_requests and max_bytes.
			step = max(1, len(s.Questionnaire.Items))
		}
		for sd := range s.Seeds {
			base := (m*len(s.Seeds) + sd) * perSeed
			for it := 0; it < len(s.Questionnaire.Items); it += step {
				end := min(it+step, len(s.Questionnaire.Items))
				out = append(out, Pass{Index: len(out), Model: m, Seed: sd, Start: base + it*perItem, End: base + end*perItem})
			}
		}
	}
	return out
}
