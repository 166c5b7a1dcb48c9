// Package experimenttest builds experiment specs for tests: a grid of models × seeds × items × personas in the
// shape most tests need, with options for what differs between them.
package experimenttest

import (
	"fmt"

	"github.com/silicolab/silico/experiment"
)

// config is what the options set.
type config struct {
	name       string
	firstSeed  int64
	statements bool
	defaults   bool
	models     []func(i int, m *experiment.Model)
	edits      []func(s *experiment.Spec)
}

// Option changes the grid Grid builds.
type Option func(*config)

// Name names the spec (default "grid").
func Name(name string) Option { return func(c *config) { c.name = name } }

// FirstSeed makes the seeds first, first+1, ... (default 1, 2, ...).
func FirstSeed(first int64) Option { return func(c *config) { c.firstSeed = first } }

// BaseURL makes every model call the OpenAI-compatible endpoint at url.
func BaseURL(url string) Option {
	return Model(func(_ int, m *experiment.Model) { m.BaseURL = url })
}

// Batch puts every model in batch mode with b.
func Batch(b experiment.BatchSettings) Option {
	return Model(func(_ int, m *experiment.Model) { m.Batch = &b })
}

// Model changes model i of the grid (every model, in order); options of several Models apply in turn.
func Model(fn func(i int, m *experiment.Model)) Option {
	return func(c *config) { c.models = append(c.models, fn) }
}

// Statements gives the grid a longer questionnaire: items "Statement number n about myself." (every third
// reversed) rated on five levels ("1. Level 1" ... "5. Level 5"), with the instruction "Rate each
// statement.", and personas with a name and an age.
func Statements() Option { return func(c *config) { c.statements = true } }

// Edit changes the built spec, after everything else and before Defaults.
func Edit(fn func(s *experiment.Spec)) Option {
	return func(c *config) { c.edits = append(c.edits, fn) }
}

// Defaults fills in the spec's defaults (Spec.ApplyDefaults) last.
func Defaults() Option { return func(c *config) { c.defaults = true } }

// Grid is a spec of models × seeds × items × personas. Without options: models m0, m1, ... named sim-model,
// seeds 1, 2, ..., items "1", "2", ... asking "Question n?", personas p0, p1, ... with the name Pn, and the
// questionnaire q ("Answer.") with the options "1. No" (weight 1) and "2. Yes" (weight 2).
func Grid(models, seeds, items, personas int, opts ...Option) experiment.Spec {
	c := config{name: "grid", firstSeed: 1}
	for _, o := range opts {
		o(&c)
	}
	s := experiment.Spec{Name: c.name}
	for i := range models {
		m := experiment.Model{ID: fmt.Sprintf("m%d", i), Name: "sim-model"}
		for _, fn := range c.models {
			fn(i, &m)
		}
		s.Models = append(s.Models, m)
	}
	for i := range seeds {
		s.Seeds = append(s.Seeds, c.firstSeed+int64(i))
	}
	q := &s.Questionnaire
	q.Name = "q"
	if c.statements {
		q.Instruction = "Rate each statement."
		for w := 1; w <= 5; w++ {
			q.Options.Options = append(q.Options.Options, experiment.Option{ID: fmt.Sprint(w), Text: fmt.Sprintf("%d. Level %d", w, w), Weight: w})
		}
	} else {
		q.Instruction = "Answer."
		q.Options.Options = []experiment.Option{{ID: "1", Text: "1. No", Weight: 1}, {ID: "2", Text: "2. Yes", Weight: 2}}
	}
	for i := range items {
		it := experiment.Item{ID: fmt.Sprint(i + 1), Text: fmt.Sprintf("Question %d?", i+1)}
		if c.statements {
			it.Text, it.Reversed = fmt.Sprintf("Statement number %d about myself.", i+1), i%3 == 0
		}
		q.Items = append(q.Items, it)
	}
	for p := range personas {
		attrs := map[string]string{"name": fmt.Sprint("P", p)}
		if c.statements {
			attrs = map[string]string{"name": fmt.Sprint("Person", p), "age": fmt.Sprint(20 + 5*p)}
		}
		s.Personas = append(s.Personas, experiment.Persona{ID: fmt.Sprintf("p%d", p), Attributes: attrs})
	}
	for _, fn := range c.edits {
		fn(&s)
	}
	if c.defaults {
		s.ApplyDefaults()
	}
	return s
}
