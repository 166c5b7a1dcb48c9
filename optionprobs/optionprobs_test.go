package optionprobs

import (
	"math"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
)

func likert() experiment.OptionSet {
	return experiment.OptionSet{Options: []experiment.Option{
		{ID: "1", Text: "1. Disagree", Weight: 1}, {ID: "2", Text: "2. Neutral", Weight: 2}, {ID: "3", Text: "3. Agree", Weight: 3},
	}}
}

func tok(t string, lp float64, top ...llm.TopLogprob) llm.TokenLogprob {
	return llm.TokenLogprob{Token: t, Logprob: lp, Top: top}
}

func alt(t string, p float64) llm.TopLogprob { return llm.TopLogprob{Token: t, Logprob: math.Log(p)} }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// The spellings of one label are summed, mass on other tokens is the missing coverage, and the probabilities are
// renormalised over the options.
func TestFirstTokenVariantsAreSummed(t *testing.T) {
	toks := []llm.TokenLogprob{
		tok("3", math.Log(0.5), alt("3", 0.5), alt(" 3", 0.1), alt("3.", 0.1), alt("2", 0.1), alt("The", 0.1), alt("c", 0.05)),
		tok(".", -0.1),
	}
	d, ok := FromLogprobs(toks, likert(), "")
	if !ok {
		t.Fatal("no distribution")
	}
	// "c" is the third option by its letter: 0.5+0.1+0.1+0.05 on "3", 0.1 on "2"; "The" is not a label.
	if !near(d.Coverage, 0.85) {
		t.Errorf("coverage %v, want 0.85", d.Coverage)
	}
	want := []float64{0, 0.1 / 0.85, 0.75 / 0.85}
	for k := range want {
		if !near(d.Probs[k], want[k]) {
			t.Errorf("p[%d] = %v, want %v", k, d.Probs[k], want[k])
		}
	}
	if d.Argmax() != 2 {
		t.Errorf("argmax %d, want 2", d.Argmax())
	}
	e, ok := d.Expected(func(k int) (float64, bool) { return float64(k + 1), true })
	if !ok || !near(e, (2*0.1+3*0.75)/0.85) {
		t.Errorf("expected score %v", e)
	}
}

// Under a JSON schema the label follows {"answer":"; tokens may split or merge the prefix and the label.
func TestLabelAfterThePrefix(t *testing.T) {
	for name, toks := range map[string][]llm.TokenLogprob{
		"split":  {tok(`{"`, -0.01), tok("answer", -0.01), tok(`":"`, -0.01), tok("2", math.Log(0.6), alt("2", 0.6), alt("1", 0.3), alt(" ", 0.05)), tok(`"}`, -0.01)},
		"merged": {tok(`{"answer": "`, -0.01), tok(`2"`, math.Log(0.6), alt(`2"`, 0.6), alt(`1"`, 0.3), alt(`3`, 0.0)), tok("}", -0.01)},
		"spaces": {tok("{", -0.01), tok(` "answer"`, -0.01), tok(`: "`, -0.01), tok("2", math.Log(0.6), alt("2", 0.6), alt("1", 0.3))},
		// llama.cpp's grammar lets a model fence its JSON; the fence is in the logprobs, not in the message.
		"fenced": {tok(" ", -0.01), tok("\n", -0.01), tok(" ```", -0.01), tok("js", -0.01), tok("on", -0.01), tok("{", -0.01), tok(` "answer": "`, -0.01),
			tok("2", math.Log(0.6), alt("2", 0.6), alt("1", 0.3))},
	} {
		d, ok := FromLogprobs(toks, likert(), experiment.JSONAnswerPrefix)
		if !ok {
			t.Errorf("%s: no distribution", name)
			continue
		}
		if !near(d.Coverage, 0.9) || !near(d.Probs[1], 0.6/0.9) || !near(d.Probs[0], 0.3/0.9) {
			t.Errorf("%s: %+v", name, d)
		}
	}
	// A reply that does not start with the prefix has no label position.
	if _, ok := FromLogprobs([]llm.TokenLogprob{tok("2", -0.1, alt("2", 0.9))}, likert(), experiment.JSONAnswerPrefix); ok {
		t.Error("a reply without the prefix gave a distribution")
	}
	// Nor does one that ends inside it.
	if _, ok := FromLogprobs([]llm.TokenLogprob{tok(`{"answer`, -0.1)}, likert(), experiment.JSONAnswerPrefix); ok {
		t.Error("a reply cut inside the prefix gave a distribution")
	}
}

// A first token that spells no option gives no distribution; leading white space is skipped; the generated token
// counts even when the server did not list it among the alternatives.
func TestNoLabelAndUnlistedToken(t *testing.T) {
	if _, ok := FromLogprobs([]llm.TokenLogprob{tok("I", -0.1, alt("I", 0.9), alt("As", 0.05))}, likert(), ""); ok {
		t.Error("a first token that is no label gave a distribution")
	}
	d, ok := FromLogprobs([]llm.TokenLogprob{tok("\n", -0.1), tok("1", math.Log(0.2), alt("2", 0.7))}, likert(), "")
	if !ok || !near(d.Coverage, 0.9) || !near(d.Probs[0], 0.2/0.9) {
		t.Errorf("got %+v, %v", d, ok)
	}
	// A spelling two options share belongs to neither.
	set := experiment.OptionSet{Options: []experiment.Option{{ID: "a", Text: "yes"}, {ID: "b", Text: "A"}}}
	l := experiment.Labels(set)
	if _, shared := l["a"]; shared || l["yes"] != 0 || l["b"] != 1 {
		t.Errorf("labels %v: want \"a\" (option a's id, option b's text) left out, yes → 0, b → 1", l)
	}
}

func TestFromSamples(t *testing.T) {
	d, ok := FromSamples([]string{"3", "3", "1", ""}, likert())
	if !ok || !near(d.Coverage, 0.75) || !near(d.Probs[2], 2.0/3) || !near(d.Probs[0], 1.0/3) || d.Probs[1] != 0 {
		t.Errorf("got %+v, %v", d, ok)
	}
	if _, ok := FromSamples([]string{"", ""}, likert()); ok {
		t.Error("no chosen option gave a distribution")
	}
}
