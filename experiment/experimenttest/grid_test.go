package experimenttest

import (
	"testing"

	"github.com/silicolab/silico/experiment"
)

func TestGridIsTheGridAsked(t *testing.T) {
	s := Grid(2, 3, 4, 5, Defaults())
	if err := s.Validate(); err != nil {
		t.Fatalf("Grid is not a valid spec: %v", err)
	}
	if n := s.NumCells(); n != 2*3*4*5 {
		t.Errorf("%d cells, want 120", n)
	}
	if s.Seeds[0] != 1 || s.Models[1].ID != "m1" || s.Questionnaire.Items[3].ID != "4" || s.Personas[4].ID != "p4" {
		t.Errorf("names: seeds %v, models %s, items %s, personas %s", s.Seeds, s.Models[1].ID,
			s.Questionnaire.Items[3].ID, s.Personas[4].ID)
	}
}

func TestGridOptions(t *testing.T) {
	b := experiment.BatchSettings{Mode: experiment.BatchBatch}
	s := Grid(2, 2, 3, 1, Name("n"), FirstSeed(100), BaseURL("http://h/v1"), Batch(b), Statements(),
		Model(func(i int, m *experiment.Model) { m.Name = m.ID + "-x" }),
		Edit(func(s *experiment.Spec) { s.Run.MaxAttempts = 9 }))
	switch {
	case s.Name != "n" || s.Seeds[1] != 101 || s.Run.MaxAttempts != 9:
		t.Errorf("name %q, seeds %v, max_attempts %d", s.Name, s.Seeds, s.Run.MaxAttempts)
	case s.Models[1].BaseURL != "http://h/v1" || s.Models[1].Batch == nil || s.Models[1].Batch.Mode != b.Mode || s.Models[1].Name != "m1-x":
		t.Errorf("model %+v", s.Models[1])
	case len(s.Questionnaire.Options.Options) != 5 || !s.Questionnaire.Items[0].Reversed || s.Questionnaire.Items[1].Reversed:
		t.Errorf("statements: %+v", s.Questionnaire)
	}
}
