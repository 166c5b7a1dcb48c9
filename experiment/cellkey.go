package experiment

// CellKey is a cell's identity in the terms its spec names each factor by, so that it means the same in another
// spec: the model and item ids, the seed value, the ids of the wording and the prompt, the persona id, whether it
// is the verbalized probe, and the order its options are shown in. Cell is a cell's place in its own spec's grid
// and CellID its id within its run (which seeds its calls); two runs' cells ask the same question the same way
// exactly when their keys are equal, models and seeds aside when the runs pair other ones (package compare).
type CellKey struct {
	Model string
	Seed  int64
	// PromptVariant and Variant are the ids of the cell's prompt and wording: OriginalVariant for the spec's
	// own prompt and the item's own text.
	PromptVariant string
	Item          string
	Variant       string
	Persona       string
	// Verbalized is true for the verbalized probe of a cell whose answer.modes ask for one (Cell.Probe 1).
	Verbalized bool
	// Order is the order the cell shows its options in (ShownOrder): a balanced item's two cells are as_written
	// and reversed, as the cells of an item whose mode is as_written or reversed are, so a balanced run's
	// as-written cells are the same question as an as-written run's. Shuffled cells are keyed by the mode: each
	// draws its own permutation from its seed and id, as it draws its sampling.
	Order OrderMode
}

// Key is cell c's CellKey.
func (s *Spec) Key(c Cell) CellKey {
	return CellKey{Model: s.Models[c.Model].ID, Seed: s.Seeds[c.Seed], PromptVariant: s.PromptVariantID(c),
		Item: s.Questionnaire.Items[c.Item].ID, Variant: s.VariantID(c), Persona: s.Personas[c.Persona].ID,
		Verbalized: c.Probe == 1, Order: s.ShownOrder(c)}
}

// ShownOrder is the order cell c shows its options in: its item's mode, a balanced item's cells as_written
// (order 0) and reversed (order 1).
func (s *Spec) ShownOrder(c Cell) OrderMode {
	switch mode := s.OrderFor(c.Item).Mode; mode {
	case OrderBalanced:
		if c.Order == 1 {
			return OrderReversed
		}
		return OrderAsWritten
	default:
		return mode
	}
}
