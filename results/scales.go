package results

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
)

// ScaleScore is the score of one scale for one (model, persona, seed): the mean of the scores of the scale's
// items (reversed items already reversed, see experiment.Spec.Score), as the seed-000 framework scores.
type ScaleScore struct {
	Model     string `json:"model"`
	PersonaID string `json:"persona_id"`
	Seed      int64  `json:"seed"`
	Scale     string `json:"scale"`
	// ScaleName is the scale's name from the questionnaire, empty when it declares none.
	ScaleName string `json:"scale_name"`
	// Mean is nil when no item of the scale has a score.
	Mean *float64 `json:"mean"`
	// NItems is the number of the scale's items with a score (the mean is over them); NMissing the number
	// without one (failed, unparsed, not run, or answered with an option ignored for scale).
	NItems   int `json:"n_items"`
	NMissing int `json:"n_missing"`
	// ExpectedMean is the mean of the scale's items' expected scores (Row.ExpectedScore: Σ p·score over the
	// option probabilities), over the NExpected items that have one; nil without option probabilities.
	ExpectedMean *float64 `json:"expected_mean"`
	NExpected    int      `json:"n_expected"`
}

// ScaleScores reads the records of a run and scores every scale for every (model, persona, seed), ordered by
// model, persona, seed (in spec order) and scale (the questionnaire's scales in order, then scales items name
// without declaring them, in item order). Items without a scale are not scored. Export writes the same
// scores to scales.csv.
func ScaleScores(ctx context.Context, src Source, spec *experiment.Spec, runID string) ([]ScaleScore, error) {
	acc := newScaleAccumulator(spec)
	err := walk(ctx, src, spec, runID, func(r store.Record) error {
		row := BuildRow(spec, runID, r)
		acc.add(&row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("results: scale scores %s: %w", runID, err)
	}
	return acc.scores(spec), nil
}

// scaleAccumulator sums scores per (model, persona, seed, scale) while rows stream past.
type scaleAccumulator struct {
	spec      *experiment.Spec
	scales    []string // scale ids in output order
	names     []string
	itemScale []int // item index → index in scales, -1 when the item has no scale
	sums      []scaleSum
}

type scaleSum struct {
	sum, scored, missing int
	esum                 float64
	expected             int
}

func newScaleAccumulator(spec *experiment.Spec) *scaleAccumulator {
	a := &scaleAccumulator{spec: spec, itemScale: make([]int, len(spec.Questionnaire.Items))}
	pos := map[string]int{}
	used := map[string]bool{}
	for _, it := range spec.Questionnaire.Items {
		used[it.Scale] = true
	}
	for _, sc := range spec.Questionnaire.Scales {
		if _, dup := pos[sc.ID]; dup || !used[sc.ID] || sc.ID == "" {
			continue
		}
		pos[sc.ID] = len(a.scales)
		a.scales = append(a.scales, sc.ID)
		a.names = append(a.names, sc.Name)
	}
	for i, it := range spec.Questionnaire.Items {
		if it.Scale == "" {
			a.itemScale[i] = -1
			continue
		}
		k, ok := pos[it.Scale]
		if !ok {
			k = len(a.scales)
			pos[it.Scale] = k
			a.scales = append(a.scales, it.Scale)
			a.names = append(a.names, "")
		}
		a.itemScale[i] = k
	}
	a.sums = make([]scaleSum, len(spec.Models)*len(spec.Personas)*len(spec.Seeds)*len(a.scales))
	return a
}

// group is the index in sums of (model, persona, seed, scale k), in output order.
func (a *scaleAccumulator) group(model, persona, seed, k int) int {
	return ((model*len(a.spec.Personas)+persona)*len(a.spec.Seeds)+seed)*len(a.scales) + k
}

func (a *scaleAccumulator) add(r *Row) {
	c := a.spec.Cell(r.Index)
	if c.Probe != 0 {
		return // a verbalized probe restates the cell's answer: it is not another one
	}
	if c.Variant != 0 || c.PromptVariant != 0 {
		return // a wording or prompt variant asks another question: per-item pools hold the original only
	}
	k := a.itemScale[c.Item]
	if k < 0 {
		return
	}
	s := &a.sums[a.group(c.Model, c.Persona, c.Seed, k)]
	if r.ExpectedScore != nil {
		s.esum += *r.ExpectedScore
		s.expected++
	}
	if r.Score == nil {
		s.missing++
		return
	}
	s.sum += *r.Score
	s.scored++
}

func (a *scaleAccumulator) scores(spec *experiment.Spec) []ScaleScore {
	return slices.AppendSeq(make([]ScaleScore, 0, len(a.sums)), a.all(spec))
}

// all yields every ScaleScore in output order (model, persona, seed, scale), without holding them.
func (a *scaleAccumulator) all(spec *experiment.Spec) iter.Seq[ScaleScore] {
	return func(yield func(ScaleScore) bool) {
		for m := range spec.Models {
			for p := range spec.Personas {
				for sd := range spec.Seeds {
					for k := range a.scales {
						if !yield(a.score(spec, m, p, sd, k)) {
							return
						}
					}
				}
			}
		}
	}
}

// score is the ScaleScore of scale k for (model m, persona p, seed sd).
func (a *scaleAccumulator) score(spec *experiment.Spec, m, p, sd, k int) ScaleScore {
	s := a.sums[a.group(m, p, sd, k)]
	sc := ScaleScore{Model: spec.Models[m].ID, PersonaID: spec.Personas[p].ID, Seed: spec.Seeds[sd],
		Scale: a.scales[k], ScaleName: a.names[k], NItems: s.scored, NMissing: s.missing}
	if s.scored > 0 {
		mean := float64(s.sum) / float64(s.scored)
		sc.Mean = &mean
	}
	if sc.NExpected = s.expected; s.expected > 0 {
		sc.ExpectedMean = ptr(s.esum / float64(s.expected))
	}
	return sc
}

// ScalesHeader returns the header of scales.csv.
func ScalesHeader() []string {
	return []string{"run_id", "model", "persona_id", "seed", "scale", "scale_name", "mean", "n_items", "n_missing",
		"expected_mean", "n_expected"}
}

// writeScales writes scales.csv: one line per ScaleScore, the means as Stat writes them (empty when none).
func writeScales(w io.Writer, runID string, scores iter.Seq[ScaleScore]) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ScalesHeader()); err != nil {
		return err
	}
	for s := range scores {
		if err := cw.Write([]string{runID, s.Model, s.PersonaID, strconv.FormatInt(s.Seed, 10), s.Scale, s.ScaleName,
			Stat(s.Mean), strconv.Itoa(s.NItems), strconv.Itoa(s.NMissing), Stat(s.ExpectedMean), strconv.Itoa(s.NExpected)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
