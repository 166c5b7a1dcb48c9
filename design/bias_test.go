package design

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// simulate draws cells from the simulator's position-bias model: with probability beta the answer is the option
// shown first, otherwise any shown position with equal chance, so share(position 1) = β + (1 − β)/K.
func simulate(seed uint64, beta float64, personas, k int) []Observation {
	r := rand.New(rand.NewPCG(seed, 2))
	var obs []Observation
	for p := range personas {
		for it := range 4 {
			for _, order := range []string{string(experiment.OrderAsWritten), string(experiment.OrderReversed)} {
				for s := range 3 {
					pos := 1 + r.IntN(k)
					if r.Float64() < beta {
						pos = 1
					}
					c, first := pos-1, 0 // canonical index of the answer, and of the option shown first
					if order == string(experiment.OrderReversed) {
						c, first = k-pos, k-1
					}
					obs = append(obs, Observation{Model: "sim", Scale: "S", Item: fmt.Sprintf("i%d", it),
						Persona: fmt.Sprintf("p%03d", p), Seed: int64(s), Order: order, Position: pos, K: k,
						Answer: c, First: first, Score: float64(c + 1), Weight: float64(c + 1)})
				}
			}
		}
	}
	return obs
}

// TestBootstrapIsAPureFunction feeds the same cells in another order and to another accumulator: the resamples
// depend on (seed, model, item) only, so the intervals are the same; another seed moves them.
func TestBootstrapIsAPureFunction(t *testing.T) {
	obs := simulate(9, 0.2, 30, 5)
	boot := Bootstrap{Samples: 300, Seed: 3}
	want := analyse(t, obs, boot).OrderBias()
	shuffled := slices.Clone(obs)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	got := analyse(t, shuffled, boot).OrderBias()
	other := analyse(t, obs, Bootstrap{Samples: 300, Seed: 4}).OrderBias()
	moved := false
	for i := range want {
		for _, f := range []func(OrderBiasRow) Interval{
			func(r OrderBiasRow) Interval { return r.WeightDiff },
			func(r OrderBiasRow) Interval { return r.FirstEffect },
			func(r OrderBiasRow) Interval { return r.PrimacyRecency },
		} {
			w, g, o := f(want[i]), f(got[i]), f(other[i])
			if *w.Lo != *g.Lo || *w.Hi != *g.Hi {
				t.Errorf("%s/%s: interval [%v, %v] with the cells reordered, [%v, %v] before", want[i].Model, want[i].Item, *g.Lo, *g.Hi, *w.Lo, *w.Hi)
			}
			moved = moved || *w.Lo != *o.Lo || *w.Hi != *o.Hi
		}
	}
	if !moved {
		t.Error("another bootstrap seed gave the same intervals everywhere")
	}
	if slices.EqualFunc(ResampleIndices(3, "sim", "i0", 30, 5), ResampleIndices(3, "sim", "i1", 30, 5), slices.Equal) {
		t.Error("two items share their resamples; the stream must depend on the item")
	}
}

// TestNoIntervalsWithoutSamples: samples 0 turns the intervals off and leaves the point estimates.
func TestNoIntervalsWithoutSamples(t *testing.T) {
	rows := analyse(t, simulate(1, 0.2, 10, 5), Bootstrap{}).OrderBias()
	for _, r := range rows {
		if r.WeightDiff.Value == nil || r.WeightDiff.Lo != nil || r.WeightDiff.Hi != nil || r.FirstEffect.Lo != nil {
			t.Errorf("%s/%s: weight_diff %v with samples 0; want a value and no interval", r.Model, r.Item, r.WeightDiff)
		}
	}
}

// TestAddRefusesUnusableObservations: a shown position outside 1..K or a score that is not finite is an error
// and is not counted.
func TestAddRefusesUnusableObservations(t *testing.T) {
	a := New(Bootstrap{})
	good := Observation{Model: "m", Scale: "S", Item: "i", Persona: "p", Order: string(experiment.OrderAsWritten), Position: 1, K: 5, Score: 1, Weight: 1}
	nan := math.NaN()
	for _, o := range []Observation{
		{Model: "m", Item: "i", Persona: "p", Position: 0, K: 5},
		{Model: "m", Item: "i", Persona: "p", Position: 6, K: 5},
		{Model: "m", Item: "i", Persona: "p", Position: 1, K: 0},
		{Model: "m", Item: "i", Persona: "p", Position: 1, K: 5, Score: math.NaN()},
		{Model: "m", Item: "i", Persona: "p", Position: 1, K: 5, Weight: math.Inf(1)},
		{Model: "m", Item: "i", Persona: "p", Position: 1, K: 5, ExpectedWeight: &nan},
		{Model: "m", Item: "i", Persona: "p", Position: 2, K: 5, Answer: 5, First: 0},
		{Model: "m", Item: "i", Persona: "p", Position: 2, K: 5, Answer: 1, First: -1},
		{Model: "m", Item: "i", Persona: "p", Position: 1, K: 5, Answer: 2, First: 0}, // shown first, yet not the first option
		{Model: "m", Item: "i", Persona: "p", Position: 3, K: 5, Answer: 2, First: 2}, // the first option, yet shown third
	} {
		if err := a.Add(o); err == nil {
			t.Errorf("Add(%+v) accepted", o)
		}
	}
	if err := a.Add(good); err != nil {
		t.Fatal(err)
	}
	if rows := a.OrderBias(); len(rows) != 2 || rows[0].N != 1 {
		t.Errorf("rows %+v; want the one good cell counted once per row", rows)
	}
}
