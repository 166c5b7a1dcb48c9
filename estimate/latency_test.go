package estimate

import (
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
)

func TestInFlightAndTheLatencyBound(t *testing.T) {
	spec := &experiment.Spec{Seeds: []int64{1, 2, 3}, Models: []experiment.Model{{ID: "a"}, {ID: "b", MaxConcurrency: 5}},
		Personas: []experiment.Persona{{ID: "p"}}, Questionnaire: experiment.Questionnaire{Items: []experiment.Item{{ID: "1"}, {ID: "2"}}}}
	spec.Run.MaxConcurrency, spec.Run.MaxParallelPasses, spec.Run.ChunkSize = 16, 2, 2
	if got := InFlight(spec, 0); got != 32 {
		t.Errorf("InFlight of a model without its own cap = %d; want 16 per pass × 2 passes", got)
	}
	if got := InFlight(spec, 1); got != 5 {
		t.Errorf("InFlight of a model with max_concurrency 5 = %d; want 5", got)
	}
	spec.Seeds = spec.Seeds[:1]
	if got := InFlight(spec, 0); got != 16 {
		t.Errorf("InFlight with one seed in one chunk (one pass) = %d; want 16", got)
	}
	spec.Run.ChunkSize = 1 // one seed in two chunks: two passes, which may run at once
	if got := InFlight(spec, 0); got != 32 {
		t.Errorf("InFlight with one seed in two chunks = %d; want 16 × 2", got)
	}
	spec.Seeds, spec.Run.ChunkSize = []int64{1, 2, 3}, 2

	e := Estimate{Models: []ModelEstimate{
		{Model: "a", Cells: 1000, Calls: 1000, LimitedBy: LimitConcurrency},
		{Model: "b", Cells: 1000, Calls: 1000, LimitedBy: LimitRPM, MinWall: time.Hour},
	}}
	got := e.WithLatency(spec, map[string]Latency{
		"a": {PerCall: 300 * time.Millisecond, Source: "s"},
		"b": {PerCall: 300 * time.Millisecond, Source: "s"},
	})
	// a: ⌈1000 / 32⌉ = 32 waves of 300 ms.
	if m := got.Models[0]; m.MinWall != 32*300*time.Millisecond || m.LimitedBy != LimitLatency || !m.WallKnown() {
		t.Errorf("model a: %v by %s; want 9.6s by latency", m.MinWall, m.LimitedBy)
	}
	// b: 200 waves of 300 ms is a minute, less than its rpm bound of an hour, which stays.
	if m := got.Models[1]; m.MinWall != time.Hour || m.LimitedBy != LimitRPM {
		t.Errorf("model b: %v by %s; want its rpm bound of 1h", m.MinWall, m.LimitedBy)
	}
	if got.MinWall != time.Hour {
		t.Errorf("run bound %v; want the largest model's, 1h (passes may overlap)", got.MinWall)
	}
	if none := e.WithLatency(spec, nil); none.Models[0].WallKnown() || none.Models[0].MinWall != 0 {
		t.Errorf("without a latency, model a's bound is %v by %s; want unknown", none.Models[0].MinWall, none.Models[0].LimitedBy)
	}
}
