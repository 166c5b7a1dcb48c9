// Package optionprobs turns what a model generated into a probability for each answer option of a questionnaire item:
// from the logprobs of the token where the option label is generated, or from the answers of several seeds.
//
// The label token is the first generated token that goes past a fixed prefix (none: the first token with text;
// a json_schema answer: `{"answer":"`), whitespace and case aside. Every alternative the server listed at that
// position is read as the text generated so far plus the alternative: what follows the prefix, stripped of
// quotes and punctuation, is looked up among the label spellings of the options as the cell showed them
// (experiment.Labels of experiment.ShownOptions.Set, whose ids are the labels shown). The probability of
// an option is the sum over its spellings ("3", " 3", "3."); the mass on spellings of any option is the coverage,
// and the option probabilities are renormalised over it.
package optionprobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
)

// Dist is a distribution over the options of one item, in the order of its option set.
type Dist struct {
	// Probs sum to 1 (to rounding).
	Probs []float64
	// Coverage is the probability the model put on the labels of valid options, in (0, 1].
	Coverage float64
}

// FromLogprobs reads the distribution over set's options from the generated tokens toks, the label found after
// prefix. ok is false when no label token was found or no alternative there spells an option (coverage 0): the
// cell then has no distribution, only its written answer.
func FromLogprobs(toks []llm.TokenLogprob, set experiment.OptionSet, prefix string) (d Dist, ok bool) {
	wants := []string{squeeze(prefix)}
	if strings.HasPrefix(wants[0], "{") {
		// JSON may come in a Markdown code fence, which llama.cpp's grammars allow and it strips from the
		// message but not from the logprobs.
		wants = append(wants, "```json"+wants[0], "```"+wants[0])
	}
	labels := experiment.Labels(set)
	var before strings.Builder
	for _, t := range toks {
		so := before.String()
		cur := squeeze(so + t.Token)
		within := false
		for _, want := range wants {
			if len(cur) > len(want) && strings.HasPrefix(cur, want) {
				return read(t, so, want, labels, len(set.Options))
			}
			within = within || strings.HasPrefix(want, cur)
		}
		if !within {
			return Dist{}, false // the reply does not start with the prefix: it has no label position
		}
		before.WriteString(t.Token)
	}
	return Dist{}, false
}

// read sums the alternatives at the label position t (the generated token among them, whether listed or not).
func read(t llm.TokenLogprob, before, want string, labels map[string]int, n int) (Dist, bool) {
	mass := make([]float64, n)
	seen := make(map[string]bool, len(t.Top)+1)
	add := func(tok string, lp float64) {
		if seen[tok] {
			return
		}
		seen[tok] = true
		text := squeeze(before + tok)
		if !strings.HasPrefix(text, want) {
			return
		}
		if k, ok := labels[label(text[len(want):])]; ok {
			mass[k] += math.Exp(lp)
		}
	}
	for _, a := range t.Top {
		add(a.Token, a.Logprob)
	}
	add(t.Token, t.Logprob)
	var cov float64
	for _, m := range mass {
		cov += m
	}
	if cov <= 0 {
		return Dist{}, false
	}
	for k := range mass {
		mass[k] /= cov
	}
	return Dist{Probs: mass, Coverage: min(cov, 1)}, true
}

// squeeze lower-cases s and removes its white space: the prefix and the tokens are compared so.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// label is the label a token's text after the prefix spells: quotes, brackets and trailing punctuation removed.
func label(s string) string {
	s = strings.TrimLeft(s, `"'([`)
	return strings.TrimRight(s, `"'.,:;)]}`)
}

// FromSamples is the distribution of the options chosen (ids, "" for none) over set: each option's share of the
// answers that chose one. Coverage is the share of answers that chose an option; ok is false when none did.
func FromSamples(chosen []string, set experiment.OptionSet) (Dist, bool) {
	mass := make([]float64, len(set.Options))
	var hits int
	for _, id := range chosen {
		for k, o := range set.Options {
			if o.ID == id {
				mass[k]++
				hits++
				break
			}
		}
	}
	if hits == 0 {
		return Dist{}, false
	}
	for k := range mass {
		mass[k] /= float64(hits)
	}
	return Dist{Probs: mass, Coverage: float64(hits) / float64(len(chosen))}, true
}

// Argmax is the index of the most likely option, the first of equals; -1 for an empty distribution.
func (d Dist) Argmax() int {
	best := -1
	for k, p := range d.Probs {
		if best < 0 || p > d.Probs[best] {
			best = k
		}
	}
	return best
}

// Expected is Σ p·score over the options that score (score reports whether option k has one, and its score with
// reversed items reversed), renormalised over those options; ok is false when none has mass.
func (d Dist) Expected(score func(k int) (float64, bool)) (float64, bool) {
	var sum, mass float64
	for k, p := range d.Probs {
		if s, ok := score(k); ok {
			sum += p * s
			mass += p
		}
	}
	if mass <= 0 {
		return 0, false
	}
	return sum / mass, true
}

// FromStated reads a verbalized answer: text is a JSON object (whitespace and a Markdown code fence aside) with
// a number for every option id of set (experiment.VerbalizedSchema). Probs are those numbers in set's order
// divided by their sum, and sum is the raw sum before that; Coverage is 1 (the stated numbers are all on
// options). Keys that are no option id are ignored. err says why the answer has no distribution: not a JSON
// object, an option without a number, a number that is negative or not finite, or a zero sum.
func FromStated(text string, set experiment.OptionSet) (d Dist, sum float64, err error) {
	s := strings.TrimSpace(text)
	if t, ok := strings.CutPrefix(s, "```"); ok {
		t = strings.TrimPrefix(t, "json")
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), "```"))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil || obj == nil {
		return Dist{}, 0, errors.New("the answer is not a JSON object of probabilities")
	}
	probs := make([]float64, len(set.Options))
	var missing []string
	for k, o := range set.Options {
		raw, ok := obj[o.ID]
		if !ok {
			missing = append(missing, o.ID)
			continue
		}
		var n json.Number
		// A json.Number also takes a quoted number ("0.5") and null (as ""), which the schema's type number
		// does not.
		if err := json.Unmarshal(raw, &n); err != nil || raw[0] == '"' || n == "" {
			return Dist{}, 0, fmt.Errorf("option %s: %s is not a number", o.ID, raw)
		}
		// JSON has no NaN or infinity, but a grammar-constrained model can write a number beyond float64
		// (1E3333): ParseFloat says so, and the check below keeps the invariant explicit.
		v, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return Dist{}, 0, fmt.Errorf("option %s: %.40s is out of range", o.ID, n)
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return Dist{}, 0, fmt.Errorf("option %s: probability %s is negative or not finite", o.ID, raw)
		}
		probs[k] = v
		sum += v
	}
	if len(missing) > 0 {
		return Dist{}, 0, fmt.Errorf("no probability for option %s", strings.Join(missing, ", "))
	}
	if sum <= 0 || math.IsInf(sum, 0) {
		return Dist{}, sum, fmt.Errorf("the probabilities sum to %g; want a positive sum", sum)
	}
	for k := range probs {
		probs[k] /= sum
	}
	return Dist{Probs: probs, Coverage: 1}, sum, nil
}
