package results

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/silicolab/silico/design"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// Reliability is one line of reliability.csv: how reliable one scale is for one model and seed, across the
// personas (the respondents). See psychometrics.Alpha and psychometrics.OmegaTotal for how each number is
// computed; they equal R psych's alpha() and omega(x, nfactors = 1, fm = "pa") on the same data.
type Reliability struct {
	Model     string `json:"model"`
	Seed      int64  `json:"seed"`
	Scale     string `json:"scale"`
	ScaleName string `json:"scale_name"`
	// Personas is the number of personas with at least one scored answer on the scale's items used.
	Personas int `json:"n_personas"`
	// Items is the number of the scale's items; ItemsUsed those with variance across personas (the rest are
	// left out, as psych's alpha() deletes them).
	Items     int `json:"n_items"`
	ItemsUsed int `json:"n_items_used"`
	// Missing is the number of persona × item answers of the scale without a score: unparsed or failed answers,
	// cells not run, and options ignored for scale. They are missing in every statistic, never zeros.
	Missing int `json:"n_missing"`
	// The statistics; nil when undefined (fewer than two items with variance, or too few common answers).
	Alpha      *float64 `json:"alpha"`
	StdAlpha   *float64 `json:"std_alpha"`
	AverageR   *float64 `json:"average_r"`
	OmegaTotal *float64 `json:"omega_total"`
	// AlphaExpected and OmegaExpected are alpha and omega of the same scale on the personas' expected scores
	// (Row.ExpectedScore) instead of their written answers' scores; nil without option probabilities.
	AlphaExpected *float64 `json:"alpha_expected"`
	OmegaExpected *float64 `json:"omega_expected"`
	// Note says why a statistic is empty where R psych refuses it (psychometrics.Reliability.Note): the written
	// answers' reason, then "expected scores: " and theirs, joined by "; "; empty when every number is there.
	Note string `json:"note"`
}

// ItemStat is one line of items.csv: one item of a scale for one model and seed, across personas.
type ItemStat struct {
	Model    string `json:"model"`
	Seed     int64  `json:"seed"`
	Scale    string `json:"scale"`
	ItemID   string `json:"item_id"`
	Reversed bool   `json:"reversed"`
	// N is the number of personas with a score on the item; Mean and SD (n - 1 denominator) are over them.
	N    int      `json:"n"`
	Mean *float64 `json:"mean"`
	SD   *float64 `json:"sd"`
	// Used is false for an item without variance, left out of the scale's statistics.
	Used bool `json:"used"`
	// ItemRest is the correlation of the item with the sum of the scale's other items (psych r.drop);
	// AlphaIfDropped the scale's alpha without the item (nil with fewer than three items used).
	ItemRest       *float64 `json:"item_rest_r"`
	AlphaIfDropped *float64 `json:"alpha_if_dropped"`
	// ModalShare is the seed agreement of the item for this model: for each persona the share of its answered
	// seeds that gave its most frequent answer, averaged over personas with an answer. The same on every
	// seed's line; nil when no persona answered.
	ModalShare *float64 `json:"modal_share"`
}

// Agreement is one line of agreement.csv: how much one persona's scale score moves between seeds, for one
// model.
type Agreement struct {
	Model     string `json:"model"`
	PersonaID string `json:"persona_id"`
	Scale     string `json:"scale"`
	ScaleName string `json:"scale_name"`
	// Seeds is the number of seeds with a scale score; Mean, SD (n - 1 denominator), Min and Max are over
	// them. SD is nil with fewer than two.
	Seeds int      `json:"n_seeds"`
	Mean  *float64 `json:"mean"`
	SD    *float64 `json:"sd"`
	Min   *float64 `json:"min"`
	Max   *float64 `json:"max"`
	// ModalShare averages, over the scale's items this persona answered, the share of answered seeds that
	// gave the item's most frequent answer: 1 when every seed answered every item alike.
	ModalShare *float64 `json:"modal_share"`
}

// Range is Max - Min, nil when there is no score.
func (a Agreement) Range() *float64 {
	if a.Min == nil || a.Max == nil {
		return nil
	}
	return ptr(*a.Max - *a.Min)
}

// Cell status codes of CellResult.
const (
	CellOK uint8 = iota
	CellUnparsed
	CellFailed
)

// CellResult is what the analysis reads of one cell. It keeps none: it counts them (see cellStats), so its
// memory does not grow with the seeds.
type CellResult struct {
	LatencyMS float64
	Score     int32 // valid when Scored
	Attempts  int32
	// Expected is the cell's expected score (Row.ExpectedScore), NaN when it has none. It stays a float64:
	// alpha_expected and omega_expected are computed from it and written with every digit they have, so
	// rounding it here would change them in the seventh digit.
	Expected float64
	Option   int16 // index of the answer in the item's options, -1 when there is none
	Status   uint8
	Scored   bool
}

// Analysis is everything a run's outputs say, computed in one pass over its records: the summary, scale
// scores, reliability, item statistics and seed agreement, and the sums and counts the report plots.
type Analysis struct {
	Spec    *experiment.Spec
	RunID   string
	Summary wire.Summary
	// Scales are the scale scores in ScaleScore's order, filled by Analyze; Export leaves it nil and writes
	// scales.csv from the sums (ScaleScore reads either).
	Scales      []ScaleScore
	Reliability []Reliability
	Items       []ItemStat
	Agreement   []Agreement
	// Reference and ReferenceScales compare the answers with the spec's human reference (empty without one).
	Reference       []ReferenceRow
	ReferenceScales []ReferenceScale
	// Validity is validity.csv: the checks of the model's personas against the reference's respondents.
	Validity []Validity
	// OrderBias is order_bias.csv's rows (design.Accumulator.OrderBias, with each item's order-marginal
	// distribution); nil when the spec does not vary option order (VariesOrder).
	OrderBias []design.OrderBiasRow
	// ReferenceOverall are reference_scales.csv's lines of scale ScaleOverall (every item, per model × group),
	// written after ReferenceScales' and kept apart so that a reader of the scales sees scales only.
	ReferenceOverall []ReferenceScale
	// Latency holds the latencies and attempts of the cells that ran.
	Latency LatencyStats
	// ScaleIDs and ScaleNames are the scored scales in output order; ItemScale maps an item index to its
	// position in ScaleIDs, -1 for an item without a scale.
	ScaleIDs   []string
	ScaleNames []string
	ItemScale  []int

	// dists are the cells' answer distributions summed per (model, item, persona); see PersonaPMF.
	dists *distAccumulator
	// cells counts answers and scores per (model, item, persona) over seeds; see cellStats.
	cells *cellStats
	// scaleSums are the scale sums ScaleScore reads when Scales is not kept.
	scaleSums *scaleAccumulator
	// contra counts, per (model, persona, scale), the agreeing and all (positive, negative) item pairs of the
	// written answers over the seeds (countContradictions); keys are the scales' items by keying. Only a spec
	// with a reference has them.
	contra [][2]float64
	keys   []keying
}

// Analyze reads the records of a run and computes its Analysis. elapsed is the run's wall time, written to
// the summary.
func Analyze(ctx context.Context, src Source, spec *experiment.Spec, runID string, elapsed time.Duration) (*Analysis, error) {
	if spec == nil {
		return nil, errors.New("results: analyze: nil spec")
	}
	an := newAnalyzer(spec, runID, elapsed, false)
	err := walk(ctx, src, spec, runID, func(r store.Record) error {
		row := BuildRow(spec, runID, r)
		return an.add(&row)
	})
	if err != nil {
		return nil, fmt.Errorf("results: analyze %s: %w", runID, err)
	}
	return an.finish(true), nil
}

// analyzer accumulates an Analysis row by row.
type analyzer struct {
	a      *Analysis
	sum    *summarizer
	scales *scaleAccumulator
	design *designSums
}

// newAnalyzer returns an empty analyzer; export also sums what only the export writes (variance.csv, modes.csv).
func newAnalyzer(spec *experiment.Spec, runID string, elapsed time.Duration, export bool) *analyzer {
	sc := newScaleAccumulator(spec)
	a := &Analysis{Spec: spec, RunID: runID, ScaleIDs: sc.scales, ScaleNames: sc.names, ItemScale: sc.itemScale,
		dists: newDistAccumulator(spec)}
	a.cells = newCellStats(spec, a.reliabilityOf)
	return &analyzer{a: a, sum: newSummarizer(spec, runID, elapsed), scales: sc, design: newDesignSums(spec, export)}
}

// add counts one row; rows must come in index order. It fails only on a row the design statistics cannot use.
func (an *analyzer) add(r *Row) error {
	an.sum.add(r)
	an.scales.add(r)
	c := CellResult{LatencyMS: r.LatencyMS, Attempts: int32(r.Attempts), Option: -1, Status: CellFailed, Expected: math.NaN()}
	if r.ExpectedScore != nil {
		c.Expected = *r.ExpectedScore
	}
	switch r.Status {
	case store.StatusOK:
		c.Status = CellOK
	case store.StatusUnparsed:
		c.Status = CellUnparsed
	}
	if r.Score != nil {
		c.Score, c.Scored = int32(*r.Score), true
	}
	if r.Status == store.StatusOK && r.OptionID != "" {
		item := an.a.Spec.Cell(r.Index).Item
		for k, o := range an.a.Spec.OptionsFor(item).Options {
			if o.ID == r.OptionID {
				c.Option = int16(k)
				break
			}
		}
	}
	an.a.cells.add(c, r.Index)
	an.a.dists.add(r, int(c.Option))
	if err := an.design.add(an.a.Spec.Cell(r.Index), r); err != nil {
		return fmt.Errorf("cell %d: %w", r.Index, err)
	}
	return nil
}

// finish computes what needs every record. keepScales fills Scales; without it ScaleScore reads the sums, and
// an export writes scales.csv from them: a run's scale scores are one per (model, persona, seed, scale), 50 MB
// of them for 10,000,000 cells.
func (an *analyzer) finish(keepScales bool) *Analysis {
	a := an.a
	a.Summary = an.sum.summary()
	a.scaleSums = an.scales
	if keepScales {
		a.Scales = an.scales.scores(a.Spec)
	}
	a.cells.finish()
	a.Latency = a.cells.lat
	a.itemModalShares()
	a.agreement()
	a.reference()
	a.validity()
	a.OrderBias = an.design.orderBias(a)
	return a
}

// Index is the cell index of (model, seed, item, persona), all indexes into the spec's slices, in the options'
// written order (a balanced item's other cell is the next index): experiment.Spec.CellIndex.
func (a *Analysis) Index(m, sd, it, p int) int {
	return a.Spec.CellIndex(m, sd, it, p, 0)
}

// ScaleScore returns the score of scale k for (model m, persona p, seed sd): Scales is in that order.
func (a *Analysis) ScaleScore(m, p, sd, k int) ScaleScore {
	s := a.Spec
	if a.Scales == nil {
		return a.scaleSums.score(s, m, p, sd, k)
	}
	return a.Scales[((m*len(s.Personas)+p)*len(s.Seeds)+sd)*len(a.ScaleIDs)+k]
}

// AgreementOf returns the seed agreement of scale k for (model m, persona p): Agreement is in that order.
func (a *Analysis) AgreementOf(m, p, k int) Agreement {
	return a.Agreement[(m*len(a.Spec.Personas)+p)*len(a.ScaleIDs)+k]
}

// ScaleItems returns the indexes of the items of scale k, in questionnaire order.
func (a *Analysis) ScaleItems(k int) []int {
	var out []int
	for i, s := range a.ItemScale {
		if s == k {
			out = append(out, i)
		}
	}
	return out
}

// alphaOmega is alpha and omega total of x, nil where undefined, and the note that says why.
func alphaOmega(x [][]float64) (alpha, omega *float64, note string) {
	r := psychometrics.ScaleReliability(x)
	if r.Err != nil {
		return nil, nil, r.Note()
	}
	return finite(r.Raw), finite(r.Omega), r.Note()
}

// joinNotes joins the non-empty notes with "; ".
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}

// reliabilityOf appends the Reliability and Items lines of one (model, seed) block (index m*seeds + sd), whose
// scores are in item × persona order: for every scale the personas × items matrix of scores goes through
// psychometrics. Blocks come in index order, so the lines are in model, seed, scale order. ModalShare, which
// needs every seed, is filled in by itemModalShares.
func (a *Analysis) reliabilityOf(block int, score []int32, has []bool, expected []float64) {
	s := a.Spec
	m, sd := block/len(s.Seeds), block%len(s.Seeds)
	a.countContradictions(m, score, has)
	for k := range a.ScaleIDs {
		items := a.ScaleItems(k)
		x, missing := scoreMatrix(len(s.Personas), items, score, has)
		rel := Reliability{Model: s.Models[m].ID, Seed: s.Seeds[sd], Scale: a.ScaleIDs[k],
			ScaleName: a.ScaleNames[k], Items: len(items), Missing: missing}
		ps := psychometrics.ScaleReliability(x)
		rel.Personas, rel.ItemsUsed = ps.Respondents, len(ps.Items)
		if ps.Err == nil {
			rel.Alpha, rel.StdAlpha, rel.AverageR = finite(ps.Raw), finite(ps.Std), finite(ps.AverageR)
			rel.OmegaTotal = finite(ps.Omega)
		}
		rel.Note = ps.Note()
		if ex, any := expectedMatrix(len(s.Personas), items, expected); any {
			var note string
			rel.AlphaExpected, rel.OmegaExpected, note = alphaOmega(ex)
			if note != "" {
				rel.Note = joinNotes(rel.Note, "expected scores: "+note)
			}
		}
		a.Reliability = append(a.Reliability, rel)
		for j, it := range items {
			st := ItemStat{Model: rel.Model, Seed: rel.Seed, Scale: rel.Scale, ItemID: s.Questionnaire.Items[it].ID,
				Reversed: s.Questionnaire.Items[it].Reversed}
			st.N, st.Mean, st.SD = describe(column(x, j))
			if pos := slices.Index(ps.Items, j); pos >= 0 {
				st.Used = true
				if ps.Err == nil {
					st.ItemRest, st.AlphaIfDropped = finite(ps.ItemRest[pos]), finite(ps.IfDropped[pos])
				}
			}
			a.Items = append(a.Items, st)
		}
	}
}

// HeatMean returns the mean score of (model m, item it, persona p) over the seeds, and the number of seeds with
// a score (0: no mean).
func (a *Analysis) HeatMean(m, it, p int) (mean float64, n int) {
	i, _ := a.cells.at(m, it, p)
	if a.cells.scored[i] == 0 {
		return 0, 0
	}
	return float64(a.cells.scoreSum[i]) / float64(a.cells.scored[i]), int(a.cells.scored[i])
}

// itemModalShares fills the ModalShare of every Items line: for its (model, item), the mean modal share over
// personas. Items is in model, seed, scale, item order (see reliabilityOf).
func (a *Analysis) itemModalShares() {
	s := a.Spec
	modal := make([]*float64, len(s.Models)*len(s.Questionnaire.Items))
	for m := range s.Models {
		for it := range s.Questionnaire.Items {
			var sum float64
			n := 0
			for p := range s.Personas {
				if v, ok := a.cells.modalShare(m, it, p); ok {
					sum += v
					n++
				}
			}
			if n > 0 {
				modal[m*len(s.Questionnaire.Items)+it] = ptr(sum / float64(n))
			}
		}
	}
	i := 0
	for m := range s.Models {
		for range s.Seeds {
			for k := range a.ScaleIDs {
				for _, it := range a.ScaleItems(k) {
					a.Items[i].ModalShare = modal[m*len(s.Questionnaire.Items)+it]
					i++
				}
			}
		}
	}
}

// agreement fills Agreement from the scale scores (model, persona, seed, scale order) and the answers.
func (a *Analysis) agreement() {
	s := a.Spec
	for m := range s.Models {
		for p := range s.Personas {
			for k := range a.ScaleIDs {
				var vals []float64
				for sd := range s.Seeds {
					if sc := a.ScaleScore(m, p, sd, k); sc.Mean != nil {
						vals = append(vals, *sc.Mean)
					}
				}
				ag := Agreement{Model: s.Models[m].ID, PersonaID: s.Personas[p].ID, Scale: a.ScaleIDs[k],
					ScaleName: a.ScaleNames[k]}
				ag.Seeds, ag.Mean, ag.SD = describe(vals)
				if len(vals) > 0 {
					ag.Min, ag.Max = ptr(slices.Min(vals)), ptr(slices.Max(vals))
				}
				var sum float64
				n := 0
				for _, it := range a.ScaleItems(k) {
					if v, ok := a.cells.modalShare(m, it, p); ok {
						sum += v
						n++
					}
				}
				if n > 0 {
					ag.ModalShare = ptr(sum / float64(n))
				}
				a.Agreement = append(a.Agreement, ag)
			}
		}
	}
}

// column returns the present values of column j of x.
func column(x [][]float64, j int) []float64 {
	var out []float64
	for _, row := range x {
		if !psychometrics.IsMissing(row[j]) {
			out = append(out, row[j])
		}
	}
	return out
}

// describe returns the count, mean and sample standard deviation (n - 1 denominator, nil below two values).
func describe(v []float64) (n int, mean, sd *float64) {
	if len(v) == 0 {
		return 0, nil, nil
	}
	var s float64
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	if len(v) < 2 {
		return len(v), &m, nil
	}
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return len(v), &m, ptr(math.Sqrt(ss / float64(len(v)-1)))
}

func ptr(v float64) *float64 { return &v }

// finite returns &v, or nil when v is NaN or infinite.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
