package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/silicolab/silico/estimate"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
)

// Bounds of the latency sample an estimate reads from earlier runs: at most latencyPerRun answered cells of a
// model per run, and latencySample in all, so that sizing a spec reads a few thousand records whatever the
// store holds.
const (
	latencyPerRun = 2000
	latencySample = 10000
)

// latencyStore is what the latency look-up reads of the results store.
type latencyStore interface {
	Runs(ctx context.Context) ([]store.RunInfo, error)
	LoadRun(ctx context.Context, run string) ([]byte, error)
	Records(ctx context.Context, run string, start, end int) ([]store.Record, error)
}

// modelLatencies is the latency of a call of each model of spec, as known before its run: the simulator's
// settings for a model of provider sim, else the median latency of the model's synchronous calls in earlier runs
// of the store st (nil: none), a model being the same when its name, provider and base URL are. Models with neither
// are left out: their least wall time stays unknown.
func modelLatencies(ctx context.Context, spec *experiment.Spec, st latencyStore) map[string]estimate.Latency {
	out := map[string]estimate.Latency{}
	var want []experiment.Model
	for _, m := range spec.Models {
		if m.Provider == experiment.ProviderSim {
			if sim := spec.Simulator; sim != nil && sim.Latency > 0 {
				out[m.ID] = estimate.Latency{PerCall: time.Duration(sim.Latency), Source: "the simulator's latency"}
			}
			continue
		}
		want = append(want, m)
	}
	if st == nil || len(want) == 0 {
		return out
	}
	samples := map[string][]float64{} // by model id of spec
	runs, err := st.Runs(ctx)
	if err != nil {
		return out
	}
	for _, r := range runs { // newest first: the latest calls say most about the provider today
		b, err := st.LoadRun(ctx, r.ID)
		if err != nil {
			continue
		}
		old, err := specfile.ParseSaved(b, r.ID)
		if err != nil || old.IsEmbed() || len(old.Models) == 0 {
			continue
		}
		perModel := old.NumCells() / len(old.Models) // models are the outermost loop of submission order
		for oi, om := range old.Models {
			for _, m := range want {
				// A batch record's latency is the batch's turnaround, not a call's.
				if om.Name != m.Name || om.Provider != m.Provider || om.BaseURL != m.BaseURL || old.Batched(om) ||
					len(samples[m.ID]) >= latencySample {
					continue
				}
				recs, err := st.Records(ctx, r.ID, oi*perModel, oi*perModel+min(perModel, latencyPerRun))
				if err != nil {
					continue
				}
				for _, rec := range recs {
					if rec.Status != store.StatusFailed && !rec.Cached && rec.LatencyMS > 0 {
						samples[m.ID] = append(samples[m.ID], rec.LatencyMS)
					}
				}
			}
		}
	}
	for id, s := range samples {
		if len(s) == 0 {
			continue
		}
		slices.Sort(s)
		p50 := s[len(s)/2]
		if len(s)%2 == 0 {
			p50 = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		out[id] = estimate.Latency{PerCall: time.Duration(p50 * float64(time.Millisecond)),
			Source: fmt.Sprintf("the median of %s answered calls in earlier runs of this store", thousands(len(s)))}
	}
	return out
}
