package results

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
)

// AnalyzeEmbed is Analyze for the run of a kind: embed spec. An embed cell is a (model, text) with a vector, not
// an answer, so there is nothing to score: the Analysis holds the summary (cells, vectors, failures, tokens,
// cost, first errors, per model) and the latencies and attempts of the cells that ran; its scale, reliability,
// item, agreement and reference parts stay empty.
func AnalyzeEmbed(ctx context.Context, src Source, spec *experiment.Spec, runID string, elapsed time.Duration) (*Analysis, error) {
	if spec == nil || !spec.IsEmbed() {
		return nil, errors.New("results: analyze embed: not an embed spec")
	}
	sum := newSummarizer(spec, runID, elapsed)
	lat := LatencyStats{byMS: map[int64]int{}}
	err := walk(ctx, src, spec, runID, func(r store.Record) error {
		m, _ := spec.EmbedCell(r.Index)
		// The same fields ExportEmbed's summary adds, so that the report's numbers are summary.json's.
		sum.add(&Row{Model: spec.Models[m].ID, Status: r.Status, PromptTokens: r.PromptTokens, CostUSD: r.CostUSD,
			Cached: r.Cached, ErrorClass: r.ErrorClass, ErrorMessage: r.ErrorMessage})
		lat.add(r.LatencyMS, int32(r.Attempts))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("results: analyze %s: %w", runID, err)
	}
	return &Analysis{Spec: spec, RunID: runID, Summary: sum.summary(), Latency: lat}, nil
}

// add counts one cell's latency and attempt; a cell that never ran (attempts 0) is not counted.
func (l *LatencyStats) add(ms float64, attempts int32) {
	if attempts <= 0 {
		return
	}
	l.Ran++
	l.SumMS += ms
	l.MaxMS = max(l.MaxMS, ms)
	l.byMS[int64(ms)]++
	for len(l.Attempts) < int(attempts) {
		l.Attempts = append(l.Attempts, 0)
	}
	l.Attempts[attempts-1]++
}
