package design

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
)

// OrderBiasHeader returns the header of order_bias.csv.
func OrderBiasHeader() []string {
	return []string{"run_id", "model", "scale", "item_id", "n", "n_personas", "k", "position_shares",
		"n_as_written", "n_reversed", "n_shuffled", "weight_as_written", "weight_reversed", "weight_shuffled",
		"weight_diff", "weight_diff_lo", "weight_diff_hi", "primacy_recency", "primacy_recency_lo", "primacy_recency_hi",
		"first_effect", "first_effect_lo", "first_effect_hi",
		"n_expected_as_written", "n_expected_reversed", "n_expected_shuffled",
		"expected_weight_as_written", "expected_weight_reversed", "expected_weight_shuffled",
		"expected_weight_diff", "expected_weight_diff_lo", "expected_weight_diff_hi",
		"marginal_p", "marginal_cells", "marginal_source"}
}

// VarianceHeader returns the header of variance.csv: per term of Terms() its levels, df, ss and share.
func VarianceHeader() []string {
	h := []string{"run_id", "model", "scale", "n", "balanced"}
	for _, t := range Terms() {
		h = append(h, t+"_levels", t+"_df", t+"_ss", t+"_share")
	}
	return append(h, "residual_df", "residual_ss", "residual_share", "total_ss")
}

// Num formats a number so it reads back exactly: the shortest decimal that round-trips (strconv 'g', -1);
// empty when undefined (nil).
func Num(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// nums joins numbers with ";", as the probs columns of the other CSVs do.
func nums(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = num(x)
	}
	return strings.Join(s, ";")
}

// WriteOrderBias writes order_bias.csv: the header and one record per row.
func WriteOrderBias(w io.Writer, runID string, rows []OrderBiasRow) error {
	return writeCSV(w, OrderBiasHeader(), len(rows), func(i int) []string {
		r := rows[i]
		rec := []string{runID, r.Model, r.Scale, r.Item, strconv.Itoa(r.N), strconv.Itoa(r.Personas), strconv.Itoa(r.K),
			nums(r.PositionShares)}
		for _, n := range r.NOrder {
			rec = append(rec, strconv.Itoa(n))
		}
		for _, m := range r.WeightOrder {
			rec = append(rec, Num(m))
		}
		for _, iv := range []Interval{r.WeightDiff, r.PrimacyRecency, r.FirstEffect} {
			rec = append(rec, Num(iv.Value), Num(iv.Lo), Num(iv.Hi))
		}
		for _, n := range r.NExpected {
			rec = append(rec, strconv.Itoa(n))
		}
		for _, m := range r.ExpectedWeightOrder {
			rec = append(rec, Num(m))
		}
		return append(rec, Num(r.ExpectedWeightDiff.Value), Num(r.ExpectedWeightDiff.Lo), Num(r.ExpectedWeightDiff.Hi),
			nums(r.Marginal), strconv.Itoa(r.MarginalCells), r.MarginalSource)
	})
}

// WriteVariance writes variance.csv: the header and one record per row.
func WriteVariance(w io.Writer, runID string, rows []VarianceRow) error {
	return writeCSV(w, VarianceHeader(), len(rows), func(i int) []string {
		r := rows[i]
		rec := []string{runID, r.Model, r.Scale, strconv.Itoa(r.N), strconv.FormatBool(r.Balanced)}
		for _, t := range r.Terms {
			rec = append(rec, strconv.Itoa(t.Levels), strconv.Itoa(t.DF), num(t.SS), Num(t.Share))
		}
		return append(rec, strconv.Itoa(r.Residual.DF), num(r.Residual.SS), Num(r.Residual.Share), num(r.TotalSS))
	})
}

// writeCSV writes header and then n records made by rec.
func writeCSV(w io.Writer, header []string, n int, rec func(int) []string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	for i := range n {
		if err := cw.Write(rec(i)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
