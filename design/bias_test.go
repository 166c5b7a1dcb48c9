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
					c := pos - 1 // canonical index of the answer
					if order == string(experiment.OrderReversed) {
						c = k - pos
					}
					obs = append(obs, Observation{Model: "sim", Scale: "S", Item: fmt.Sprintf("i%d", it),
						Persona: fmt.Sprintf("p%03d", p), Seed: int64(s), Order: order, Position: pos, K: k,
						Score: float64(c + 1)})
				}
			}
		}
	}
	return obs
}

// TestFirstBiasRecoversInjectedBias injects a known bias toward the first shown position and checks that
// first_bias estimates it and that its bootstrap interval covers it, while share(position 1) itself does not.
func TestFirstBiasRecoversInjectedBias(t *testing.T) {
	for _, tc := range []struct {
		beta float64
		k    int
	}{{0, 5}, {0.2, 5}, {0.5, 4}, {0.3, 7}} {
		a := analyse(t, simulate(uint64(100*tc.beta)+uint64(tc.k), tc.beta, 60, tc.k), Bootstrap{Samples: 1000, Seed: 1})
		rows := a.OrderBias()
		all := rows[len(rows)-1]
		if all.Item != AllItems {
			t.Fatalf("last row is item %q; want %q", all.Item, AllItems)
		}
		fb := all.FirstBias
		if fb.Value == nil || fb.Lo == nil || fb.Hi == nil {
			t.Fatalf("β %v: first_bias %v undefined", tc.beta, fb)
		}
		if *fb.Lo > tc.beta || *fb.Hi < tc.beta {
			t.Errorf("β %v, K %d: first_bias %.4f, interval [%.4f, %.4f] misses it", tc.beta, tc.k, *fb.Value, *fb.Lo, *fb.Hi)
		}
		if tc.beta == 0 {
			continue
		}
		// The raw share at position 1 overstates β by (1 − β)/K: far outside the interval.
		if s := all.PositionShares[0]; s >= *fb.Lo && s <= *fb.Hi {
			t.Errorf("β %v: share at position 1 %.4f inside first_bias's interval; the estimator does not correct for chance", tc.beta, s)
		}
	}
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
			func(r OrderBiasRow) Interval { return r.Diff },
			func(r OrderBiasRow) Interval { return r.FirstBias },
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
		if r.Diff.Value == nil || r.Diff.Lo != nil || r.Diff.Hi != nil || r.FirstBias.Lo != nil {
			t.Errorf("%s/%s: diff %v with samples 0; want a value and no interval", r.Model, r.Item, r.Diff)
		}
	}
}

// TestAddRefusesUnusableObservations: a shown position outside 1..K or a score that is not finite is an error
// and is not counted.
func TestAddRefusesUnusableObservations(t *testing.T) {
	a := New(Bootstrap{})
	good := Observation{Model: "m", Scale: "S", Item: "i", Persona: "p", Order: string(experiment.OrderAsWritten), Position: 1, K: 5, Score: 1}
	for _, o := range []Observation{
		{Model: "m", Item: "i", Persona: "p", Position: 0, K: 5},
		{Model: "m", Item: "i", Persona: "p", Position: 6, K: 5},
		{Model: "m", Item: "i", Persona: "p", Position: 1, K: 0},
		{Model: "m", Item: "i", Persona: "p", Position: 1, K: 5, Score: math.NaN()},
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
