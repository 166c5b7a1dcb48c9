package results

import (
	"io"
	"slices"
	"strconv"
	"strings"
)

// DistributionsHeader returns the header of distributions.csv: one line per model × item × persona × option.
func DistributionsHeader() []string {
	return []string{"run_id", "model", "item_id", "persona_id", "option_id", "p", "n_cells", "source"}
}

// ReferenceHeader returns the header of reference.csv: one line per model × item × group. A column x with an
// interval is followed by x_lo and x_hi, the 95 % bootstrap interval (empty without resamples); a perfect_*
// floor's are the 2.5 % and 97.5 % quantiles of its draws.
func ReferenceHeader() []string {
	return []string{"run_id", "model", "item_id", "scale", "group", "source", "n_cells", "n_humans", "options",
		"model_p", "human_p", "model_nonresponse", "human_nonresponse",
		"w1", "w1_lo", "w1_hi", "alignment", "alignment_lo", "alignment_hi", "tvd", "simbench", "simbench_lo", "simbench_hi",
		"jsd", "jsd_lo", "jsd_hi", "uniform_w1", "uniform_alignment", "uniform_tvd", "split_half_w1", "split_half_alignment",
		"perfect_w1", "perfect_w1_lo", "perfect_w1_hi", "perfect_alignment", "perfect_alignment_lo", "perfect_alignment_hi",
		"perfect_tvd", "perfect_tvd_lo", "perfect_tvd_hi", "perfect_simbench", "perfect_simbench_lo", "perfect_simbench_hi",
		"perfect_jsd", "perfect_jsd_lo", "perfect_jsd_hi", "model_entropy", "human_entropy", "model_mean", "model_mean_lo", "model_mean_hi", "human_mean", "human_mean_lo", "human_mean_hi"}
}

// ReferenceScalesHeader returns the header of reference_scales.csv: one line per model × scale × group, then
// after all of them one line per model × group of scale "all" over every item (α and ω empty). The columns from
// n_items_compared on are the means over the scale's items of reference.csv's columns of the same name; w1,
// alignment and simbench have 95 % bootstrap intervals, each resample's mean over the scale's items of the item's
// figure on it, and the perfect_* floors the 2.5 % and 97.5 % quantiles of the mean over the items on each draw.
func ReferenceScalesHeader() []string {
	return []string{"run_id", "model", "scale", "scale_name", "group", "n_personas", "n_items_used",
		"model_alpha", "model_alpha_lo", "model_alpha_hi", "model_omega_total", "model_omega_total_lo", "model_omega_total_hi",
		"n_humans", "human_n_items_used", "human_alpha", "human_alpha_lo", "human_alpha_hi",
		"human_omega_total", "human_omega_total_lo", "human_omega_total_hi",
		"n_items_compared", "w1", "w1_lo", "w1_hi", "alignment", "alignment_lo", "alignment_hi", "tvd",
		"simbench", "simbench_lo", "simbench_hi", "uniform_w1", "uniform_alignment", "uniform_tvd",
		"split_half_w1", "split_half_alignment", "perfect_w1", "perfect_w1_lo", "perfect_w1_hi",
		"perfect_alignment", "perfect_alignment_lo", "perfect_alignment_hi", "perfect_tvd", "perfect_tvd_lo", "perfect_tvd_hi",
		"perfect_simbench", "perfect_simbench_lo", "perfect_simbench_hi", "note"}
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
		iv := func(v *float64, k int) []string {
			return []string{Stat(v), Stat(r.Intervals[k].Lo), Stat(r.Intervals[k].Hi)}
		}
		return slices.Concat([]string{runID, r.Model, r.ItemID, r.Scale, r.Group, r.Answers.Source(), strconv.Itoa(r.Answers.Cells),
			strconv.Itoa(r.Humans), strings.Join(r.Options, ";"), probs(r.Answers.P), probs(r.Human),
			Stat(r.ModelNonresponse), Stat(r.HumanNonresponse)},
			iv(r.W1, IntervalW1), iv(r.Alignment, IntervalAlignment), []string{Stat(r.TVD)}, iv(r.SimBench, IntervalSimBench), iv(r.JSD, IntervalJSD),
			[]string{Stat(r.UniformW1), Stat(r.UniformAlignment), Stat(r.UniformTVD), Stat(r.SplitHalfW1),
				Stat(r.SplitHalfAlignment)}, floorCells(r.Perfect[:]), []string{Stat(r.ModelEntropy), Stat(r.HumanEntropy)},
			iv(r.ModelMean, IntervalModelMean), iv(r.HumanMean, IntervalHumanMean))
	})
}

func writeReferenceScales(w io.Writer, runID string, rows []ReferenceScale) error {
	return writeCSV(w, ReferenceScalesHeader(), len(rows), func(i int) []string {
		r := rows[i]
		iv := func(v *float64, k int) []string {
			return []string{Stat(v), Stat(r.AlphaOmega[k].Lo), Stat(r.AlphaOmega[k].Hi)}
		}
		out := slices.Concat([]string{runID, r.Model, r.Scale, r.ScaleName, r.Group, strconv.Itoa(r.Personas), strconv.Itoa(r.ItemsUsed)},
			iv(r.ModelAlpha, 0), iv(r.ModelOmega, 1), []string{strconv.Itoa(r.Humans), strconv.Itoa(r.HumanItemsUsed)},
			iv(r.HumanAlpha, 2), iv(r.HumanOmega, 3), []string{strconv.Itoa(r.ItemsCompared)})
		for i, v := range r.Means {
			out = append(out, Stat(v))
			if hasMeanInterval(i) {
				out = append(out, Stat(r.MeanIntervals[i].Lo), Stat(r.MeanIntervals[i].Hi))
			}
		}
		return append(append(out, floorCells(r.Perfect[:])...), r.Note)
	})
}

// floorCells are the cells of floors: each one's mean, lo and hi.
func floorCells(floors []Floor) []string {
	out := make([]string, 0, 3*len(floors))
	for _, f := range floors {
		out = append(out, Stat(f.Mean), Stat(f.Lo), Stat(f.Hi))
	}
	return out
}
