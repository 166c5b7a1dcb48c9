package experiment

import (
	"fmt"
	"sort"
	"strconv"
)

// Cell is one model call of the grid. Its Index is its position in submission order: models (outer) → seeds →
// prompt variants → items → wording variants → personas → probes → option orders (inner). Model, Seed, Item and
// Persona index the spec's slices; PromptVariant is 0 for the spec's prompt, k for PromptVariants[k-1]; Variant
// is 0 for the item's own text, k for its Variants[k-1]; Probe is 0, or 1 for the verbalized call of a cell whose
// answer.modes ask for one (Spec.Probes); Order is 0, or 1 for the reversed cell of an item whose order mode is
// balanced.
type Cell struct {
	Index         int
	Model         int
	Seed          int
	PromptVariant int
	Item          int
	Variant       int
	Persona       int
	Probe         int
	Order         int
}

// layout is where each item's cells start in a (model, seed, prompt variant) block. An item has variants ×
// personas × probes × orders cells (variants: its own wording and each variant; orders: 2 under balanced, else
// 1). When every item has as many, starts is nil and perItem is that number; otherwise starts holds each item's
// first offset and, last, the block's size.
type layout struct {
	perItem int
	starts  []int
}

// layout returns the spec's item layout: the one Validate compiled when it still matches, or a fresh one.
func (s *Spec) layout() layout {
	if s.rt.fresh(s) {
		return s.rt.layout
	}
	return s.computeLayout()
}

// itemCells is how many cells item i has in a (model, seed, prompt variant) block.
func (s *Spec) itemCells(i int) int {
	return s.Variants(i) * len(s.Personas) * s.Probes() * s.numOrders(i)
}

func (s *Spec) computeLayout() layout {
	items := len(s.Questionnaire.Items)
	if items == 0 {
		return layout{perItem: len(s.Personas) * s.Probes()}
	}
	// Every item is compared with the first, plain or not: when the first item has an order or variants of its
	// own, the plain items are the ones that differ.
	first := s.itemCells(0)
	uniform := true
	for i := range items {
		if s.itemCells(i) != first {
			uniform = false
			break
		}
	}
	if uniform {
		return layout{perItem: first}
	}
	starts := make([]int, items+1)
	for i := range items {
		starts[i+1] = starts[i] + s.itemCells(i)
	}
	return layout{starts: starts}
}

// start is the offset of item it's first cell in a (model, seed, prompt variant) block; start(len(items)) is the
// block's size.
func (l layout) start(it int) int {
	if l.starts == nil {
		return it * l.perItem
	}
	return l.starts[it]
}

// item is the item whose cells hold offset r of a (model, seed, prompt variant) block.
func (l layout) item(r int) int {
	if l.starts == nil {
		return r / l.perItem
	}
	return sort.Search(len(l.starts)-1, func(i int) bool { return l.starts[i+1] > r })
}

// maxItem is the largest number of cells one item has.
func (l layout) maxItem() int {
	if l.starts == nil {
		return l.perItem
	}
	m := 0
	for i := 1; i < len(l.starts); i++ {
		m = max(m, l.starts[i]-l.starts[i-1])
	}
	return m
}

// SeedCells is the number of cells of one (model, seed) of a chat spec.
func (s *Spec) SeedCells() int {
	return s.NumPromptVariants() * s.layout().start(len(s.Questionnaire.Items))
}

// NumCells is the number of model calls of the grid.
func (s *Spec) NumCells() int {
	if s.IsEmbed() {
		return len(s.Models) * s.numEmbedTexts()
	}
	if len(s.Personas) == 0 {
		return 0
	}
	return len(s.Models) * len(s.Seeds) * s.SeedCells()
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
	l := s.layout()
	block := l.start(len(s.Questionnaire.Items))
	seedBlock := block * s.NumPromptVariants()
	r, i3 := i%seedBlock, i/seedBlock
	sd, m := i3%len(s.Seeds), i3/len(s.Seeds)
	pv, r := r/block, r%block
	it := l.item(r)
	r -= l.start(it)
	o, pr := s.numOrders(it), s.Probes()
	perVariant := len(s.Personas) * pr * o
	v, r := r/perVariant, r%perVariant
	return Cell{Index: i, Model: m, Seed: sd, PromptVariant: pv, Item: it, Variant: v, Persona: r / (o * pr),
		Probe: r / o % pr, Order: r % o}
}

// CellIndex is the index of the cell (model, seed, item, persona, order) of probe 0, the item's own wording and
// the spec's own prompt: the inverse of Cell.
func (s *Spec) CellIndex(m, sd, it, p, order int) int {
	return s.CellIndexOf(Cell{Model: m, Seed: sd, Item: it, Persona: p, Order: order})
}

// CellIndexOf is the index of c (its Index aside): the inverse of Cell.
func (s *Spec) CellIndexOf(c Cell) int {
	l := s.layout()
	o := s.numOrders(c.Item)
	block := l.start(len(s.Questionnaire.Items))
	return (c.Model*len(s.Seeds)+c.Seed)*block*s.NumPromptVariants() + c.PromptVariant*block + l.start(c.Item) +
		((c.Variant*len(s.Personas)+c.Persona)*s.Probes()+c.Probe)*o + c.Order
}

// CellID is the stable id of a cell: model/seed/item/persona, the item segment item:variant for a wording
// variant, then /<prompt variant id> for a prompt variant, /verbalized for a verbalized probe and /rev for the
// reversed cell of a balanced item. A cell of the spec's own wording and prompt keeps the id it had before
// variants existed.
func (s *Spec) CellID(c Cell) string {
	item := s.Questionnaire.Items[c.Item].ID
	if c.Variant > 0 {
		item += ":" + s.Questionnaire.Items[c.Item].Variants[c.Variant-1].ID
	}
	id := s.Models[c.Model].ID + "/" + strconv.FormatInt(s.Seeds[c.Seed], 10) + "/" + item + "/" +
		s.Personas[c.Persona].ID
	if c.PromptVariant > 0 {
		id += "/" + s.PromptVariants[c.PromptVariant-1].ID
	}
	if c.Probe == 1 {
		id += VerbalizedCellSuffix
	}
	if c.Order == 1 {
		id += ReversedCellSuffix
	}
	return id
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
	l := s.layout()
	// Items that differ in their number of cells chunk by the largest.
	perItem := l.maxItem()
	block := l.start(len(s.Questionnaire.Items))
	perSeed := block * s.NumPromptVariants()
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
		batched := s.Batched(s.Models[m])
		for sd := range s.Seeds {
			base := (m*len(s.Seeds) + sd) * perSeed
			if batched {
				// A batch pass is its whole (model, seed): its batches are cut by max_requests and max_bytes.
				out = append(out, Pass{Index: len(out), Model: m, Seed: sd, Start: base, End: base + perSeed})
				continue
			}
			// Passes split a prompt variant's block at item boundaries, never across two prompt variants.
			for pv := range s.NumPromptVariants() {
				pvBase := base + pv*block
				for it := 0; it < len(s.Questionnaire.Items); it += itemsPerChunk {
					end := min(it+itemsPerChunk, len(s.Questionnaire.Items))
					out = append(out, Pass{Index: len(out), Model: m, Seed: sd, Start: pvBase + l.start(it), End: pvBase + l.start(end)})
				}
			}
		}
	}
	return out
}
