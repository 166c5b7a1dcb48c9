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

// Observation is one answered cell: where it lies in the grid, what it showed where, what it answered and what
// that scores.
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
	// Answer is the written answer's index among the item's options in the questionnaire's (canonical) order,
	// First the canonical index of the option shown first: 0 to K − 1 both.
	Answer, First int
	// Score is the written answer's score, reverse-keyed items already reversed (the variance decomposition's).
	Score float64
	// Weight is the written answer's option weight as the questionnaire writes it, reverse keying not applied:
	// order bias compares orders on it, so that a reverse-keyed item's shift adds to the others' (Score would
	// turn it around).
	Weight float64
	// ExpectedWeight is Σ p · weight over the cell's option probabilities (logprob runs), on the same weights;
	// nil without them.
	ExpectedWeight *float64
}

// check returns why o cannot be used, or nil.
func (o *Observation) check() error {
	switch {
	case o.K < 1:
		return fmt.Errorf("observation %s/%s/%s: %d options shown; want at least 1", o.Model, o.Item, o.Persona, o.K)
	case o.Position < 1 || o.Position > o.K:
		return fmt.Errorf("observation %s/%s/%s: shown position %d; want 1 to %d", o.Model, o.Item, o.Persona, o.Position, o.K)
	case o.Answer < 0 || o.Answer >= o.K || o.First < 0 || o.First >= o.K:
		return fmt.Errorf("observation %s/%s/%s: answer %d, first shown %d; want option indices 0 to %d", o.Model, o.Item, o.Persona, o.Answer, o.First, o.K-1)
	case (o.Position == 1) != (o.Answer == o.First):
		return fmt.Errorf("observation %s/%s/%s: answer %d shown at position %d, the option shown first %d; want the answer shown first exactly when it is that option", o.Model, o.Item, o.Persona, o.Answer, o.Position, o.First)
	case math.IsNaN(o.Score) || math.IsInf(o.Score, 0):
		return fmt.Errorf("observation %s/%s/%s: score %v is not a finite number", o.Model, o.Item, o.Persona, o.Score)
	case math.IsNaN(o.Weight) || math.IsInf(o.Weight, 0):
		return fmt.Errorf("observation %s/%s/%s: option weight %v is not a finite number", o.Model, o.Item, o.Persona, o.Weight)
	case o.ExpectedWeight != nil && (math.IsNaN(*o.ExpectedWeight) || math.IsInf(*o.ExpectedWeight, 0)):
		return fmt.Errorf("observation %s/%s/%s: expected weight %v is not a finite number", o.Model, o.Item, o.Persona, *o.ExpectedWeight)
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
