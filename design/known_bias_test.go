package design

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// knownRespondent is the respondent of the known-truth tests: with probability b it answers the option shown
// first, otherwise it answers by meaning alone, option c (in the questionnaire's order) with probability q[c]
// whatever the order shown. Its items have len(q) options weighted 1…K; reversed[i] says item i is reverse-keyed.
type knownRespondent struct {
	b        float64
	q        []float64
	reversed []bool
	personas int
	seeds    int
	// mode is the items' order mode: as written, reversed, balanced (two cells) or shuffled; pin keeps those
	// options (questionnaire indices) at their written place.
	mode experiment.OrderMode
	pin  []int
}

// extremesRare is a content distribution whose extremes are less popular than its middle.
var extremesRare = []float64{0.05, 0.2, 0.5, 0.2, 0.05}

// observations draws the respondent's cells from seed.
func (kr knownRespondent) observations(seed uint64) []Observation {
	r := rand.New(rand.NewPCG(seed, 36))
	k := len(kr.q)
	var obs []Observation
	for p := range kr.personas {
		for it, rev := range kr.reversed {
			for s := range kr.seeds {
				var orders []experiment.OrderMode
				switch kr.mode {
				case experiment.OrderBalanced:
					orders = []experiment.OrderMode{experiment.OrderAsWritten, experiment.OrderReversed}
				default:
					orders = []experiment.OrderMode{kr.mode}
				}
				for _, order := range orders {
					shown := kr.shown(r, order) // shown[pos] = questionnaire index
					pos := 0
					if r.Float64() >= kr.b {
						u, c := r.Float64(), 0
						for c < k-1 && u >= kr.q[c] {
							u -= kr.q[c]
							c++
						}
						pos = slices.Index(shown, c)
					}
					c := shown[pos]
					score := float64(c + 1)
					if rev {
						score = float64(k - c)
					}
					obs = append(obs, Observation{Model: "m", Scale: "S", Item: fmt.Sprintf("i%d", it),
						Persona: fmt.Sprintf("p%03d", p), Seed: int64(s), Order: string(order), Position: pos + 1,
						K: k, Answer: c, First: shown[0], Score: score, Weight: float64(c + 1)})
				}
			}
		}
	}
	return obs
}

// shown is a cell's order of the options: shown[pos] is the questionnaire index of the option at pos.
func (kr knownRespondent) shown(r *rand.Rand, order experiment.OrderMode) []int {
	k := len(kr.q)
	shown := make([]int, k)
	var free []int
	for c := range shown {
		shown[c] = c
		if !slices.Contains(kr.pin, c) {
			free = append(free, c)
		}
	}
	moved := slices.Clone(free)
	switch order {
	case experiment.OrderReversed:
		slices.Reverse(moved)
	case experiment.OrderShuffled:
		r.Shuffle(len(moved), func(i, j int) { moved[i], moved[j] = moved[j], moved[i] })
	}
	for i, c := range free {
		shown[c] = moved[i]
	}
	return shown
}

// TestFirstEffectRecoversAKnownBias: a respondent with a known first-position bias b and a content preference for
// the middle options (the case where an excess over 1/K at position 1 is no bias at all). first_effect's interval
// covers b under balanced and shuffled orders, with and without a pinned last option; primacy_recency's covers it
// where it claims to (balanced and shuffled, nothing pinned). The cells are drawn from a fixed seed, so the test
// gives the same numbers every time; the coverage over many draws is the known-truth suite's.
func TestFirstEffectRecoversAKnownBias(t *testing.T) {
	for _, c := range []struct {
		mode experiment.OrderMode
		pin  []int
	}{{experiment.OrderBalanced, nil}, {experiment.OrderShuffled, nil}, {experiment.OrderBalanced, []int{4}},
		{experiment.OrderShuffled, []int{4}}} {
		for _, b := range []float64{0, 0.3} {
			kr := knownRespondent{b: b, q: extremesRare, reversed: []bool{false, true, false, true}, personas: 80,
				seeds: 3, mode: c.mode, pin: c.pin}
			rows := analyse(t, kr.observations(7), Bootstrap{Samples: 400, Seed: 1}).OrderBias()
			all := rows[len(rows)-1]
			what := fmt.Sprintf("%s, pin %v, b %v, %s line", c.mode, c.pin, b, all.Item)
			covers(t, what+": first_effect", all.FirstEffect, b)
			if c.pin == nil {
				covers(t, what+": primacy_recency", all.PrimacyRecency, b)
			}
		}
	}
}

// covers fails the test unless iv is defined and its interval covers want.
func covers(t *testing.T, what string, iv Interval, want float64) {
	t.Helper()
	if iv.Value == nil || iv.Lo == nil || iv.Hi == nil {
		t.Errorf("%s: undefined", what)
		return
	}
	t.Logf("%s: %.4f [%.4f, %.4f]", what, *iv.Value, *iv.Lo, *iv.Hi)
	if *iv.Lo > want || *iv.Hi < want {
		t.Errorf("%s: %.4f [%.4f, %.4f] does not cover %v", what, *iv.Value, *iv.Lo, *iv.Hi, want)
	}
}

// TestFirstEffectNotIdentified: with the options as written, or reversed only, each option is always or never
// first, so its share cannot be told from the position's: first_effect is empty, on every line, while the
// descriptive columns are there.
func TestFirstEffectNotIdentified(t *testing.T) {
	for _, mode := range []experiment.OrderMode{experiment.OrderAsWritten, experiment.OrderReversed} {
		kr := knownRespondent{b: 0.3, q: extremesRare, reversed: []bool{false, true}, personas: 20, seeds: 2, mode: mode}
		for _, r := range analyse(t, kr.observations(3), Bootstrap{Samples: 50, Seed: 1}).OrderBias() {
			if r.FirstEffect.Value != nil || r.FirstEffect.Lo != nil || r.FirstEffect.Hi != nil {
				t.Errorf("%s, %s line: first_effect %v; want empty (not identified)", mode, r.Item, r.FirstEffect)
			}
			if r.PrimacyRecency.Value == nil || len(r.PositionShares) != len(kr.q) {
				t.Errorf("%s, %s line: primacy_recency %v, shares %v; want both", mode, r.Item, r.PrimacyRecency, r.PositionShares)
			}
		}
	}
}

// TestAllLineShowsAUniformOrderEffect: half the items reverse-keyed, a uniform first-position bias b moves every
// item's answers toward the option shown first by b·(w_K − w_1) in option weight; the all line must show that
// shift, not let the reverse-keyed items cancel it.
func TestAllLineShowsAUniformOrderEffect(t *testing.T) {
	const b = 0.3
	kr := knownRespondent{b: b, q: extremesRare, reversed: []bool{false, true, false, true}, personas: 80, seeds: 3,
		mode: experiment.OrderBalanced}
	rows := analyse(t, kr.observations(11), Bootstrap{Samples: 400, Seed: 1}).OrderBias()
	all := rows[len(rows)-1]
	want := b * float64(len(kr.q)-1)
	if all.Item != AllItems {
		t.Fatalf("last line is %q; want %q", all.Item, AllItems)
	}
	covers(t, "all line weight_diff", all.WeightDiff, want)
	// Every item line moves the same way, reverse-keyed or not: the weights are the options', not the scores.
	for _, r := range rows[:len(rows)-1] {
		if r.WeightDiff.Value == nil || *r.WeightDiff.Value <= 0 {
			t.Errorf("item %s: weight_diff %v; want the shift toward the option shown first, > 0", r.Item, r.WeightDiff.Value)
		}
	}
}
