package results

import (
	"io"
	"strconv"
	"strings"
)

// DistributionsHeader returns the header of distributions.csv: one line per model × item × persona × option.
func DistributionsHeader() []string {
	return []string{"run_id", "model", "item_id", "persona_id", "option_id", "p", "n_cells", "source"}
}

// ReferenceHeader returns the header of reference.csv: one line per model × item × group.
func ReferenceHeader() []string {
	return []string{"run_id", "model", "item_id", "scale", "group", "source", "n_cells", "n_humans", "options",
		"model_p", "human_p", "w1", "jsd", "model_entropy", "human_entropy", "model_mean", "human_mean"}
}

// ReferenceScalesHeader returns the header of reference_scales.csv: one line per model × scale × group.
func ReferenceScalesHeader() []string {
	return []string{"run_id", "model", "scale", "scale_name", "group", "n_personas", "n_items_used", "model_alpha",
		"model_omega_total", "n_humans", "human_n_items_used", "human_alpha", "human_omega_total", "note"}
}

// probs formats a distribution as reference.csv writes it: each probability as formatFloat writes it, joined with ";"
// in the order of the options column; empty when there is none.
func probs(p []float64) string {
	if p == nil {
		return ""
	}
	s := make([]string, len(p))
	for i, v := range p {
		s[i] = formatFloat(v)
	}
	return strings.Join(s, ";")
}

// writeDistributions writes distributions.csv in long form, one option per line, because items may have
// options of their own: a column per option would mean nothing on the lines of another item.
func writeDistributions(w io.Writer, runID string, ds []Distribution) error {
	type line struct {
		d *Distribution
		k int
	}
	var lines []line
	for i := range ds {
		for k := range ds[i].Options {
			lines = append(lines, line{&ds[i], k})
		}
	}
	return writeCSV(w, DistributionsHeader(), len(lines), func(i int) []string {
		d, k := lines[i].d, lines[i].k
		p := ""
		if d.PMF.P != nil {
			p = formatFloat(d.PMF.P[k])
		}
		return []string{runID, d.Model, d.ItemID, d.PersonaID, d.Options[k], p, strconv.Itoa(d.PMF.Cells), d.PMF.Source()}
	})
}

func writeReference(w io.Writer, runID string, rows []ReferenceRow) error {
	return writeCSV(w, ReferenceHeader(), len(rows), func(i int) []string {
		r := rows[i]
		return []string{runID, r.Model, r.ItemID, r.Scale, r.Group, r.Answers.Source(), strconv.Itoa(r.Answers.Cells),
			strconv.Itoa(r.Humans), strings.Join(r.Options, ";"), probs(r.Answers.P), probs(r.Human), Stat(r.W1),
			Stat(r.JSD), Stat(r.ModelEntropy), Stat(r.HumanEntropy), Stat(r.ModelMean), Stat(r.HumanMean)}
	})
}

func writeReferenceScales(w io.Writer, runID string, rows []ReferenceScale) error {
	return writeCSV(w, ReferenceScalesHeader(), len(rows), func(i int) []string {
		r := rows[i]
		return []string{runID, r.Model, r.Scale, r.ScaleName, r.Group, strconv.Itoa(r.Personas), strconv.Itoa(r.ItemsUsed),
			Stat(r.ModelAlpha), Stat(r.ModelOmega), strconv.Itoa(r.Humans), strconv.Itoa(r.HumanItemsUsed),
			Stat(r.HumanAlpha), Stat(r.HumanOmega), r.Note}
	})
}
