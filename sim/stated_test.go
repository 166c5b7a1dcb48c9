package sim

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// TestStatedProbabilities holds the simulator's answer to a verbalized schema: a JSON object with a non-negative
// number for every listed id and no other key, the same for the same request, its most likely id the option the
// plain answer of the same request writes, and sums that are sometimes 1 and sometimes not.
func TestStatedProbabilities(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var set experiment.OptionSet
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		set.Options = append(set.Options, experiment.Option{ID: id})
	}
	var format map[string]any
	if err := json.Unmarshal(experiment.VerbalizedSchema(set), &format); err != nil {
		t.Fatal(err)
	}
	var summingTo1, not1 int
	for seed := 1; seed <= 40; seed++ {
		r := chatOK(t, s, chatBody("sim-chat", seed, ipipPrompt, map[string]any{"response_format": format}))
		text := *r.Choices[0].Message.Content
		var got map[string]float64
		if err := json.Unmarshal([]byte(text), &got); err != nil || len(got) != 5 {
			t.Fatalf("seed %d: %q is not an object of 5 numbers: %v", seed, text, err)
		}
		best, sum := "", 0.0
		for _, o := range set.Options {
			p, ok := got[o.ID]
			if !ok || p < 0 {
				t.Fatalf("seed %d: %q: option %s missing or negative", seed, text, o.ID)
			}
			if best == "" || p > got[best] {
				best = o.ID
			}
			sum += p
		}
		plain := *chatOK(t, s, chatBody("sim-chat", seed, ipipPrompt, nil)).Choices[0].Message.Content
		if !strings.HasPrefix(plain, best+".") {
			t.Errorf("seed %d: stated %q, most likely %s; the plain answer is %q", seed, text, best, plain)
		}
		if again := *chatOK(t, s, chatBody("sim-chat", seed, ipipPrompt, map[string]any{"response_format": format})).Choices[0].Message.Content; again != text {
			t.Errorf("seed %d: %q, then %q", seed, text, again)
		}
		if math.Abs(sum-1) < 0.01 {
			summingTo1++
		} else {
			not1++
		}
	}
	if summingTo1 == 0 || not1 == 0 {
		t.Errorf("%d answers summed to 1, %d did not; want some of each", summingTo1, not1)
	}
}
