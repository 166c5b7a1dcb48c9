package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/silicolab/silico/experiment"
)

// Sampling modes of Config.Sampling.
const (
	// SamplingHash (the default) writes the option a hash of (model, seed, messages) picks: each request's
	// answer is independent of every other's, whatever their seeds.
	SamplingHash = experiment.SimSamplingHash
	// SamplingSeeded samples as llama.cpp's server does: the model's distribution over the options is a function
	// of (model, messages) alone, and the written option is drawn from it by inverse CDF with one uniform u that
	// is a function of the request's seed alone, so requests sent the same seed are the same draw (u) from their
	// own distributions. At temperature 0 the likeliest option is written.
	SamplingSeeded = experiment.SimSamplingSeeded
)

// seededSalt separates the stream of the uniforms of seeded sampling from the other streams of the simulator.
const seededSalt = 0x5eedda7a5eedda7a

// preferenceSalt makes the hash of (model, messages) that shapes the distribution under seeded sampling
// differ from answerHash of any seed.
const preferenceSalt = 0x9f2e5c1d3b7a6048

// seededDraw is what seeded sampling needs of one request: the hash of its model and messages (no seed), its
// seed and its temperature.
type seededDraw struct {
	pref        uint64
	seed        int64
	temperature float64
}

// uniform returns the uniform in (0, 1) of choice i of a request sent seed: the (i+1)-th of a stream seeded by
// the seed alone, as a sampler RNG seeded by the request's seed gives the same first draw to every request.
func seededUniform(seed int64, i int) float64 {
	r := rng{state: mix64(uint64(seed) ^ seededSalt)}
	u := r.uniform()
	for range i {
		u = r.uniform()
	}
	return u
}

// sampleOption returns the index of the option written for option masses p (positive, any sum) at temperature
// t and uniform u: greedy (the likeliest, the first of ties) at t = 0, otherwise the inverse CDF at u of the
// masses raised to 1/t and normalised, the options taken likeliest first (ties in their order), as llama.cpp's
// sampler orders its candidates before its draw. So a u below an answer's largest probability writes its
// likeliest option: requests that share u agree with their likeliest option all together or not at all, up to
// how their largest probabilities spread.
func sampleOption(p []float64, t, u float64) int {
	order := make([]int, len(p))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(p[b], p[a]) })
	best := order[0]
	if t <= 0 {
		return best
	}
	// Masses relative to the likeliest, so that a small temperature does not underflow them all.
	q := make([]float64, len(p))
	var sum float64
	for j, v := range p {
		q[j] = math.Pow(v/p[best], 1/t)
		sum += q[j]
	}
	acc := 0.0
	for _, j := range order {
		acc += q[j] / sum
		if u < acc {
			return j
		}
	}
	return order[len(order)-1] // u within rounding of 1
}

// parseTemperature reads a request's temperature for seeded sampling: absent or null is 1 (OpenAI's default),
// otherwise a number from 0 to 2.
func parseTemperature(raw json.RawMessage) (float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 1, nil
	}
	var t float64
	if err := json.Unmarshal(raw, &t); err != nil || t < 0 || t > 2 {
		return 0, fmt.Errorf("invalid 'temperature': %s; want a number from 0 to 2", raw)
	}
	return t, nil
}
