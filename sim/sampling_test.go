package sim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestSampleOption: greedy at temperature 0; otherwise the inverse CDF with the options likeliest first, of the
// masses raised to 1/T.
func TestSampleOption(t *testing.T) {
	p := []float64{0.2, 0.5, 0.3}
	for _, c := range []struct {
		t, u float64
		want int
	}{
		{0, 0.99, 1},
		{1, 0.01, 1}, {1, 0.49, 1}, {1, 0.51, 2}, {1, 0.79, 2}, {1, 0.81, 0}, {1, 0.999, 0},
		// T = 0.5: masses squared, 0.04, 0.25, 0.09 of 0.38: 0.658 (option 1), then 0.237 (2), then 0.105 (0).
		{0.5, 0.65, 1}, {0.5, 0.67, 2}, {0.5, 0.89, 2}, {0.5, 0.90, 0},
	} {
		if got := sampleOption(p, c.t, c.u); got != c.want {
			t.Errorf("sampleOption(%v, T=%v, u=%v) = %d, want %d", p, c.t, c.u, got, c.want)
		}
	}
}

// labelTop is the label position's listed alternatives of an answer (its first token in a plain answer).
func labelTop(t *testing.T, r lpResponse) []lpTop {
	t.Helper()
	c := r.Choices[0]
	if at := checkLogprobs(t, c, r.Usage.CompletionTokens, 20); at != 0 {
		t.Fatalf("label at token %d, want 0", at)
	}
	return c.Logprobs.Content[0].TopLogprobs
}

// TestSeededSampling: under sampling seeded the label position's distribution depends on the model and messages
// only, not the seed; at temperature 0 the written option is its likeliest; a request is answered the same way
// twice; the seed alone sets the uniform, so over many prompts one seed writes the likeliest option far more or
// less often than another (the draws are shared), while the default sampling is unchanged.
func TestSeededSampling(t *testing.T) {
	seeded, err := New(Config{Sampling: SamplingSeeded})
	if err != nil {
		t.Fatal(err)
	}
	for _, lc := range labelCases {
		var first []lpTop
		for seed := range 20 {
			body := chatBody("sim-chat", seed, lc.prompt, map[string]any{"logprobs": true, "top_logprobs": 20, "temperature": 1})
			r := chatOK(t, seeded, body)
			top := labelTop(t, r)
			if first == nil {
				first = top
			} else if !equalTops(top, first) {
				t.Errorf("%s seed %d: label distribution %v differs from seed 0's %v", lc.name, seed, top, first)
			}
			if again := chatOK(t, seeded, body); !equalTops(labelTop(t, again), top) || *again.Choices[0].Message.Content != *r.Choices[0].Message.Content {
				t.Errorf("%s seed %d: the same request answered differently", lc.name, seed)
			}
			body["temperature"] = 0
			greedy := chatOK(t, seeded, body).Choices[0]
			if got, want := optionOf(greedy.Logprobs.Content[0].Token, lc.labels), optionOf(top[0].Token, lc.labels); got != want {
				t.Errorf("%s seed %d, temperature 0: wrote %s, the likeliest label is %s", lc.name, seed, got, want)
			}
		}
	}

	// One seed over many prompts: the written option is the likeliest either for (nearly) all or (nearly) none
	// of them when the seed's uniform is extreme; seeds 7 and 4 have u near 0 and near 1 (as the results test
	// relies on).
	agree := func(seed int) int {
		n := 0
		for i := range 100 {
			prompt := strings.Replace(ipipPrompt, "the life of the party", "statement "+strings.Repeat("x", i), 1)
			r := chatOK(t, seeded, chatBody("sim-chat", seed, prompt, map[string]any{"logprobs": true, "top_logprobs": 20}))
			top := labelTop(t, r)
			if optionOf(r.Choices[0].Logprobs.Content[0].Token, labelCases[0].labels) == optionOf(top[0].Token, labelCases[0].labels) {
				n++
			}
		}
		return n
	}
	if lo, hi := agree(7), agree(4); lo != 100 || hi != 0 {
		t.Errorf("seed 7: %d of 100 prompts wrote their likeliest option, seed 4: %d; want 100 and 0 (one shared draw per seed)", lo, hi)
	}

	code, raw := chat(t, seeded, chatBody("sim-chat", 1, ipipPrompt, map[string]any{"temperature": "hot"}))
	var e struct {
		Error struct{ Param string } `json:"error"`
	}
	if code != http.StatusBadRequest || json.Unmarshal(raw, &e) != nil || e.Error.Param != "temperature" {
		t.Errorf("temperature \"hot\": status %d, %s; want 400 naming temperature", code, raw)
	}
	for _, r := range seeded.Requests() {
		if strings.Contains(r.Ignored, "temperature") {
			t.Fatalf("request %+v: temperature logged as ignored, but seeded sampling acts on it", r)
		}
	}
	if _, err := New(Config{Sampling: "seedy"}); err == nil || !strings.Contains(err.Error(), "seeded") {
		t.Errorf("sampling seedy: err %v, want one naming the accepted values", err)
	}
}

func equalTops(a, b []lpTop) bool {
	return slices.EqualFunc(a, b, func(x, y lpTop) bool { return x.Token == y.Token && x.Logprob == y.Logprob })
}
