package estimate

import (
	"fmt"
	"time"

	"github.com/silicolab/silico/experiment"
)

// LimitLatency names, in ModelEstimate.LimitedBy, a least wall time set by the model's latency and the calls it
// may have in flight: calls ÷ in flight × latency.
const LimitLatency = "latency"

// Latency is what one call of a model takes, as known before the run, and where that is known from ("simulator
// latency", "p50 of 1,200 calls of earlier runs").
type Latency struct {
	PerCall time.Duration
	Source  string
}

// InFlight is the most calls of model mi that a run of spec has in flight at once: run.max_concurrency per pass
// times the passes of the model that may run at once (its passes, (seed, chunk) pairs, up to
// run.max_parallel_passes), capped by the model's max_concurrency when set. More in flight would make the bound
// smaller, so it stays a lower bound.
func InFlight(spec *experiment.Spec, mi int) int {
	perPass := spec.Run.MaxConcurrency
	if perPass <= 0 {
		perPass = experiment.DefaultMaxConcurrency
	}
	own := 0
	for _, p := range spec.Passes() {
		if p.Model == mi {
			own++
		}
	}
	passes := max(1, min(max(1, spec.Run.MaxParallelPasses), own))
	n := perPass * passes
	if mc := spec.Models[mi].MaxConcurrency; mc > 0 {
		n = min(n, mc)
	}
	return max(1, n)
}

// latencyBound is the least time calls take at latency each with inFlight of them at a time.
func latencyBound(calls, inFlight int, latency time.Duration) time.Duration {
	if calls <= 0 || latency <= 0 {
		return 0
	}
	waves := (calls + inFlight - 1) / inFlight
	return time.Duration(waves) * latency
}

// WithLatency returns e with each model's least wall time also bounded by its latency (lat by model id; models
// without an entry keep their bound): the larger of the rate-limit bound and calls ÷ in flight × latency. A
// model in batch mode keeps its batch bound. The run's bound and notes are combined again.
func (e Estimate) WithLatency(spec *experiment.Spec, lat map[string]Latency) Estimate {
	models := make([]ModelEstimate, len(e.Models))
	for i, me := range e.Models {
		if l, ok := lat[me.Model]; ok && me.Batch == nil && l.PerCall > 0 {
			me.Latency, me.LatencySource = l.PerCall, l.Source
			if d := latencyBound(me.Calls, InFlight(spec, i), l.PerCall); d > me.MinWall {
				me.MinWall, me.LimitedBy = d, LimitLatency
			}
		}
		models[i] = me
	}
	e.Models = models
	e.total(spec)
	return e
}

// WallKnown reports whether the model's MinWall is a figure: false for a model bound by concurrency alone, whose
// latency is not known (its MinWall of 0 means unknown, not instant).
func (m ModelEstimate) WallKnown() bool { return m.LimitedBy != LimitConcurrency }

// latencyNote says where a model's latency comes from.
func latencyNote(m ModelEstimate) string {
	return fmt.Sprintf("model %s: latency %s a call (%s)", m.Model, m.Latency.Round(time.Millisecond), m.LatencySource)
}
