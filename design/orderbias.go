package design

import (
	"cmp"
	"math"
	"slices"

	"github.com/silicolab/silico/bootstrap"
	"github.com/silicolab/silico/experiment"
)

// AllItems is the item label of the order-bias row that pools every item of a model.
const AllItems = experiment.Overall

// nOrders is the number of orders whose means order_bias.csv reports: as written, reversed, shuffled.
const nOrders = 3

// orderIndex returns the column of an order label among the reported orders, or -1.
func orderIndex(label string) int {
	switch label {
	case string(experiment.OrderAsWritten):
		return 0
	case string(experiment.OrderReversed):
		return 1
	case string(experiment.OrderShuffled):
		return 2
	}
	return -1
}

type groupKey struct{ model, item string }

// moments are the sums of one order's cells: scores and, where the cells have them, expected scores.
type moments struct {
	n, nExp   int
	sum, sumE float64
}

// personaSums are one persona's sums within a group: everything a bootstrap resample needs, since every
// statistic of the group is a ratio of sums over its personas.
type personaSums struct {
	n           int   // answered cells
	pos         []int // cells whose answer was shown at position k+1
	first, last int   // cells whose answer was shown first, last
	beta        float64
	order       [nOrders]moments
}

// biasGroup is one model × item (or model × AllItems) group.
type biasGroup struct {
	scale    string
	k        int // the largest number of options shown
	personas map[string]*personaSums
	// probs sums the canonical-order pmfs per order label (item groups only), with the number of cells summed.
	probs  map[string][]float64
	nProbs map[string]int
}

func (a *Accumulator) addBias(o *Observation) {
	a.group(groupKey{o.Model, o.Item}, o.Scale).add(o, true)
	a.group(groupKey{o.Model, AllItems}, "").add(o, false)
}

func (a *Accumulator) group(k groupKey, scale string) *biasGroup {
	g := a.bias[k]
	if g == nil {
		g = &biasGroup{scale: scale, personas: map[string]*personaSums{}, probs: map[string][]float64{}, nProbs: map[string]int{}}
		a.bias[k] = g
	}
	return g
}

func (g *biasGroup) add(o *Observation, withProbs bool) {
	g.k = max(g.k, o.K)
	p := g.personas[o.Persona]
	if p == nil {
		p = &personaSums{}
		g.personas[o.Persona] = p
	}
	p.n++
	for len(p.pos) < o.Position {
		p.pos = append(p.pos, 0)
	}
	p.pos[o.Position-1]++
	if o.Position == 1 {
		p.first++
	}
	if o.Position == o.K {
		p.last++
	}
	if o.K > 1 {
		ind := 0.0
		if o.Position == 1 {
			ind = 1
		}
		p.beta += (float64(o.K)*ind - 1) / float64(o.K-1)
	}
	if i := orderIndex(o.Order); i >= 0 {
		m := &p.order[i]
		m.n++
		m.sum += o.Score
		if o.Expected != nil {
			m.nExp++
			m.sumE += *o.Expected
		}
	}
	if withProbs && len(o.Probs) == o.K {
		s := g.probs[o.Order]
		for len(s) < o.K {
			s = append(s, 0)
		}
		for k, v := range o.Probs {
			s[k] += v
		}
		g.probs[o.Order] = s
		g.nProbs[o.Order]++
	}
}

// Interval is a statistic with its bootstrap interval; Lo and Hi are nil when intervals are off or no resample
// defines the statistic, Value is nil when the data do not define it.
type Interval struct {
	Value, Lo, Hi *float64
}

// OrderBiasRow is one line of order_bias.csv: a model × item, or a model × AllItems.
type OrderBiasRow struct {
	Model string
	// Scale is the item's scale; empty on an AllItems row.
	Scale    string
	Item     string
	N        int
	Personas int
	// K is the largest number of options shown; PositionShares[k] the share of answers shown at position k+1.
	K              int
	PositionShares []float64
	// NOrder and MeanOrder are the cells and mean score under as_written, reversed and shuffled order.
	NOrder    [3]int
	MeanOrder [3]*float64
	// Diff is mean(reversed) − mean(as_written).
	Diff Interval
	// PrimacyRecency is share(shown first) − share(shown last).
	PrimacyRecency Interval
	// FirstBias is the excess share at position 1 over chance: mean over cells of (K·[position = 1] − 1)/(K − 1).
	FirstBias Interval
	// NExpected, MeanExpected and DiffExpected are the same on expected scores (cells with probabilities).
	NExpected    [3]int
	MeanExpected [3]*float64
	DiffExpected Interval
	// Marginal is the order-marginal distribution: the mean over the order labels present of each order's mean
	// pmf, in canonical option order (item rows of logprob runs; nil otherwise). MarginalCells counts the cells.
	Marginal      []float64
	MarginalCells int
}

// biasStats are the group's statistics for one weighting of its personas.
type biasStats struct{ diff, diffE, pri, beta float64 }

// stats computes the statistics with persona i weighted w[i] (nil: every persona once). Undefined ones are NaN.
func stats(ps []*personaSums, w []int) biasStats {
	var n, first, last float64
	var beta float64
	var ord [nOrders]struct{ n, sum, nE, sumE float64 }
	for i, p := range ps {
		wi := 1.0
		if w != nil {
			if w[i] == 0 {
				continue
			}
			wi = float64(w[i])
		}
		n += wi * float64(p.n)
		first += wi * float64(p.first)
		last += wi * float64(p.last)
		beta += wi * p.beta
		for j, m := range p.order {
			ord[j].n += wi * float64(m.n)
			ord[j].sum += wi * m.sum
			ord[j].nE += wi * float64(m.nExp)
			ord[j].sumE += wi * m.sumE
		}
	}
	aw, rv := ord[0], ord[1]
	return biasStats{
		diff:  rv.sum/rv.n - aw.sum/aw.n, // NaN when either order is absent (0/0)
		diffE: rv.sumE/rv.nE - aw.sumE/aw.nE,
		pri:   first/n - last/n,
		beta:  beta / n,
	}
}

// OrderBias returns the rows of order_bias.csv: per model (sorted), each item (sorted) and then AllItems.
func (a *Accumulator) OrderBias() []OrderBiasRow {
	keys := make([]groupKey, 0, len(a.bias))
	for k := range a.bias {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y groupKey) int {
		if c := cmp.Compare(x.model, y.model); c != 0 {
			return c
		}
		if (x.item == AllItems) != (y.item == AllItems) {
			if x.item == AllItems {
				return 1
			}
			return -1
		}
		return cmp.Compare(x.item, y.item)
	})
	rows := make([]OrderBiasRow, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, a.biasRow(k, a.bias[k]))
	}
	return rows
}

func (a *Accumulator) biasRow(k groupKey, g *biasGroup) OrderBiasRow {
	ids := make([]string, 0, len(g.personas))
	for id := range g.personas {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ps := make([]*personaSums, len(ids))
	for i, id := range ids {
		ps[i] = g.personas[id]
	}
	r := OrderBiasRow{Model: k.model, Scale: g.scale, Item: k.item, Personas: len(ps)}
	var pos []int
	for _, p := range ps {
		r.N += p.n
		for len(pos) < len(p.pos) {
			pos = append(pos, 0)
		}
		for j, c := range p.pos {
			pos[j] += c
		}
		for j, m := range p.order {
			r.NOrder[j] += m.n
			r.NExpected[j] += m.nExp
		}
	}
	for len(pos) < g.k {
		pos = append(pos, 0)
	}
	r.K = g.k
	for _, c := range pos {
		r.PositionShares = append(r.PositionShares, float64(c)/float64(r.N))
	}
	for j := range nOrders {
		var s, se float64
		for _, p := range ps {
			s += p.order[j].sum
			se += p.order[j].sumE
		}
		if r.NOrder[j] > 0 {
			r.MeanOrder[j] = ptr(s / float64(r.NOrder[j]))
		}
		if r.NExpected[j] > 0 {
			r.MeanExpected[j] = ptr(se / float64(r.NExpected[j]))
		}
	}
	point := stats(ps, nil)
	r.Diff.Value, r.DiffExpected.Value = defined(point.diff), defined(point.diffE)
	r.PrimacyRecency.Value, r.FirstBias.Value = defined(point.pri), defined(point.beta)
	if a.boot.Samples > 0 && len(ps) > 0 {
		var diff, diffE, pri, beta []float64
		w := make([]int, len(ps))
		rs := resamplerOf(a.boot.Seed, k.model, k.item, len(ps))
		for range a.boot.Samples {
			rs.Counts(w)
			s := stats(ps, w)
			diff, diffE = append(diff, s.diff), append(diffE, s.diffE)
			pri, beta = append(pri, s.pri), append(beta, s.beta)
		}
		r.Diff.Lo, r.Diff.Hi = bootstrap.Interval(diff)
		r.DiffExpected.Lo, r.DiffExpected.Hi = bootstrap.Interval(diffE)
		r.PrimacyRecency.Lo, r.PrimacyRecency.Hi = bootstrap.Interval(pri)
		r.FirstBias.Lo, r.FirstBias.Hi = bootstrap.Interval(beta)
	}
	r.Marginal, r.MarginalCells = marginal(g)
	return r
}

// marginal averages each order's mean pmf over the order labels present, labels in sorted order.
func marginal(g *biasGroup) ([]float64, int) {
	labels := make([]string, 0, len(g.probs))
	for l := range g.probs {
		labels = append(labels, l)
	}
	if len(labels) == 0 {
		return nil, 0
	}
	slices.Sort(labels)
	var out []float64
	cells := 0
	for _, l := range labels {
		s, n := g.probs[l], g.nProbs[l]
		cells += n
		for len(out) < len(s) {
			out = append(out, 0)
		}
		for k, v := range s {
			out[k] += v / float64(n) / float64(len(labels))
		}
	}
	return out, cells
}

// resamplerOf is the bootstrap.Resampler of the group of model and item with n personas: its key is
// bootstrap.Key(model, item), so the stream depends on nothing but (seed, model, item, n), and reruns and any
// concurrency give the same intervals.
func resamplerOf(seed int64, model, item string, n int) *bootstrap.Resampler {
	return bootstrap.New(seed, bootstrap.Key(model, item), n)
}

// ResampleIndices returns the persona indices (0-based, into the group's persona ids sorted bytewise) of the
// samples bootstrap resamples of a group of n personas, exactly as OrderBias draws them. It exists so the
// resamples can be exported and replayed elsewhere (the tests hand them to R).
func ResampleIndices(seed int64, model, item string, n, samples int) [][]int {
	return bootstrap.Indices(seed, bootstrap.Key(model, item), n, samples)
}

func ptr(v float64) *float64 { return &v }

func defined(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}
