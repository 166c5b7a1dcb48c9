package wire

import (
	"fmt"
	"slices"
	"strings"

	"github.com/silicolab/silico/usage"
)

// Summary is summary.json, and the summary in ExportOutput and Result: counts, tokens and cost of a run, overall
// and per model.
type Summary struct {
	RunID string `json:"run_id"`
	Name  string `json:"name"`
	// Kind is "embed" for an embed spec's run (outputs of ExportEmbed), empty for a chat run.
	Kind string `json:"kind,omitempty"`
	// Cells is the number of cells of the grid; OK + Unparsed + Failed == Cells (cells never run count as failed).
	Cells    int `json:"cells"`
	OK       int `json:"ok"`
	Unparsed int `json:"unparsed"`
	Failed   int `json:"failed"`
	// Cached counts the cells answered from the response cache; their cost is in saved_usd, not in cost_usd.
	Cached int `json:"cached"`
	// Length counts the answers cut at the completion cap (finish_reason length), whether or not they still
	// named an option; ContentFiltered those the provider's content filter withheld (finish_reason
	// content_filter, unparsed with error class ContentFiltered).
	Length          int `json:"length"`
	ContentFiltered int `json:"content_filtered"`
	usage.Usage
	// BatchSavedUSD is what the cells of models in batch mode would have cost more as synchronous calls.
	BatchSavedUSD  usage.USD `json:"batch_saved_usd,omitempty"`
	ElapsedSeconds float64   `json:"elapsed_seconds"`
	// Errors are the first distinct errors in submission order, at most 5, each "Class: message".
	Errors []string `json:"errors"`
	// Models has one entry per model of the spec, in spec order.
	Models []ModelSummary `json:"models"`
	// Outputs are the files Export writes for the run, summary.json last; empty for an embed run's summary.
	Outputs []string `json:"outputs,omitempty"`
	// Warnings are what makes the results weaker than they look, one sentence each: a model whose cells were
	// answered by more than one served model (ServedWarning), a model whose logprobs put less than LowCoverage
	// of the label token's mass on the labels shown (CoverageWarning), several seeds at temperature 0
	// (experiment.Spec.GreedySeeds). Absent when there is none.
	Warnings []string `json:"warnings,omitempty"`
}

// Served counts the cells of a model answered by one served model with one system fingerprint (see
// store.Record.ServedModel); either may be empty (the provider sent none).
type Served struct {
	ServedModel       string `json:"served_model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Cells             int    `json:"cells"`
}

// ServedModels are the distinct non-empty served models among served, in order of first appearance.
func ServedModels(served []Served) []string {
	var out []string
	for _, s := range served {
		if s.ServedModel != "" && !slices.Contains(out, s.ServedModel) {
			out = append(out, s.ServedModel)
		}
	}
	return out
}

// ServedWarning is the warning for model m when its cells were answered by more than one served model, ""
// otherwise: its answers mix models (a name moved to a new snapshot during the run, or cached answers of an
// older one were reused), so differences between its cells may be differences between models.
func ServedWarning(m ModelSummary) string {
	names := ServedModels(m.Served)
	if len(names) < 2 {
		return ""
	}
	return fmt.Sprintf("model %s was answered by %d served models (%s): its cells mix models; compare them by the "+
		"served_model column", m.Model, len(names), strings.Join(names, ", "))
}

// LowCoverage is the mean coverage under which a model's logprob probabilities are warned about: below it, the
// labels shown get less than half of the mass at the token where the model writes its answer, so the
// probabilities describe a minority of what it starts its answers with (often a label the prompt did not show,
// or a preamble before the label).
const LowCoverage = 0.5

// CoverageWarning is the warning for model m when its answered logprob cells put on average less than
// LowCoverage of the label token's mass on the labels shown, "" otherwise.
func CoverageWarning(m ModelSummary) string {
	if m.Coverage == nil || *m.Coverage >= LowCoverage {
		return ""
	}
	return fmt.Sprintf("model %s put on average %.2f of the label token's probability on the labels the prompt showed "+
		"(coverage, over %d cells; below %.1f): its option probabilities describe a minority of how it starts its answers; "+
		"see what its answers start with (the raw column) and set answer.prefix, or use answer: {mode: samples}",
		m.Model, *m.Coverage, m.CoverageCells, LowCoverage)
}

// ModelSummary is the part of a Summary that concerns one model.
type ModelSummary struct {
	Model    string `json:"model"`
	Cells    int    `json:"cells"`
	OK       int    `json:"ok"`
	Unparsed int    `json:"unparsed"`
	Failed   int    `json:"failed"`
	Cached   int    `json:"cached"`
	// Length and ContentFiltered are as in Summary.
	Length          int `json:"length"`
	ContentFiltered int `json:"content_filtered"`
	usage.Usage
	BatchSavedUSD usage.USD `json:"batch_saved_usd,omitempty"`
	// Served are the model's answered cells by served model and system fingerprint, most cells first (ties by
	// served model, then fingerprint); cells without either (failed, or recorded before they were kept) are
	// not counted. Absent when there is none.
	Served []Served `json:"served,omitempty"`
	// Coverage is the mean, over the model's CoverageCells answered cells whose probabilities come from logprobs,
	// of the probability the label token put on the labels the cell showed (results' coverage column; 0 for a
	// cell where none was found). Absent when the model reads no logprobs.
	Coverage      *float64 `json:"coverage,omitempty"`
	CoverageCells int      `json:"coverage_cells,omitempty"`
}
