package report

import (
	"context"
	"fmt"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/store"
)

// Run is what a report shows: the run's results.Analysis and, beside it, what the analysis does not keep of each
// cell's option probabilities — coverage, entropy and whether the most likely option is the written answer —
// summed per model and item.
type Run struct {
	*results.Analysis
	cells *cellStats
}

// Analyze reads the records of a run once, computing its results.Analysis (as results.Analyze does) and the
// per-cell facts of the option probabilities the report adds: their numbers are those of results.csv's coverage,
// entropy and top_agrees columns, since each record goes through results.BuildRow as the export's does.
func Analyze(ctx context.Context, src results.Source, spec *experiment.Spec, runID string, elapsed time.Duration) (*Run, error) {
	if spec == nil {
		return nil, fmt.Errorf("report: analyze %s: nil spec", runID)
	}
	cs := newCellStats(spec)
	if spec.IsEmbed() {
		// Vectors have no options to score: the report shows the run's counts, cost and latencies.
		a, err := results.AnalyzeEmbed(ctx, src, spec, runID, elapsed)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		return &Run{Analysis: a, cells: cs}, nil
	}
	tee := teeSource{src: src, add: func(r store.Record) { cs.add(results.BuildRow(spec, runID, r)) }}
	a, err := results.Analyze(ctx, tee, spec, runID, elapsed)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &Run{Analysis: a, cells: cs}, nil
}

// teeSource hands every record to add after the analysis has taken it. The analysis checks each record's index
// against the spec in its callback, so add sees only records the analysis accepted. Cells without a record add
// nothing, as a cell not run has no probabilities.
type teeSource struct {
	src results.Source
	add func(store.Record)
}

func (t teeSource) Scan(ctx context.Context, run string, fn func(store.Record) error) error {
	return t.src.Scan(ctx, run, func(r store.Record) error {
		if err := fn(r); err != nil {
			return err
		}
		t.add(r)
		return nil
	})
}

// cellStats sums, per (model, item), the coverage and entropy of the cells with option probabilities and counts
// how many of the cells with both probabilities and a written answer had that answer as their most likely
// option: two floats and five counts per model × item, whatever the number of seeds and personas.
type cellStats struct {
	spec *experiment.Spec
	sums []probSums // at model*items + item
}

// probSums are the sums of one set of cells.
type probSums struct {
	cells             int // cells with probabilities
	coverage, entropy float64
	nCoverage         int // cells with a coverage
	nEntropy          int // cells with an entropy
	agree, nAgree     int // cells whose top option is their written answer; cells with both
}

func newCellStats(spec *experiment.Spec) *cellStats {
	return &cellStats{spec: spec, sums: make([]probSums, len(spec.Models)*len(spec.Questionnaire.Items))}
}

func (c *cellStats) add(r results.Row) {
	if r.Probs == nil {
		return
	}
	cell := c.spec.Cell(r.Index)
	s := &c.sums[cell.Model*len(c.spec.Questionnaire.Items)+cell.Item]
	s.cells++
	if r.Coverage != nil {
		s.coverage += *r.Coverage
		s.nCoverage++
	}
	if r.Entropy != nil {
		s.entropy += *r.Entropy
		s.nEntropy++
	}
	if r.TopAgrees != nil {
		s.nAgree++
		if *r.TopAgrees {
			s.agree++
		}
	}
}

// item returns the sums of model m's cells of item it.
func (c *cellStats) item(m, it int) probSums { return c.sums[m*len(c.spec.Questionnaire.Items)+it] }

// model returns the sums of all of model m's cells.
func (c *cellStats) model(m int) probSums {
	var out probSums
	for it := range c.spec.Questionnaire.Items {
		out.plus(c.item(m, it))
	}
	return out
}

// any reports whether some cell of the run had option probabilities.
func (c *cellStats) any() bool {
	for _, s := range c.sums {
		if s.cells > 0 {
			return true
		}
	}
	return false
}

func (s *probSums) plus(o probSums) {
	s.cells += o.cells
	s.coverage += o.coverage
	s.entropy += o.entropy
	s.nCoverage += o.nCoverage
	s.nEntropy += o.nEntropy
	s.agree += o.agree
	s.nAgree += o.nAgree
}

// meanCoverage, meanEntropy and agreeShare are nil over no cells.
func (s probSums) meanCoverage() *float64 { return ratio(s.coverage, s.nCoverage) }
func (s probSums) meanEntropy() *float64  { return ratio(s.entropy, s.nEntropy) }
func (s probSums) agreeShare() *float64   { return ratio(float64(s.agree), s.nAgree) }

func ratio(sum float64, n int) *float64 {
	if n == 0 {
		return nil
	}
	v := sum / float64(n)
	return &v
}
