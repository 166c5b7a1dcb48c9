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

// moments are the sums of one order's cells: option weights and, where the cells have them, expected weights.
type moments struct {
	n, nExp   int
	sum, sumE float64
}

// optionCounts are what first_effect needs of one option among a persona's cells of one item: the cells that
// showed it first, those of them answered with it, and the cells answered with it wherever it was shown.
type optionCounts struct{ first, firstAnswered, answered int32 }

// itemCounts are a persona's cells of one item and their optionCounts per option (questionnaire order).
type itemCounts struct {
	cells int32
	opts  []optionCounts
}

// personaSums are one persona's sums within a group: everything a bootstrap resample needs, since every
// statistic of the group is a function of sums over its personas.
type personaSums struct {
	n           int   // answered cells
	pos         []int // cells whose answer was shown at position k+1
	first, last int   // cells whose answer was shown first, last
	order       [nOrders]moments
	// counts are the persona's optionCounts of the group's item (item groups only: an AllItems group reads its
	// items' groups, so a run keeps them once).
	counts itemCounts
}

// biasGroup is one model × item (or model × AllItems) group.
type biasGroup struct {
	scale    string
	k        int // the largest number of options shown
	personas map[string]*personaSums
}

func (a *Accumulator) addBias(o *Observation) {
	a.group(groupKey{o.Model, o.Item}, o.Scale).add(o).count(o)
	a.group(groupKey{o.Model, AllItems}, "").add(o)
}

func (a *Accumulator) group(k groupKey, scale string) *biasGroup {
	g := a.bias[k]
	if g == nil {
		g = &biasGroup{scale: scale, personas: map[string]*personaSums{}}
		a.bias[k] = g
	}
	return g
}

// add counts o in the group's sums and returns its persona's.
func (g *biasGroup) add(o *Observation) *personaSums {
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
	if i := orderIndex(o.Order); i >= 0 {
		m := &p.order[i]
		m.n++
		m.sum += o.Weight
		if o.ExpectedWeight != nil {
			m.nExp++
			m.sumE += *o.ExpectedWeight
		}
	}
	return p
}

// count adds o to the persona's optionCounts of its item.
func (p *personaSums) count(o *Observation) {
	ic := &p.counts
	for len(ic.opts) < o.K {
		ic.opts = append(ic.opts, optionCounts{})
	}
	ic.cells++
	ic.opts[o.First].first++
	ic.opts[o.Answer].answered++
	if o.Answer == o.First {
		ic.opts[o.First].firstAnswered++
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
	// NOrder and WeightOrder are the cells and the mean option weight of their answers (reverse keying not
	// applied) under as_written, reversed and shuffled order.
	NOrder      [3]int
	WeightOrder [3]*float64
	// WeightDiff is WeightOrder reversed − as_written.
	WeightDiff Interval
	// PrimacyRecency is share(shown first) − share(shown last).
	PrimacyRecency Interval
	// FirstEffect is the first-position effect: Σ over the options c of the line's items of
	// (F_c·P(c | c shown first) − F_c·P(c | c shown elsewhere)) / Σ F_c, F_c the cells showing c first, over the
	// options both shown first and elsewhere; nil where no option is (the position is not separable from the
	// option: as written, reversed only).
	FirstEffect Interval
	// NExpected, ExpectedWeightOrder and ExpectedWeightDiff are the same on expected weights (cells with
	// probabilities).
	NExpected           [3]int
	ExpectedWeightOrder [3]*float64
	ExpectedWeightDiff  Interval
	// Marginal is the item's order-marginal answer distribution, which design does not compute: the caller
	// (results) sets it on item rows from every cell of the item, answered or not, so that it is one with the
	// other outputs' distributions. MarginalCells counts the cells, MarginalSource says what they had.
	Marginal       []float64
	MarginalCells  int
	MarginalSource string
}

// biasStats are the group's statistics for one weighting of its personas.
type biasStats struct{ diff, diffE, pri, first float64 }

// groupData is a group's personas in persona id order and, per item of the group in item id order, each
// persona's optionCounts of it (nil where the persona has no cell of the item).
type groupData struct {
	ps    []*personaSums
	items [][]*itemCounts
	// f, fa, a are scratch: one item's weighted optionCounts, as long as the most options shown.
	f, fa, a []float64
}

// stats computes the statistics with persona i weighted w[i] (nil: every persona once). Undefined ones are NaN.
func (gd *groupData) stats(w []int) biasStats {
	var n, first, last float64
	var ord [nOrders]struct{ n, sum, nE, sumE float64 }
	for i, p := range gd.ps {
		wi := weightOf(w, i)
		if wi == 0 {
			continue
		}
		n += wi * float64(p.n)
		first += wi * float64(p.first)
		last += wi * float64(p.last)
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
		first: gd.firstEffect(w),
	}
}

// firstEffect is the first-position effect with persona i weighted w[i]: per item and option c, with F the cells
// that showed c first (FA of them answered c), N the item's cells and A those answered c, c's share when shown
// first FA/F less its share when shown elsewhere (A − FA)/(N − F), weighted by F over the options where both are
// defined. NaN when none is.
func (gd *groupData) firstEffect(w []int) float64 {
	var num, den float64
	for _, counts := range gd.items {
		clear(gd.f)
		clear(gd.fa)
		clear(gd.a)
		var n float64
		for i, ic := range counts {
			wi := weightOf(w, i)
			if wi == 0 || ic == nil {
				continue
			}
			n += wi * float64(ic.cells)
			for c, oc := range ic.opts {
				gd.f[c] += wi * float64(oc.first)
				gd.fa[c] += wi * float64(oc.firstAnswered)
				gd.a[c] += wi * float64(oc.answered)
			}
		}
		for c, f := range gd.f {
			if f == 0 || n-f == 0 {
				continue
			}
			num += gd.fa[c] - f*(gd.a[c]-gd.fa[c])/(n-f)
			den += f
		}
	}
	return num / den
}

func weightOf(w []int, i int) float64 {
	if w == nil {
		return 1
	}
	return float64(w[i])
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
	gd := &groupData{ps: make([]*personaSums, len(ids)), items: a.itemCounts(k, ids),
		f: make([]float64, g.k), fa: make([]float64, g.k), a: make([]float64, g.k)}
	for i, id := range ids {
		gd.ps[i] = g.personas[id]
	}
	ps := gd.ps
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
			r.WeightOrder[j] = ptr(s / float64(r.NOrder[j]))
		}
		if r.NExpected[j] > 0 {
			r.ExpectedWeightOrder[j] = ptr(se / float64(r.NExpected[j]))
		}
	}
	point := gd.stats(nil)
	r.WeightDiff.Value, r.ExpectedWeightDiff.Value = defined(point.diff), defined(point.diffE)
	r.PrimacyRecency.Value, r.FirstEffect.Value = defined(point.pri), defined(point.first)
	if a.boot.Samples > 0 && len(ps) > 0 {
		var diff, diffE, pri, first []float64
		w := make([]int, len(ps))
		rs := resamplerOf(a.boot.Seed, k.model, k.item, len(ps))
		for range a.boot.Samples {
			rs.Counts(w)
			s := gd.stats(w)
			diff, diffE = append(diff, s.diff), append(diffE, s.diffE)
			pri, first = append(pri, s.pri), append(first, s.first)
		}
		r.WeightDiff.Lo, r.WeightDiff.Hi = bootstrap.Interval(diff)
		r.ExpectedWeightDiff.Lo, r.ExpectedWeightDiff.Hi = bootstrap.Interval(diffE)
		r.PrimacyRecency.Lo, r.PrimacyRecency.Hi = bootstrap.Interval(pri)
		r.FirstEffect.Lo, r.FirstEffect.Hi = bootstrap.Interval(first)
	}
	return r
}

// itemCounts returns, for the group k whose personas are ids, per item of the group in item id order (the item's
// own for an item group, the model's items for an AllItems group) each persona's optionCounts of the item, nil
// where it has none.
func (a *Accumulator) itemCounts(k groupKey, ids []string) [][]*itemCounts {
	var items []string
	if k.item != AllItems {
		items = []string{k.item}
	} else {
		for gk := range a.bias {
			if gk.model == k.model && gk.item != AllItems {
				items = append(items, gk.item)
			}
		}
		slices.Sort(items)
	}
	out := make([][]*itemCounts, len(items))
	for j, it := range items {
		g := a.bias[groupKey{k.model, it}]
		out[j] = make([]*itemCounts, len(ids))
		for i, id := range ids {
			if p := g.personas[id]; p != nil {
				out[j][i] = &p.counts
			}
		}
	}
	return out
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
