package results

import (
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
)

// Sources of a mean answer distribution: what its cells had.
const (
	// SourceProbs: every cell had option probabilities (Row.Probs).
	SourceProbs = "probs"
	// SourceAnswers: no cell had probabilities; each counted as a point mass at its written answer.
	SourceAnswers = "answers"
	// SourceMixed: some cells had probabilities, the others counted as point masses.
	SourceMixed = "mixed"
)

// PMF is the mean answer distribution of a set of cells over one item's options (Spec.OptionsFor order).
type PMF struct {
	// P is the mean of the cells' distributions; nil when no cell had one.
	P []float64
	// Cells is the number of cells averaged; FromProbs how many of them had option probabilities (the others
	// were answered ok and count as a point mass at their option).
	Cells     int
	FromProbs int
}

// Source says what the cells had: SourceProbs, SourceAnswers or SourceMixed; empty without cells.
func (d PMF) Source() string {
	switch {
	case d.Cells == 0:
		return ""
	case d.FromProbs == d.Cells:
		return SourceProbs
	case d.FromProbs == 0:
		return SourceAnswers
	}
	return SourceMixed
}

// cellPMF returns the answer distribution of a row over its item's k options: its Probs when it has one of
// that length with some mass (scaled to sum to 1, which it does up to rounding), else a point mass at the
// option an ok row wrote. ok is false for a row with neither (unparsed, failed, not run).
func cellPMF(r *Row, option, k int) (p []float64, fromProbs, ok bool) {
	if len(r.Probs) == k {
		var s float64
		for _, v := range r.Probs {
			if v < 0 || v != v {
				s = -1
				break
			}
			s += v
		}
		if s > 0 {
			p = make([]float64, k)
			for i, v := range r.Probs {
				p[i] = v / s
			}
			return p, true, true
		}
	}
	if r.Status != store.StatusOK || option < 0 || option >= k {
		return nil, false, false
	}
	p = make([]float64, k)
	p[option] = 1
	return p, false, true
}

// distAccumulator sums the answer distributions of the cells per (model, item, persona), over seeds: a run's
// distributions take models × personas × (the options of every item) floats, whatever the number of seeds.
type distAccumulator struct {
	spec    *experiment.Spec
	itemOff []int // item → offset of its options in one (model, persona) block
	block   int   // options of all items
	sums    []float64
	cells   []int32 // per (model, item, persona): cells added
	probs   []int32 // of which from Probs
}

func newDistAccumulator(spec *experiment.Spec) *distAccumulator {
	d := &distAccumulator{spec: spec}
	d.itemOff, d.block = optionOffsets(spec)
	mp := len(spec.Models) * len(spec.Personas)
	d.sums = make([]float64, mp*d.block)
	d.cells = make([]int32, mp*len(spec.Questionnaire.Items))
	d.probs = make([]int32, len(d.cells))
	return d
}

// at returns the index of (model, item, persona) in cells and the offset of its options in sums.
func (d *distAccumulator) at(m, it, p int) (cell, off int) {
	mp := m*len(d.spec.Personas) + p
	return mp*len(d.spec.Questionnaire.Items) + it, mp*d.block + d.itemOff[it]
}

// add adds the row's distribution; option is the index of its written answer (-1 for none).
func (d *distAccumulator) add(r *Row, option int) {
	c := d.spec.Cell(r.Index)
	if c.Probe != 0 {
		return // a verbalized probe restates the cell's answer: it is not another one
	}
	if c.Variant != 0 || c.PromptVariant != 0 {
		return // a wording or prompt variant asks another question: per-item pools hold the original only
	}
	k := len(d.spec.OptionsFor(c.Item).Options)
	p, fromProbs, ok := cellPMF(r, option, k)
	if !ok {
		return
	}
	cell, off := d.at(c.Model, c.Item, c.Persona)
	for i, v := range p {
		d.sums[off+i] += v
	}
	d.cells[cell]++
	if fromProbs {
		d.probs[cell]++
	}
}

// pmf returns the mean distribution of the cells of model m and item it over the personas for which in is
// true (all seeds of each).
func (d *distAccumulator) pmf(m, it int, in func(p int) bool) PMF {
	k := len(d.spec.OptionsFor(it).Options)
	sum := make([]float64, k)
	var out PMF
	for p := range d.spec.Personas {
		if !in(p) {
			continue
		}
		cell, off := d.at(m, it, p)
		if d.cells[cell] == 0 {
			continue
		}
		out.Cells += int(d.cells[cell])
		out.FromProbs += int(d.probs[cell])
		for i := range sum {
			sum[i] += d.sums[off+i]
		}
	}
	if out.Cells == 0 {
		return out
	}
	for i := range sum {
		sum[i] /= float64(out.Cells)
	}
	out.P = sum
	return out
}

// Distribution is one (model, item, persona) of distributions.csv: the persona's mean answer distribution on
// the item over the model's seeds.
type Distribution struct {
	Model     string
	ItemID    string
	PersonaID string
	// Options are the item's option ids, in the order of PMF.P.
	Options []string
	PMF     PMF
}

// PersonaPMF returns persona p's mean answer distribution on item it for model m, over the seeds: each cell's
// option probabilities, or a point mass at its written answer for a cell without them.
func (a *Analysis) PersonaPMF(m, it, p int) PMF {
	return a.dists.pmf(m, it, func(q int) bool { return q == p })
}

// GroupPMF returns model m's mean answer distribution on item it over the cells of the personas in the
// reference group label (experiment.Spec.InGroup; GroupAll: every persona).
func (a *Analysis) GroupPMF(m, it int, label string) PMF {
	return a.dists.pmf(m, it, func(p int) bool { return a.Spec.InGroup(p, label) })
}

// Distributions returns every (model, item, persona) distribution in output order: models, items, personas
// in spec order. distributions.csv writes them one option per line.
func (a *Analysis) Distributions() []Distribution {
	s := a.Spec
	out := make([]Distribution, 0, len(s.Models)*len(s.Questionnaire.Items)*len(s.Personas))
	for m := range s.Models {
		for it := range s.Questionnaire.Items {
			opts := optionIDs(s, it)
			for p := range s.Personas {
				out = append(out, Distribution{Model: s.Models[m].ID, ItemID: s.Questionnaire.Items[it].ID,
					PersonaID: s.Personas[p].ID, Options: opts, PMF: a.PersonaPMF(m, it, p)})
			}
		}
	}
	return out
}

func optionIDs(s *experiment.Spec, it int) []string {
	opts := s.OptionsFor(it).Options
	ids := make([]string, len(opts))
	for k, o := range opts {
		ids[k] = o.ID
	}
	return ids
}

// CellPMF is row r's answer distribution over its item's options (spec.OptionsFor order), the one
// distributions.csv averages: its option probabilities scaled to sum to 1 when it has them, else a point mass at
// the option an ok row wrote. fromProbs says which; ok is false for a row with neither (unparsed, failed, not
// run).
func CellPMF(spec *experiment.Spec, r *Row) (p []float64, fromProbs, ok bool) {
	opts := spec.OptionsFor(spec.Cell(r.Index).Item).Options
	option := -1
	for k, o := range opts {
		if o.ID == r.OptionID {
			option = k
			break
		}
	}
	return cellPMF(r, option, len(opts))
}
