// Package design computes the statistics of the experimental design itself rather than of the scales: how much
// the position at which an option is shown moves the answers (order bias), and how the variance of the scores
// splits over the factors of the grid (variance decomposition). It knows nothing of runs, records or files:
// callers turn each answered cell into an Observation and feed it to an Accumulator, which keeps sums and counts
// (never the cells), and read the tables at the end:
//
//	a := design.New(design.Bootstrap{Samples: samples, Seed: seed}) // spec.Analysis.Bootstrap.Resolve()
//	for each answered cell: err := a.Add(design.Observation{...})
//	design.WriteOrderBias(w, runID, a.OrderBias())
//	rows, err := a.Variance(); design.WriteVariance(w, runID, rows)
package design

import (
	"fmt"
	"math"
)

// Observation is one answered cell: where it lies in the grid, where its answer was shown and what it scores.
type Observation struct {
	Model   string
	Scale   string
	Item    string
	Persona string
	Seed    int64
	// Order is the order the cell showed its options in, as results.csv's order column writes it: one of
	// experiment's OrderAsWritten, OrderReversed, OrderShuffled (a balanced item's cells are one of the first two).
	Order string
	// Variant is the item wording variant, PromptVariant the prompt variant; empty when the grid has none.
	Variant       string
	PromptVariant string
	// Position is the 1-based position at which the written answer was shown, K the number of options shown.
	Position int
	K        int
	// Score is the written answer's score, reverse-keyed items already reversed.
	Score float64
	// Expected is Σ p · score over the cell's option probabilities (logprob runs); nil without them.
	Expected *float64
	// Probs is the cell's probability of each option in the questionnaire's (canonical) option order, not the
	// shown order; nil without probabilities. Used only when it has K entries.
	Probs []float64
}

// check returns why o cannot be used, or nil.
func (o *Observation) check() error {
	switch {
	case o.K < 1:
		return fmt.Errorf("observation %s/%s/%s: %d options shown; want at least 1", o.Model, o.Item, o.Persona, o.K)
	case o.Position < 1 || o.Position > o.K:
		return fmt.Errorf("observation %s/%s/%s: shown position %d; want 1 to %d", o.Model, o.Item, o.Persona, o.Position, o.K)
	case math.IsNaN(o.Score) || math.IsInf(o.Score, 0):
		return fmt.Errorf("observation %s/%s/%s: score %v is not a finite number", o.Model, o.Item, o.Persona, o.Score)
	case o.Expected != nil && (math.IsNaN(*o.Expected) || math.IsInf(*o.Expected, 0)):
		return fmt.Errorf("observation %s/%s/%s: expected score %v is not a finite number", o.Model, o.Item, o.Persona, *o.Expected)
	}
	return nil
}

// Bootstrap says how intervals are resampled: Samples resamples (0: no intervals) drawn from Seed.
type Bootstrap struct {
	Samples int
	Seed    int64
}

// Accumulator gathers the observations of a run for both tables. The zero value is not ready: use New.
type Accumulator struct {
	boot     Bootstrap
	bias     map[groupKey]*biasGroup
	variance map[scaleKey]*varianceAcc
}

// New returns an empty Accumulator whose order-bias intervals resample as boot says.
func New(boot Bootstrap) *Accumulator {
	return &Accumulator{boot: boot, bias: map[groupKey]*biasGroup{}, variance: map[scaleKey]*varianceAcc{}}
}

// Add counts one observation in both tables. It returns an error, and counts nothing, for an observation that
// cannot be used (a position outside 1..K, a score that is not finite).
func (a *Accumulator) Add(o Observation) error {
	if err := o.check(); err != nil {
		return err
	}
	a.addBias(&o)
	a.addVariance(&o)
	return nil
}
