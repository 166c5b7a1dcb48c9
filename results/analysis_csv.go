package results

import (
	"encoding/csv"
	"io"
	"strconv"
)

// ReliabilityHeader returns the header of reliability.csv.
func ReliabilityHeader() []string {
	return []string{"run_id", "model", "seed", "scale", "scale_name", "n_personas", "n_items", "n_items_used",
		"n_missing", "alpha", "std_alpha", "average_r", "omega_total", "alpha_expected", "omega_expected", "note"}
}

// ItemsHeader returns the header of items.csv.
func ItemsHeader() []string {
	return []string{"run_id", "model", "seed", "scale", "item_id", "reversed", "n", "mean", "sd", "used",
		"item_rest_r", "alpha_if_dropped", "modal_share"}
}

// AgreementHeader returns the header of agreement.csv.
func AgreementHeader() []string {
	return []string{"run_id", "model", "persona_id", "scale", "scale_name", "n_seeds", "mean", "sd", "min", "max",
		"range", "modal_share"}
}

// Stat formats a number as every CSV of results writes it (formatFloat), empty when undefined (nil).
func Stat(v *float64) string {
	if v == nil {
		return ""
	}
	return formatFloat(*v)
}

// formatFloat is the one way the CSV outputs write a number that is not a count: the shortest decimal that
// reads back as the same float64 (strconv's 'g' with precision -1, e.g. 0.7030184460573041, 1e-05, 3), so a
// file read back gives exactly the numbers silico computed. Only latency_ms is rounded (to 0.1 ms, formatLatency).
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func writeReliability(w io.Writer, runID string, rel []Reliability) error {
	return writeCSV(w, ReliabilityHeader(), len(rel), func(i int) []string {
		r := rel[i]
		return []string{runID, r.Model, strconv.FormatInt(r.Seed, 10), r.Scale, r.ScaleName, strconv.Itoa(r.Personas),
			strconv.Itoa(r.Items), strconv.Itoa(r.ItemsUsed), strconv.Itoa(r.Missing), Stat(r.Alpha), Stat(r.StdAlpha),
			Stat(r.AverageR), Stat(r.OmegaTotal), Stat(r.AlphaExpected), Stat(r.OmegaExpected), r.Note}
	})
}

func writeItems(w io.Writer, runID string, items []ItemStat) error {
	return writeCSV(w, ItemsHeader(), len(items), func(i int) []string {
		s := items[i]
		return []string{runID, s.Model, strconv.FormatInt(s.Seed, 10), s.Scale, s.ItemID, strconv.FormatBool(s.Reversed),
			strconv.Itoa(s.N), Stat(s.Mean), Stat(s.SD), strconv.FormatBool(s.Used), Stat(s.ItemRest),
			Stat(s.AlphaIfDropped), Stat(s.ModalShare)}
	})
}

func writeAgreement(w io.Writer, runID string, ag []Agreement) error {
	return writeCSV(w, AgreementHeader(), len(ag), func(i int) []string {
		a := ag[i]
		return []string{runID, a.Model, a.PersonaID, a.Scale, a.ScaleName, strconv.Itoa(a.Seeds), Stat(a.Mean),
			Stat(a.SD), Stat(a.Min), Stat(a.Max), Stat(a.Range()), Stat(a.ModalShare)}
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
