package sim

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPositionBiasIsRecoverable: over many requests the option at the biased place is answered with probability
// β + (1 − β)/K, so β is recovered from the answers; without a bias every place gets about 1/K.
func TestPositionBiasIsRecoverable(t *testing.T) {
	msgs := []chatMessage{{Role: "user", Content: "Q?\n1. One\n2. Two\n3. Three\n4. Four\n5. Five\nAnswer."}}
	const n, k = 20000, 5
	for _, tc := range []struct {
		bias  PositionBias
		place int
	}{{PositionBias{}, 0}, {PositionBias{Position: BiasFirst, Strength: 0.3}, 0}, {PositionBias{Position: BiasLast, Strength: 0.6}, 4}} {
		hits := 0
		for i := range n {
			h := mix64(uint64(i) * 0x9e3779b97f4a7c15)
			r := compose(h, msgs, responseFormat{}, -1, tc.bias, nil)
			if r.chosen == tc.place {
				hits++
			}
		}
		share := float64(hits) / n
		got := (share - 1.0/k) / (1 - 1.0/k) // the inverse of share = β + (1 − β)/K
		t.Logf("%+v: share %.4f, β recovered %.4f", tc.bias, share, got)
		if math.Abs(got-tc.bias.Strength) > 0.02 {
			t.Errorf("%+v: place %d answered %.3f of the time, β recovered %.3f; want %.2f ± 0.02", tc.bias, tc.place, share, got, tc.bias.Strength)
		}
	}
}

// TestPositionBiasMovesTheLabelMass: the label position's distribution is (1 − β) × the unbiased one + β on the
// biased option's label, request by request.
func TestPositionBiasMovesTheLabelMass(t *testing.T) {
	labels := []string{"1", "2", "3", "4", "5"}
	bias := PositionBias{Position: BiasLast, Strength: 0.4}
	for i := range 50 {
		h := uint64(i)*7919 + 1
		plain := logprobsOf(h, []string{"3", ". Three"}, 0, labels, 2, 20, nil, PositionBias{})
		moved := logprobsOf(h, []string{"3", ". Three"}, 0, labels, 2, 20, nil, bias)
		p := func(lp *choiceLogprobs, tok string) float64 {
			for _, c := range lp.Content[0].TopLogprobs {
				if c.Token == tok {
					return math.Exp(c.Logprob)
				}
			}
			return 0
		}
		for _, l := range labels {
			want := (1 - bias.Strength) * p(plain, l)
			if l == "5" {
				want += bias.Strength
			}
			if got := p(moved, l); math.Abs(got-want) > 1e-12 {
				t.Fatalf("request %d label %s: p %.6f, want %.6f", i, l, got, want)
			}
		}
	}
	if err := (Config{PositionBias: PositionBias{Position: "middle", Strength: 0.2}}).validate(); err == nil {
		t.Fatal("position middle is accepted")
	} else if !strings.Contains(err.Error(), "position_bias") || !strings.Contains(err.Error(), "first or last") {
		t.Fatalf("error %q does not say what is accepted", err)
	}
}

// TestPreferencesAnswerByMeaning: with preferences the options are answered in the shares of their weights by
// text, whichever order they are listed in; a position bias b on top answers the option listed first with
// probability b + (1 − b) × its share. The draw is a function of the request: the same request, the same answer.
func TestPreferencesAnswerByMeaning(t *testing.T) {
	prefs := Preferences{"Disagree": 1, "Slightly disagree": 4, "Neutral": 10, "Slightly agree": 4, "Agree": 1}
	share := map[string]float64{"Disagree": 0.05, "Slightly disagree": 0.2, "Neutral": 0.5, "Slightly agree": 0.2, "Agree": 0.05}
	written := []string{"Disagree", "Slightly disagree", "Neutral", "Slightly agree", "Agree"}
	list := func(texts []string) []chatMessage {
		var b strings.Builder
		b.WriteString("How much do you agree?\n")
		for i, s := range texts {
			b.WriteString(strconv.Itoa(i+1) + ". " + s + "\n")
		}
		return []chatMessage{{Role: "user", Content: b.String() + "Answer."}}
	}
	reversed := slices.Clone(written)
	slices.Reverse(reversed)
	const n = 20000
	for _, tc := range []struct {
		texts []string
		bias  PositionBias
	}{{written, PositionBias{}}, {reversed, PositionBias{}}, {written, PositionBias{Position: BiasFirst, Strength: 0.3}},
		{reversed, PositionBias{Position: BiasFirst, Strength: 0.3}}} {
		msgs := list(tc.texts)
		counts := map[string]int{}
		for i := range n {
			h := mix64(uint64(i) * 0x9e3779b97f4a7c15)
			r := compose(h, msgs, responseFormat{}, -1, tc.bias, prefs)
			if again := compose(h, msgs, responseFormat{}, -1, tc.bias, prefs); again.text != r.text {
				t.Fatalf("request %d answered %q, then %q", i, r.text, again.text)
			}
			counts[optionText(r.text)]++
		}
		for k, text := range tc.texts {
			want := (1 - tc.bias.Strength) * share[text]
			if k == 0 {
				want += tc.bias.Strength
			}
			got := float64(counts[text]) / n
			if math.Abs(got-want) > 0.015 {
				t.Errorf("%v, listed %d: %q answered %.4f of the time; want %.3f", tc.bias, k+1, text, got, want)
			}
		}
	}
	// A prompt listing none of the texts is answered as without preferences.
	other := []chatMessage{{Role: "user", Content: "Pick one:\n1. Red\n2. Blue\n3. Green\nAnswer."}}
	for i := range 200 {
		h := mix64(uint64(i) + 17)
		if a, b := compose(h, other, responseFormat{}, -1, PositionBias{}, prefs), compose(h, other, responseFormat{}, -1, PositionBias{}, nil); a.text != b.text {
			t.Fatalf("request %d: %q with preferences for other texts, %q without", i, a.text, b.text)
		}
	}
	if err := (Config{Preferences: Preferences{"Neutral": -1}}).validate(); err == nil || !strings.Contains(err.Error(), "preferences") {
		t.Errorf("a negative preference: error %v; want one naming preferences", err)
	}
}
