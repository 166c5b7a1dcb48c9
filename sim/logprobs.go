package sim

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// The simulator's log probabilities. They are made up, but shaped like an instruction-tuned model's: at the
// position of an answer's label the mass is spread over the options' labels in several spellings ("3", " 3",
// "3.", "c"/"C") and a little over unrelated tokens ("I", "**", "\n"), with some mass left to the rest of the
// vocabulary, so the listed alternatives never cover it all; at every other position the generated token is
// all but certain. Everything is drawn from a stream seeded with the answer's hash (model, seed, messages), so a
// request always gets the same numbers.

// MaxTopLogprobs is the largest top_logprobs a request may ask for, as OpenAI allows.
const MaxTopLogprobs = 20

// Shape of the label position's distribution.
const (
	// disagreeRate is the share of requests whose likeliest label is not the one written: instruction-tuned
	// models' first token and their written answer often disagree.
	disagreeRate = 1.0 / 6
	// labelSpread is the standard deviation of the options' logits before the written one is lifted.
	labelSpread = 1.2
)

// fillerTokens are the unrelated tokens that take the rest of the listed mass at every position. There are more
// of them than MaxTopLogprobs, so any position lists as many alternatives as asked for.
var fillerTokens = [...]string{"I", " I", "The", " the", "As", "My", "It", " It", "Based", "**", "\n", "\n\n",
	" ", ".", ",", ":", "Answer", " answer", "Option", " option", "Sure", "Well", "Honestly", "In", " a", " to",
	" of", "-", "\"", "{", "This", "That"}

// rng is SplitMix64: a tiny deterministic stream of uniforms.
type rng struct{ state uint64 }

// uniform returns a number in (0, 1).
func (r *rng) uniform() float64 {
	r.state += 0x9e3779b97f4a7c15
	return (float64(mix64(r.state)>>11) + 0.5) / (1 << 53)
}

// normal returns a standard normal number (Box–Muller, one of the pair).
func (r *rng) normal() float64 {
	return math.Sqrt(-2*math.Log(r.uniform())) * math.Cos(2*math.Pi*r.uniform())
}

// candidate is a token at one position and its probability.
type candidate struct {
	token string
	p     float64
}

// labelVariants returns the spellings of a label a model may start its answer with, the label itself first:
// "3", " 3", "3."; for a label with letters, also the other case ("c"/"C", "agree"/"Agree") with and without the
// space.
func labelVariants(label string) []string {
	out := []string{label, " " + label, label + "."}
	other := strings.ToLower(label)
	if other == label {
		other = strings.ToUpper(label[:1]) + label[1:]
	}
	if other != label {
		out = append(out, other, " "+other)
	}
	return out
}

// labelDistribution returns the candidates at the label position, likeliest first, for labels of which the
// answer writes chosen. The chosen label (itself, not a variant) is the likeliest token, except for about
// disagreeRate of the requests, where another option's label is and the chosen one is second. Probabilities are
// positive and sum to less than 1.
//
// Why the chosen label is first or second: a label itself takes at least 0.7 of its option's mass, so no variant
// (at most 0.3 of its option's) outranks the label of an option at least as likely; in a disagreement the other
// option is at most e^0.55 ≈ 1.73 times as likely as the chosen one, so its variants stay below 1.73 × 0.3 ≈ 0.52
// of the chosen option's mass, under the chosen label's 0.7; and filler tokens stay below half the likeliest label.
//
// It also returns each option's share of the labels' mass (its label and variants, in the order of labels),
// summing to 1: the distribution seeded sampling draws the written option from.
func labelDistribution(r *rng, labels []string, chosen int) ([]candidate, []float64) {
	k := len(labels)
	z := make([]float64, k)
	for j := range z {
		z[j] = labelSpread * r.normal()
	}
	maxOther := func(skip ...int) float64 {
		m := math.Inf(-1)
		for j, v := range z {
			if !slices.Contains(skip, j) {
				m = max(m, v)
			}
		}
		if math.IsInf(m, -1) {
			return 0
		}
		return m
	}
	if k >= 2 && r.uniform() < disagreeRate {
		d := (chosen + 1 + int(r.uniform()*float64(k-1))) % k
		z[chosen] = maxOther(chosen, d) + 0.1 + 0.5*r.uniform()
		z[d] = z[chosen] + 0.05 + 0.5*r.uniform()
	} else {
		z[chosen] = maxOther(chosen) + 0.5 + 2.5*r.uniform()
	}
	top := slices.Max(z)
	var sum float64
	for j := range z {
		z[j] = math.Exp(z[j] - top)
		sum += z[j]
	}

	filler := 0.01 + 0.1*r.uniform()     // unrelated tokens
	unlisted := 0.002 + 0.02*r.uniform() // the rest of the vocabulary
	labelMass := 1 - filler - unlisted
	primary := 0.7 + 0.25*r.uniform() // the label itself; its variants share the rest
	var out []candidate
	seen := map[string]int{}
	add := func(tok string, p float64) {
		if i, ok := seen[tok]; ok { // two labels spelled alike: one token, both masses
			out[i].p += p
			return
		}
		seen[tok] = len(out)
		out = append(out, candidate{tok, p})
	}
	shares := make([]float64, k)
	for j, l := range labels {
		shares[j] = z[j] / sum
		pj := labelMass * z[j] / sum // not labelMass * shares[j]: the rounding of every answer before shares
		vars := labelVariants(l)
		add(vars[0], pj*primary)
		w := make([]float64, len(vars)-1)
		var ws float64
		for i := range w {
			w[i] = 0.2 + r.uniform()
			ws += w[i]
		}
		for i, v := range vars[1:] {
			add(v, pj*(1-primary)*w[i]/ws)
		}
	}
	// The likeliest filler token stays below half the likeliest label, so the argmax is always a label.
	best := slices.MaxFunc(out, func(a, b candidate) int { return cmp.Compare(a.p, b.p) }).p
	appendFiller(r, &out, seen, filler, best/2)
	sortCandidates(out)
	return out, shares
}

// tokenDistribution returns the candidates at an ordinary position, likeliest first: the generated token with a
// probability between 0.5 and 0.9997, and filler tokens sharing most of the rest.
func tokenDistribution(r *rng, token string) []candidate {
	rest := 0.5 * math.Pow(10, -3.3*r.uniform())
	out := []candidate{{token, 1 - rest}}
	seen := map[string]int{token: 0}
	appendFiller(r, &out, seen, 0.9*rest, 1-rest)
	sortCandidates(out)
	return out
}

// appendFiller shares mass among the filler tokens not in seen, decreasing geometrically with jitter, scaled so
// that none exceeds ceiling.
func appendFiller(r *rng, out *[]candidate, seen map[string]int, mass, ceiling float64) {
	start := len(*out)
	var sum float64
	decay := 1.0
	for _, tok := range fillerTokens {
		if _, ok := seen[tok]; ok {
			continue
		}
		w := decay * (0.5 + r.uniform())
		decay *= 0.7
		*out = append(*out, candidate{tok, w})
		sum += w
	}
	scale := mass / sum
	var top float64
	for _, c := range (*out)[start:] {
		top = max(top, c.p*scale)
	}
	if top > ceiling {
		scale *= ceiling / top
	}
	for i := start; i < len(*out); i++ {
		(*out)[i].p *= scale
	}
}

// sortCandidates orders candidates by decreasing probability; ties keep their order, which is deterministic.
func sortCandidates(c []candidate) {
	slices.SortStableFunc(c, func(a, b candidate) int { return cmp.Compare(b.p, a.p) })
}

// logprobsOf returns the logprobs of a choice whose tokens are pieces, with top alternatives at each position.
// labelAt is the index of the label's token in pieces (-1: none), labels and chosen as in reply. h is the answer's
// hash; each position draws from its own stream, so cutting a reply short leaves its first tokens' numbers alone.
// label, when not nil, is the label position's distribution (seeded sampling builds it before the option is
// drawn, its position bias applied), used instead of one drawn from h. Otherwise a position bias moves its
// strength's share of the label position's mass onto the biased option's label.
func logprobsOf(h uint64, pieces []string, labelAt int, labels []string, chosen, top int, label []candidate, bias PositionBias) *choiceLogprobs {
	lp := &choiceLogprobs{Content: make([]tokenLogprob, len(pieces))}
	for i, tok := range pieces {
		var cands []candidate
		switch {
		case i == labelAt && label != nil:
			cands = label
		case i == labelAt:
			cands = labelCandidates(h, i, tok, labels, chosen, bias)
		default:
			r := positionStream(h, i, tok)
			cands = tokenDistribution(&r, tok)
		}
		e := tokenLogprob{Token: tok, Bytes: bytesOf(tok), TopLogprobs: make([]topLogprob, 0, top)}
		for _, c := range cands {
			if c.token == tok {
				e.Logprob = math.Log(c.p)
			}
		}
		for _, c := range cands[:min(top, len(cands))] {
			e.TopLogprobs = append(e.TopLogprobs, topLogprob{Token: c.token, Logprob: math.Log(c.p), Bytes: bytesOf(c.token)})
		}
		lp.Content[i] = e
	}
	return lp
}

// positionStream is the stream position i of an answer of hash h draws from, tok being the token there.
func positionStream(h uint64, i int, tok string) rng {
	return rng{state: mix64(fnvString(fnvUint64(h, uint64(i)), tok))}
}

// labelCandidates are the candidates at the label position i (token tok) of an answer of hash h that is not
// seeded-sampled: labelDistribution drawn from the position's stream, then a position bias applied.
func labelCandidates(h uint64, i int, tok string, labels []string, chosen int, bias PositionBias) []candidate {
	r := positionStream(h, i, tok)
	cands, _ := labelDistribution(&r, labels, chosen)
	if bias.Strength > 0 && len(labels) >= 2 {
		cands = biased(cands, labels[bias.index(len(labels))], bias.Strength)
	}
	return cands
}

// labelShares is the server's own distribution over labels at a label position whose candidates are cands:
// each label's mass, its spellings (labelVariants) included, over the mass of all of them. It is what an
// exact reader of the position gets before top_logprobs cuts the list. A spelling two labels share counts for
// the first.
func labelShares(cands []candidate, labels []string) []float64 {
	owner := make(map[string]int, 5*len(labels))
	for j, l := range labels {
		for _, v := range labelVariants(l) {
			if _, ok := owner[v]; !ok {
				owner[v] = j
			}
		}
	}
	out := make([]float64, len(labels))
	var sum float64
	for _, c := range cands {
		if j, ok := owner[c.token]; ok {
			out[j] += c.p
			sum += c.p
		}
	}
	for j := range out {
		out[j] /= sum
	}
	return out
}

// biased is the mixture (1 − strength) × cands + strength × all mass on label, likeliest first.
func biased(cands []candidate, label string, strength float64) []candidate {
	out := make([]candidate, len(cands), len(cands)+1)
	found := false
	for i, c := range cands {
		out[i] = candidate{c.token, (1 - strength) * c.p}
		if c.token == label {
			out[i].p += strength
			found = true
		}
	}
	if !found {
		out = append(out, candidate{label, strength})
	}
	sortCandidates(out)
	return out
}

// bytesOf is s's bytes as the numbers OpenAI's bytes fields list.
func bytesOf(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}
