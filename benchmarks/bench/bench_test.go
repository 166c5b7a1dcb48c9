package bench

import (
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
