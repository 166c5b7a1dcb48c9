package results

import (
	"fmt"
	"io"
	"strconv"

	"github.com/silicolab/silico/bootstrap"
	"github.com/silicolab/silico/experiment"
)

// ValidityHeader returns the header of validity.csv: one line per model × scale × statistic × attribute, level
// or item as the statistic applies (Validity).
func ValidityHeader() []string {
	return []string{"run_id", "model", "scale", "attribute", "level", "baseline", "item_id", "statistic", "n_personas",
		"n_humans", "model_value", "model_lo", "model_hi", "human_value", "human_lo", "human_hi", "value", "value_lo",
		"value_hi", "agree", "note"}
}

func writeValidity(w io.Writer, runID string, rows []Validity) error {
	return writeCSV(w, ValidityHeader(), len(rows), func(i int) []string {
		r := rows[i]
		agree := ""
		if r.Agree != nil {
			agree = strconv.FormatBool(*r.Agree)
		}
		return []string{runID, r.Model, r.Scale, r.Attribute, r.Level, r.Baseline, r.ItemID, r.Statistic,
			strconv.Itoa(r.NModel), strconv.Itoa(r.NHuman), Stat(r.ModelValue), Stat(r.ModelLo), Stat(r.ModelHi),
			Stat(r.HumanValue), Stat(r.HumanLo), Stat(r.HumanHi), Stat(r.Value), Stat(r.ValueLo), Stat(r.ValueHi),
			agree, r.Note}
	})
}

// WriteValidityResamples writes the resamples validity.csv's intervals are computed from, as CSV with the
// header bootstrap.IndicesHeader: label "personas" (every model's personas, spec order) and label
// "respondents" (the reference's respondents, file order; none without respondents), b from 1, the drawn
// 0-based unit indices joined by ";". Another implementation that computes each statistic on these rows
// reproduces the intervals. Nothing is written after the header when the spec's analysis.bootstrap has 0
// samples.
func WriteValidityResamples(w io.Writer, spec *experiment.Spec) error {
	if _, err := io.WriteString(w, bootstrap.IndicesHeader+"\n"); err != nil {
		return fmt.Errorf("results: validity resamples: %w", err)
	}
	samples, seed := spec.Analysis.Bootstrap.Resolve()
	if samples == 0 || len(spec.Personas) == 0 {
		return nil
	}
	if err := bootstrap.WriteIndices(w, "personas", seed, ValidityResampleKey("personas"), len(spec.Personas), samples); err != nil {
		return fmt.Errorf("results: validity resamples: %w", err)
	}
	if ref := spec.Reference; ref != nil && ref.Respondents != nil && ref.Respondents.Len() > 0 {
		n := ref.Respondents.Len()
		if err := bootstrap.WriteIndices(w, "respondents", seed, ValidityResampleKey("respondents"), n, samples); err != nil {
			return fmt.Errorf("results: validity resamples: %w", err)
		}
	}
	return nil
}
