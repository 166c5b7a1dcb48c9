package experiment_test

import (
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/specfile"
)

// ipip50 is a spec of realistic size; the spec format's package keeps the test specs.
const ipip50 = "../specfile/testdata/ipip50.yaml"

func BenchmarkRender(b *testing.B) {
	s, err := specfile.Load(ipip50)
	if err != nil {
		b.Fatal(err)
	}
	n := s.NumCells()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Render(s.Cell(i%n), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderCumulative(b *testing.B) {
	s, err := specfile.Load(ipip50)
	if err != nil {
		b.Fatal(err)
	}
	hist := make([]experiment.Turn, 20)
	for i := range hist {
		hist[i] = experiment.Turn{User: "question text", Assistant: "3"}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Render(s.Cell(20), hist); err != nil {
			b.Fatal(err)
		}
	}
}
