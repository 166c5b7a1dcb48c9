// Package results turns the records of a run into its outputs: results.jsonl and results.csv
// with one row per cell in submission order, summary.json, scales.csv with the mean score of every scale, and
// the psychometrics of Analysis: reliability.csv, items.csv and agreement.csv; the answer distributions of
// distributions.csv, and their comparison with a human reference in reference.csv and reference_scales.csv.
//
// Every column of a row except run_id, latency_ms, attempts, tries and cached is a fact of the cell: identical
// for every concurrency setting, worker count, resume and response cache. CellColumns returns exactly those
// columns. The columns are one table, rowColumns (columns.go), from which the header, the CSV values, the
// JSON form and CellColumns all follow.
package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

// ShownDelimiter joins the option ids of the shown column.
const ShownDelimiter = "|"

// notRunMessage is the error message of a cell that has no record.
const notRunMessage = "no result recorded"

// Row is one output row: a cell of the grid and what its call produced. Its columns (names, formatting, JSON
// form) are the table rowColumns, in field order.
type Row struct {
	RunID     string
	Index     int
	CellID    string
	Model     string
	Seed      int64
	ItemID    string
	ItemText  string
	Scale     string
	Reversed  bool
	PersonaID string
	// Variant is the id of the wording the cell asked (experiment.OriginalVariant for the item's own text)
	// and PromptVariant that of its prompt; each is empty when the spec has no such variants.
	Variant       string
	PromptVariant string
	// Order is the order the cell showed its options in: as_written, reversed or shuffled.
	Order string
	// Shown are the canonical ids of the options in the order the cell showed them, joined with '|'.
	Shown string
	// ShownPosition is the 1-based position at which the cell showed its written answer; nil without one.
	ShownPosition *int
	Status        string
	OptionID      string
	OptionText    string
	// Score is the option's weight, reversed where the item is (a negated wording variant: where it is not, see
	// experiment.Spec.CellScore); nil when the cell has none (not ok, or an
	// option ignored for scale). Empty in CSV, null in JSON.
	Score      *int
	Raw        string
	ErrorClass string
	// ErrorCode is the provider's error code or type of a failed call (secrets removed), empty otherwise.
	ErrorCode        string
	ErrorMessage     string
	PromptTokens     int
	CompletionTokens int
	CostUSD          usage.USD
	LatencyMS        float64
	// Attempts counts the requests sent for the cell, probes of an outage and rate-limited ones included;
	// Tries the ones charged to it against run.max_attempts. Both add up over --retry-failed executions.
	Attempts int
	Tries    int
	Cached   bool
	// ImageSHA256 are the SHA-256 digests of the pictures the cell sent, joined with ','; empty without pictures.
	ImageSHA256 string
	// FinishReason is why the provider stopped generating ("stop", "length", "content_filter"); empty when it
	// said nothing or there was no answer.
	FinishReason string
	// Schema is "valid" or "invalid" for a json_schema answer (see store.Record.Schema), empty otherwise.
	Schema string
	// Probs is the cell's probability of each of its item's options, in the order of Options, summing to 1;
	// nil when the cell has no distribution. In JSON an object of option id to probability ("probs"); in CSV
	// one p_<option id> column per option id of the spec.
	Probs []float64
	// Options are the ids of the cell's item's options (spec.OptionsFor(item)), in order.
	Options []string
	// Coverage is the probability the model put on valid option labels; Entropy the distribution's entropy in
	// bits; TopOption its most likely option; ExpectedScore Σ p·score over the options that score (reversed
	// items reversed); TopAgrees whether TopOption is the written answer (nil without a written option). All
	// nil or empty when the cell has no distribution.
	Coverage *float64
	// ProbsSource says where Probs come from: "logprobs" or "verbalized" (experiment.ProbsFromLogprobs,
	// ProbsFromVerbalized) when the cell's answer mode records probabilities, whether or not this cell got them;
	// empty for modes that record none. ProbsSum is the raw sum of a verbalized cell's stated probabilities
	// before normalising (nil otherwise, and when the statement was unusable).
	ProbsSource   string
	ProbsSum      *float64
	Entropy       *float64
	TopOption     string
	ExpectedScore *float64
	TopAgrees     *bool
	// ServedModel is the model the provider says answered and SystemFingerprint OpenAI's system_fingerprint
	// (see store.Record.ServedModel); empty when unknown.
	ServedModel, SystemFingerprint string
}

// Header returns the CSV header: the column names in order, the same as the JSON keys (but probs, which
// HeaderFor spreads over p_<option id> columns).
func Header() []string {
	out := make([]string, 0, len(rowColumns))
	for _, c := range rowColumns {
		if c.csv != nil {
			out = append(out, c.name)
		}
	}
	return out
}

// HeaderFor is the CSV header of spec's results.csv: Header, then p_<option id> for every option id of the
// spec's items, in order of first appearance, when a model of the spec records option probabilities.
func HeaderFor(spec *experiment.Spec) []string {
	return append(Header(), probColumns(spec)...)
}

// probColumns are the p_<option id> columns of spec; none when no model records option probabilities.
func probColumns(spec *experiment.Spec) []string {
	logprobs := false
	for _, m := range spec.Models {
		logprobs = logprobs || spec.AnswerFor(m).ProbsSource() != ""
	}
	if !logprobs {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for it := range spec.Questionnaire.Items {
		for _, o := range spec.OptionsFor(it).Options {
			if !seen[o.ID] {
				seen[o.ID] = true
				out = append(out, "p_"+o.ID)
			}
		}
	}
	return out
}

// BuildRow makes the row of record r of a run. r.Index must be a cell of spec (0 <= Index < spec.NumCells()).
func BuildRow(spec *experiment.Spec, runID string, r store.Record) Row {
	c := spec.Cell(r.Index)
	item := &spec.Questionnaire.Items[c.Item]
	row := Row{
		RunID:             runID,
		Index:             r.Index,
		CellID:            spec.CellID(c),
		Model:             spec.Models[c.Model].ID,
		Seed:              spec.Seeds[c.Seed],
		ItemID:            item.ID,
		ItemText:          item.Text,
		Scale:             item.Scale,
		Reversed:          item.Reversed,
		PersonaID:         spec.Personas[c.Persona].ID,
		Status:            r.Status,
		OptionID:          r.OptionID,
		Raw:               r.Raw,
		ErrorClass:        r.ErrorClass,
		ErrorCode:         r.ErrorCode,
		ErrorMessage:      r.ErrorMessage,
		PromptTokens:      r.PromptTokens,
		CompletionTokens:  r.CompletionTokens,
		CostUSD:           r.CostUSD,
		LatencyMS:         r.LatencyMS,
		Attempts:          r.Attempts,
		Tries:             r.Tries,
		Cached:            r.Cached,
		ImageSHA256:       r.ImageSHA256,
		FinishReason:      r.FinishReason,
		Schema:            r.Schema,
		ServedModel:       r.ServedModel,
		SystemFingerprint: r.SystemFingerprint,
		ProbsSource:       spec.CellAnswer(c).ProbsSource(),
	}
	if row.ProbsSource == experiment.ProbsFromVerbalized && len(r.Probs) > 0 {
		row.ProbsSum = finite(r.ProbsSum)
	}
	if spec.HasVariants() {
		row.Variant = spec.VariantID(c)
		row.ItemText = spec.QuestionText(c)
	}
	if len(spec.PromptVariants) > 0 {
		row.PromptVariant = spec.PromptVariantID(c)
	}
	shown := spec.Shown(c)
	row.Order, row.Shown = string(shown.Order), strings.Join(shown.CanonicalIDs(), ShownDelimiter)
	if k := shown.Position(r.OptionID); k > 0 && r.OptionID != "" {
		row.ShownPosition = &k
	}
	opts := spec.OptionsFor(c.Item).Options
	if r.OptionID != "" {
		for _, o := range opts {
			if o.ID == r.OptionID {
				row.OptionText = o.Text
				break
			}
		}
	}
	if r.Status == store.StatusOK {
		if s, ok := spec.CellScore(c, r.OptionID); ok {
			row.Score = &s
		}
	}
	if len(r.Probs) == len(opts) && len(opts) > 0 {
		row.Probs, row.Coverage = r.Probs, finite(r.Coverage)
		row.Options = make([]string, len(opts))
		top := 0
		for k, o := range opts {
			row.Options[k] = o.ID
			if r.Probs[k] > r.Probs[top] {
				top = k
			}
		}
		row.TopOption = opts[top].ID
		if h, err := psychometrics.Entropy(r.Probs); err == nil {
			row.Entropy = &h
		}
		row.ExpectedScore = expectedCellScore(spec, c, r.Probs)
		if r.Status == store.StatusOK && r.OptionID != "" {
			agrees := row.TopOption == r.OptionID
			row.TopAgrees = &agrees
		}
	}
	return row
}

// notRun is the record standing in for cell i when the run has none.
func notRun(i int) store.Record {
	return store.Record{Index: i, Status: store.StatusFailed, ErrorClass: errclass.NotRun, ErrorMessage: notRunMessage}
}

// Values returns the row as CSV fields, in Header order, formatted as in results.csv.
func (r Row) Values() []string {
	out := make([]string, 0, len(rowColumns))
	for _, c := range rowColumns {
		if c.csv != nil {
			out = append(out, c.csv(&r))
		}
	}
	return out
}

// ValuesFor is Values followed by the row's probability in each of the p_<option id> columns cols (HeaderFor's
// tail); empty where its item has no such option or the cell no distribution.
func (r Row) ValuesFor(cols []string) []string {
	v := r.Values()
	for _, c := range cols {
		id := strings.TrimPrefix(c, "p_")
		cell := ""
		if k := slices.Index(r.Options, id); k >= 0 && k < len(r.Probs) {
			cell = formatFloat(r.Probs[k])
		}
		v = append(v, cell)
	}
	return v
}

// CellColumns returns the columns of r that are facts of the cell, formatted as in results.csv: every column
// of Values except those that describe how one run got the answer (run_id, latency_ms, attempts, tries and
// cached: the columns marked run), then the option probabilities, which results.csv spreads over the
// p_<option id> columns, as the store encodes them. Two runs of the same spec — at any concurrency, on any
// number of workers, resumed any number of times, answered by the provider or by the response cache — have
// equal CellColumns for every row; tests compare outputs with it.
func CellColumns(r Row) []string {
	out := make([]string, 0, len(rowColumns))
	for _, c := range rowColumns {
		if !c.run && c.csv != nil {
			out = append(out, c.csv(&r))
		}
	}
	for _, c := range rowColumns {
		if !c.run && c.csv == nil {
			out = append(out, c.cell(&r))
		}
	}
	return out
}

// probsJSON is a row's option probabilities in JSON: an object of option id to probability in the item's option
// order, null without a distribution.
type probsJSON struct {
	ids   []string
	probs []float64
}

// MarshalJSON writes {"<id>": p, ...} in option order, or null.
func (p probsJSON) MarshalJSON() ([]byte, error) {
	if len(p.probs) == 0 {
		return []byte("null"), nil
	}
	b := []byte{'{'}
	for i, id := range p.ids {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(id)
		if err != nil {
			return nil, err
		}
		b = append(b, k...)
		b = append(b, ':')
		if v := p.probs[i]; math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("probability of option %s: unsupported value: %s", id, strconv.FormatFloat(v, 'g', -1, 64))
		}
		b = strconv.AppendFloat(b, p.probs[i], 'g', -1, 64)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON wrote, keeping the order of the keys.
func (p *probsJSON) UnmarshalJSON(b []byte) error {
	*p = probsJSON{}
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil || t == nil {
		return err
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var v float64
		if err := dec.Decode(&v); err != nil {
			return err
		}
		id, _ := k.(string)
		p.ids, p.probs = append(p.ids, id), append(p.probs, v)
	}
	return nil
}

// UnmarshalJSON reads a results.jsonl line, the option probabilities included. Keys that are no column are
// ignored; a column without its key keeps its zero value.
func (r *Row) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*r = Row{}
	for i := range rowColumns {
		c := &rowColumns[i]
		v, ok := obj[c.name]
		if !ok {
			continue
		}
		if err := c.decode(r, v); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// MarshalJSON writes the row as one results.jsonl line (without the newline): keys in column order, cost and
// latency formatted as in the CSV, HTML characters in text left unescaped.
func (r Row) MarshalJSON() ([]byte, error) {
	return r.appendJSON(nil)
}

// ReadJSONL calls fn with every row of a results.jsonl stream, in order.
func ReadJSONL(r io.Reader, fn func(Row) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var row Row
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return fmt.Errorf("results: line %d: %w", line, err)
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("results: read jsonl: %w", err)
	}
	return nil
}

// formatLatency writes milliseconds with one decimal: 12.345 → "12.3".
func formatLatency(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
