package experiment

import (
	"fmt"
	"strings"
	"testing"
)

func gridSpec(models, seeds, items, personas int) *Spec {
	s := &Spec{Name: "grid"}
	for i := range models {
		s.Models = append(s.Models, Model{ID: fmt.Sprintf("m%d", i), Name: "x"})
	}
	for i := range seeds {
		s.Seeds = append(s.Seeds, int64(100+i))
	}
	for i := range items {
		s.Questionnaire.Items = append(s.Questionnaire.Items, Item{ID: fmt.Sprintf("i%d", i), Text: "q"})
	}
	for i := range personas {
		s.Personas = append(s.Personas, Persona{ID: fmt.Sprintf("p%d", i)})
	}
	return s
}

func TestCellOrder(t *testing.T) {
	s := gridSpec(2, 3, 4, 5)
	if s.NumCells() != 120 {
		t.Fatalf("NumCells = %d", s.NumCells())
	}
	i := 0
	seen := map[string]bool{}
	for m := range 2 {
		for sd := range 3 {
			for it := range 4 {
				for p := range 5 {
					want := Cell{Index: i, Model: m, Seed: sd, Item: it, Persona: p}
					if got := s.Cell(i); got != want {
						t.Fatalf("Cell(%d) = %+v, want %+v", i, got, want)
					}
					id := s.CellID(want)
					if wantID := fmt.Sprintf("m%d/%d/i%d/p%d", m, 100+sd, it, p); id != wantID || seen[id] {
						t.Fatalf("CellID = %q, want unique %q", id, wantID)
					}
					seen[id] = true
					i++
				}
			}
		}
	}
	for _, bad := range []int{-1, 120} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Cell(%d) did not panic", bad)
				}
			}()
			s.Cell(bad)
		}()
	}
}

func TestPasses(t *testing.T) {
	tests := []struct {
		name                         string
		models, seeds, items, pers   int
		chunk                        int
		cumulative                   bool
		wantPasses, wantPerModelSeed int
	}{
		{name: "one pass per model and seed", models: 2, seeds: 3, items: 4, pers: 5, wantPasses: 6, wantPerModelSeed: 1},
		{name: "chunked at item boundaries", models: 2, seeds: 2, items: 10, pers: 3, chunk: 7, wantPasses: 20, wantPerModelSeed: 5},
		{name: "chunk smaller than one item", models: 1, seeds: 1, items: 3, pers: 10, chunk: 4, wantPasses: 3, wantPerModelSeed: 3},
		{name: "cumulative is never chunked", models: 2, seeds: 1, items: 10, pers: 3, chunk: 7, cumulative: true, wantPasses: 2, wantPerModelSeed: 1},
		{name: "default chunk size", models: 1, seeds: 1, items: 50, pers: 200, wantPasses: 2, wantPerModelSeed: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := gridSpec(tc.models, tc.seeds, tc.items, tc.pers)
			s.Run.ChunkSize, s.Run.Cumulative = tc.chunk, tc.cumulative
			ps := s.Passes()
			if len(ps) != tc.wantPasses {
				t.Fatalf("%d passes, want %d: %+v", len(ps), tc.wantPasses, ps)
			}
			next := 0
			per := map[[2]int]int{}
			for k, p := range ps {
				if p.Index != k || p.Start != next || p.Len() <= 0 || p.Start%tc.pers != 0 || p.End%tc.pers != 0 {
					t.Fatalf("pass %d = %+v, want contiguous, at item boundaries, starting at %d", k, p, next)
				}
				for i := p.Start; i < p.End; i++ {
					if c := s.Cell(i); c.Model != p.Model || c.Seed != p.Seed {
						t.Fatalf("cell %d (%+v) outside its pass %+v", i, c, p)
					}
				}
				per[[2]int{p.Model, p.Seed}]++
				next = p.End
			}
			if next != s.NumCells() {
				t.Errorf("passes cover %d cells, want %d", next, s.NumCells())
			}
			for k, n := range per {
				if n != tc.wantPerModelSeed {
					t.Errorf("model/seed %v has %d passes, want %d", k, n, tc.wantPerModelSeed)
				}
			}
		})
	}
}

// TestCellOfAnEmbedSpecSaysSo: an embed spec of items has no personas; Cell names EmbedCell instead of dividing
// by zero.
func TestCellOfAnEmbedSpecSaysSo(t *testing.T) {
	s := gridSpec(1, 1, 3, 0)
	s.Kind, s.Embed = KindEmbed, &EmbedSettings{Texts: EmbedItems}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "EmbedCell") {
			t.Errorf("Cell of an embed spec panicked with %q, want a message naming EmbedCell", msg)
		}
	}()
	s.Cell(0)
}
