package experiment

// OptionsFor returns the options of item i: its own when it has them, the questionnaire's otherwise.
func (s *Spec) OptionsFor(i int) OptionSet {
	if o := s.Questionnaire.Items[i].Options; o != nil {
		return *o
	}
	return s.Questionnaire.Options
}

// Score is the score of answering item i with option id: the option's weight, or min+max-weight over the item's
// scored options when the item is reversed. ok is false for an unknown option and for one ignored for scale.
// Only the item's own wording is keyed so: a cell of a wording variant is scored by CellScore.
func (s *Spec) Score(i int, id string) (score int, ok bool) {
	return s.score(i, id, s.Questionnaire.Items[i].Reversed)
}

// score is the score of answering item i with option id, reversed or not.
func (s *Spec) score(i int, id string, reversed bool) (score int, ok bool) {
	opts := s.OptionsFor(i).Options
	var chosen *Option
	lo, hi, seen := 0, 0, false
	for k := range opts {
		o := &opts[k]
		if o.ID == id {
			chosen = o
		}
		if o.IgnoredForScale {
			continue
		}
		if !seen || o.Weight < lo {
			lo = o.Weight
		}
		if !seen || o.Weight > hi {
			hi = o.Weight
		}
		seen = true
	}
	if chosen == nil || chosen.IgnoredForScale {
		return 0, false
	}
	if reversed {
		return lo + hi - chosen.Weight, true
	}
	return chosen.Weight, true
}
