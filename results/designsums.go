package results

import (
	"slices"
	"strings"

	"github.com/silicolab/silico/design"
	"github.com/silicolab/silico/experiment"
)

// designSums feeds the rows of a run, in the same single pass as the analysis, to the accumulators of
// order_bias.csv, variance.csv (design.Accumulator) and modes.csv (ModeSums). Either is nil when the run does
// not need it, so a run pays only for what it writes (and a report, which shows order bias only, for that).
type designSums struct {
	spec   *experiment.Spec
	design *design.Accumulator
	modes  *ModeSums
}

// newDesignSums returns the sums spec's outputs need: order bias when it varies option order, and for an
// export (all) variance.csv's and modes.csv's too.
func newDesignSums(spec *experiment.Spec, all bool) *designSums {
	d := &designSums{spec: spec}
	if VariesOrder(spec) || (all && writesVariance(spec)) {
		n, seed := spec.Analysis.Bootstrap.Resolve()
		d.design = design.New(design.Bootstrap{Samples: n, Seed: seed})
	}
	if all && writesModes(spec) {
		d.modes = NewModeSums(spec)
	}
	return d
}

// add counts the row r of cell c.
func (d *designSums) add(c experiment.Cell, r *Row) error {
	if d.modes != nil {
		d.modes.Add(c, r, probeModes(d.spec, c))
	}
	if d.design == nil {
		return nil
	}
	if o, ok := designObservation(d.spec, c, r); ok {
		return d.design.Add(o)
	}
	return nil
}

// orderBias returns order_bias.csv's rows, nil when the spec does not vary option order. Each item row's
// order-marginal distribution is the item's GroupPMF over every persona: the one distribution reference.csv
// (model_p of group all), distributions.csv and the report average, from the same cells.
func (d *designSums) orderBias(a *Analysis) []design.OrderBiasRow {
	if d.design == nil || !VariesOrder(d.spec) {
		return nil
	}
	rows := d.design.OrderBias()
	models := map[string]int{}
	for m, md := range d.spec.Models {
		models[md.ID] = m
	}
	items := map[string]int{}
	for it, item := range d.spec.Questionnaire.Items {
		items[item.ID] = it
	}
	for i := range rows {
		r := &rows[i]
		it, ok := items[r.Item]
		if !ok || r.Item == design.AllItems {
			continue
		}
		pmf := a.GroupPMF(models[r.Model], it, experiment.GroupAll)
		r.Marginal, r.MarginalCells, r.MarginalSource = pmf.P, pmf.Cells, pmf.Source()
	}
	return rows
}

// designObservation returns the design observation of row r of cell c, and false when the row is none. Only the
// main call (probe 0) of a cell with a score and a shown position is one: the verbalized probe asks the same
// question again and would count the cell twice.
func designObservation(spec *experiment.Spec, c experiment.Cell, r *Row) (design.Observation, bool) {
	if c.Probe != 0 || r.Score == nil || r.ShownPosition == nil {
		return design.Observation{}, false
	}
	opts := spec.OptionsFor(c.Item).Options
	firstID, _, _ := strings.Cut(r.Shown, ShownDelimiter)
	index := func(id string) int {
		return slices.IndexFunc(opts, func(o experiment.Option) bool { return o.ID == id })
	}
	answer := index(r.OptionID)
	if answer < 0 {
		return design.Observation{}, false // a scored answer is an option: not reached
	}
	return design.Observation{
		Model: r.Model, Scale: r.Scale, Item: r.ItemID, Persona: r.PersonaID, Seed: r.Seed,
		Order: r.Order, Variant: r.Variant, PromptVariant: r.PromptVariant,
		Position: *r.ShownPosition, K: strings.Count(r.Shown, ShownDelimiter) + 1,
		Answer: answer, First: index(firstID),
		Score: float64(*r.Score), Weight: float64(opts[answer].Weight),
		ExpectedWeight: expectedBy(opts, r.Probs, optionWeight),
	}, true
}

// optionWeight is an option's weight as the questionnaire writes it (no reverse keying); ok is false for an
// option ignored for scale.
func optionWeight(o experiment.Option) (int, bool) { return o.Weight, !o.IgnoredForScale }

// probeModes are the answer modes whose distributions cell c's call gives: the verbalized probe gives
// verbalized, the main call the model's other modes.
func probeModes(spec *experiment.Spec, c experiment.Cell) []experiment.AnswerMode {
	if c.Probe == 1 {
		return []experiment.AnswerMode{experiment.AnswerVerbalized}
	}
	modes := spec.CellAnswer(c).Modes
	if spec.Probes() > 1 {
		modes = slices.DeleteFunc(slices.Clone(modes), func(m experiment.AnswerMode) bool { return m == experiment.AnswerVerbalized })
	}
	return modes
}
