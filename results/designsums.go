package results

import (
	"slices"
	"strings"

	"github.com/silicolab/silico/design"
	"github.com/silicolab/silico/experiment"
)

// designSums feeds the rows of one export, in the same single pass as the analysis, to the accumulators of
// order_bias.csv, variance.csv (design.Accumulator) and modes.csv (ModeSums). Either is nil when the spec does
// not get its files, so a run pays only for what it writes.
type designSums struct {
	spec   *experiment.Spec
	design *design.Accumulator
	modes  *ModeSums
}

func newDesignSums(spec *experiment.Spec) *designSums {
	d := &designSums{spec: spec}
	if VariesOrder(spec) || writesVariance(spec) {
		n, seed := spec.Analysis.Bootstrap.Resolve()
		d.design = design.New(design.Bootstrap{Samples: n, Seed: seed})
	}
	if writesModes(spec) {
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
	if o, ok := DesignObservation(c, r); ok {
		return d.design.Add(o)
	}
	return nil
}

// DesignObservation returns the design observation of row r of cell c, and false when the row is none. Only the
// main call (probe 0) of a cell with a score and a shown position is one: the verbalized probe asks the same
// question again and would count the cell twice.
func DesignObservation(c experiment.Cell, r *Row) (design.Observation, bool) {
	if c.Probe != 0 || r.Score == nil || r.ShownPosition == nil {
		return design.Observation{}, false
	}
	return design.Observation{
		Model: r.Model, Scale: r.Scale, Item: r.ItemID, Persona: r.PersonaID, Seed: r.Seed,
		Order: r.Order, Variant: r.Variant, PromptVariant: r.PromptVariant,
		Position: *r.ShownPosition, K: strings.Count(r.Shown, ShownDelimiter) + 1,
		Score: float64(*r.Score), Expected: r.ExpectedScore, Probs: r.Probs,
	}, true
}

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
