package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/wire"
)

// TestTimedRunsCallEveryCell: the grid has the response cache off, and a run with a cached cell is an error.
func TestTimedRunsCallEveryCell(t *testing.T) {
	s := GridSpec(2, 1, 3, 2)
	for _, m := range s.Models {
		if s.CachePolicy(m).Reads() {
			t.Errorf("model %s of GridSpec reads the response cache (%s)", m.ID, s.CachePolicy(m))
		}
	}
	if s.CachePolicy(s.Models[0]) != experiment.CacheOff {
		t.Errorf("GridSpec's cache policy %q, want off", s.CachePolicy(s.Models[0]))
	}
	if err := NoneCached("r", wire.Summary{Cells: 12}); err != nil {
		t.Errorf("no cell cached: %v", err)
	}
	if err := NoneCached("r", wire.Summary{Cells: 12, Cached: 11}); err == nil || !strings.Contains(err.Error(), "11 of 12 cells") {
		t.Errorf("11 cells cached: %v, want an error counting them", err)
	}
}

func TestCases(t *testing.T) {
	all := []string{"a", "b", "c"}
	got, err := Cases(" c,a", all, func(s string) string { return s })
	if err != nil || !slices.Equal(got, []string{"c", "a"}) {
		t.Errorf("Cases(\" c,a\") = %q, %v; want [c a] in the list's order", got, err)
	}
	if _, err := Cases("a,x", all, func(s string) string { return s }); err == nil || !strings.Contains(err.Error(), `"x"`) || !strings.Contains(err.Error(), "a, b, c") {
		t.Errorf("Cases(\"a,x\") error %v; want one naming x and the known cases", err)
	}
}
