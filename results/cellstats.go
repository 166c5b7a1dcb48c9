package results

import (
	"math"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
)

// cellStats is what the analysis keeps of the cells, in memory that does not grow with the seeds: per (model,
// item, persona) the count of each written answer and the sum of the scores (over seeds), the scores of the
// (model, seed) being read, and the latency and attempt counts. A run's cells arrive in submission order (models
// → seeds → items → personas), so a (model, seed) block is complete when the next one starts, and its
// reliability is computed then.
type cellStats struct {
	spec      *experiment.Spec
	itemOff   []int // item → offset of its options in one (model, persona) block of answers
	optBlock  int   // options of all items
	answers   []uint32
	scoreSum  []int64 // per (model, item, persona): the sum over seeds of the scores
	scored    []int32
	perBlock  int // (item, persona) pairs of one (model, seed): items × personas
	seedCells int // cells of one (model, seed): spec.SeedCells
	block     int // the (model, seed) block in blockScore, -1 before the first cell
	blockDone func(block int, score []int32, has []bool, expected []float64)
	// blockScore and blockHas are the scores of the current block by item × persona, blockExpected its expected
	// scores (NaN where a cell has none).
	blockScore    []int32
	blockHas      []bool
	blockExpected []float64
	lat           LatencyStats
}

// LatencyStats are the latencies and attempts of the cells that ran (Attempts > 0).
type LatencyStats struct {
	// Ran is the number of cells that ran; SumMS and MaxMS the sum and the largest of their latencies.
	Ran          int
	SumMS, MaxMS float64
	// Attempts[i] counts the cells that took i+1 requests (store.Record.Attempts).
	Attempts []int
	// byMS counts latencies by whole millisecond (floor), which every histogram bin width ≥ 1 ms is made of.
	byMS map[int64]int
}

// Bins counts the latencies in nb bins of width ms (a whole number ≥ 1): bin i holds [i·width, (i+1)·width),
// the last bin everything above.
func (l LatencyStats) Bins(width float64, nb int) []int {
	out := make([]int, nb)
	for ms, n := range l.byMS {
		out[min(int(float64(ms)/width), nb-1)] += n
	}
	return out
}

func newCellStats(spec *experiment.Spec, blockDone func(block int, score []int32, has []bool, expected []float64)) *cellStats {
	c := &cellStats{spec: spec, block: -1, blockDone: blockDone, lat: LatencyStats{byMS: map[int64]int{}}}
	c.itemOff, c.optBlock = optionOffsets(spec)
	mp := len(spec.Models) * len(spec.Personas)
	c.answers = make([]uint32, mp*c.optBlock)
	c.scoreSum = make([]int64, mp*len(spec.Questionnaire.Items))
	c.scored = make([]int32, len(c.scoreSum))
	c.perBlock = len(spec.Questionnaire.Items) * len(spec.Personas)
	c.seedCells = 0
	if c.perBlock > 0 {
		c.seedCells = spec.SeedCells()
	}
	c.blockScore = make([]int32, c.perBlock)
	c.blockHas = make([]bool, c.perBlock)
	c.blockExpected = make([]float64, c.perBlock)
	for i := range c.blockExpected {
		c.blockExpected[i] = math.NaN()
	}
	return c
}

// at returns the index of (model, item, persona) in scoreSum and the offset of its options in answers.
func (c *cellStats) at(m, it, p int) (cell, off int) {
	mp := m*len(c.spec.Personas) + p
	return mp*len(c.spec.Questionnaire.Items) + it, mp*c.optBlock + c.itemOff[it]
}

// add counts one cell; cells must come in index order.
func (c *cellStats) add(r CellResult, index int) {
	if c.perBlock == 0 {
		return
	}
	c.reach(index / c.seedCells)
	cell := c.spec.Cell(index)
	if cell.Probe != 0 || cell.Variant != 0 || cell.PromptVariant != 0 {
		// A verbalized probe is a second call about the same answer: it is not a second answer to count. A
		// wording or prompt variant asks another question: the per-item statistics pool the original only.
		c.lat.add(r.LatencyMS, r.Attempts)
		return
	}
	i, off := c.at(cell.Model, cell.Item, cell.Persona)
	if r.Option >= 0 {
		c.answers[off+int(r.Option)]++
	}
	// Per-seed blocks hold one answer per (item, persona): a balanced item's reversed cell counts in the
	// distributions and means (above and below) but leaves the block's score to the cell shown as written.
	if cell.Order != 0 {
		c.scoreSum[i] += int64(r.Score) * int64(boolInt(r.Scored))
		c.scored[i] += int32(boolInt(r.Scored))
		c.lat.add(r.LatencyMS, r.Attempts)
		return
	}
	if e := r.Expected; e == e { // not NaN
		c.blockExpected[cell.Item*len(c.spec.Personas)+cell.Persona] = e
	}
	if r.Scored {
		c.scoreSum[i] += int64(r.Score)
		c.scored[i]++
		j := cell.Item*len(c.spec.Personas) + cell.Persona
		c.blockScore[j], c.blockHas[j] = r.Score, true
	}
	c.lat.add(r.LatencyMS, r.Attempts)
}

// reach closes every block before b (a block no cell reached has no scores).
func (c *cellStats) reach(b int) {
	for c.block < b {
		if c.block >= 0 {
			c.blockDone(c.block, c.blockScore, c.blockHas, c.blockExpected)
			clear(c.blockScore)
			clear(c.blockHas)
			for i := range c.blockExpected {
				c.blockExpected[i] = math.NaN()
			}
		}
		c.block++
	}
}

// finish closes the last block and those no cell reached.
func (c *cellStats) finish() {
	c.reach(len(c.spec.Models) * len(c.spec.Seeds))
}

// modalShare is, over the seeds of one (model, item, persona), the share of answered seeds that gave the most
// frequent answer; ok is false when no seed answered.
func (c *cellStats) modalShare(m, it, p int) (share float64, ok bool) {
	_, off := c.at(m, it, p)
	n, top := 0, 0
	for _, k := range c.answers[off : off+len(c.spec.OptionsFor(it).Options)] {
		n += int(k)
		top = max(top, int(k))
	}
	if n == 0 {
		return 0, false
	}
	return float64(top) / float64(n), true
}

// scoreMatrix is the personas × items matrix of scores of the given items in block scores (item × persona
// order), psychometrics.Missing where a cell has none, and the number of those.
func scoreMatrix(personas int, items []int, score []int32, has []bool) (x [][]float64, missing int) {
	x = make([][]float64, personas)
	for p := range personas {
		x[p] = make([]float64, len(items))
		for j, it := range items {
			k := it*personas + p
			if !has[k] {
				x[p][j] = psychometrics.Missing
				missing++
				continue
			}
			x[p][j] = float64(score[k])
		}
	}
	return x, missing
}

// expectedMatrix is the personas × items matrix of expected scores of the given items in block expected (item ×
// persona order, NaN for none), and whether any cell has one.
func expectedMatrix(personas int, items []int, expected []float64) (x [][]float64, any bool) {
	x = make([][]float64, personas)
	for p := range personas {
		x[p] = make([]float64, len(items))
		for j, it := range items {
			e := expected[it*personas+p]
			if e != e {
				x[p][j] = psychometrics.Missing
				continue
			}
			x[p][j], any = e, true
		}
	}
	return x, any
}

// optionOffsets is, for every item, the offset of its first option in a block that holds every item's options
// in item order, and the size of that block.
func optionOffsets(spec *experiment.Spec) (off []int, size int) {
	off = make([]int, len(spec.Questionnaire.Items))
	for it := range spec.Questionnaire.Items {
		off[it] = size
		size += len(spec.OptionsFor(it).Options)
	}
	return off, size
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
