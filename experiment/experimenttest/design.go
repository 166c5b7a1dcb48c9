package experimenttest

import (
	"fmt"
	"math/rand/v2"

	"github.com/silicolab/silico/experiment"
)

// Design is a small spec drawn at random from the design space, a pure function of seed: 1–2 models, 1–3 seeds,
// 1–5 statements rated on five levels (Statements), 1–4 personas, and at random each of: an option order mode for
// the questionnaire and for some items (as written, reversed, balanced or shuffled, some with the middle option
// pinned), 0–2 wording variants per item (some negated), 0–2 prompt variants, and an answer mode (text,
// logprobs, or logprobs with a verbalized probe). Tests that must hold for every design run over many seeds.
// opts apply after the draw (Defaults last, as in Grid).
func Design(seed uint64, opts ...Option) experiment.Spec {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	draw := func(s *experiment.Spec) {
		modes := []experiment.OrderMode{experiment.OrderAsWritten, experiment.OrderReversed, experiment.OrderBalanced, experiment.OrderShuffled}
		order := func() *experiment.OrderSettings {
			o := &experiment.OrderSettings{Mode: modes[r.IntN(len(modes))]}
			if r.IntN(4) == 0 {
				o.Pin = []string{"3"}
			}
			return o
		}
		q := &s.Questionnaire
		if r.IntN(3) > 0 {
			q.Order = order()
		}
		for i := range q.Items {
			it := &q.Items[i]
			if r.IntN(3) == 0 {
				it.Order = order()
			}
			for v := range r.IntN(3) {
				it.Variants = append(it.Variants, experiment.Variant{ID: fmt.Sprintf("v%d", v+1),
					Text: fmt.Sprintf("Statement %d about myself, in wording %d.", i+1, v+1), Reversed: r.IntN(3) == 0})
			}
		}
		for v := range r.IntN(3) {
			s.PromptVariants = append(s.PromptVariants, experiment.PromptVariant{ID: fmt.Sprintf("pv%d", v+1), Type: "chat",
				Messages: []experiment.Message{{Role: "user", Content: fmt.Sprintf("Prompt %d. {persona_description}\n{question}\n{answer_options}", v+1)}}})
		}
		var answer *experiment.AnswerSettings
		switch r.IntN(3) {
		case 1:
			answer = &experiment.AnswerSettings{Mode: experiment.AnswerLogprobs}
		case 2:
			answer = &experiment.AnswerSettings{Modes: []experiment.AnswerMode{experiment.AnswerLogprobs, experiment.AnswerVerbalized}}
		}
		for m := range s.Models {
			s.Models[m].Answer = answer
		}
	}
	all := append([]Option{Statements(), Name(fmt.Sprintf("design %d", seed)), Edit(draw)}, opts...)
	return Grid(1+r.IntN(2), 1+r.IntN(3), 1+r.IntN(5), 1+r.IntN(4), all...)
}
