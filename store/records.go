package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/silicolab/silico/usage"
)

// This file holds what both back ends share of the records: the columns of the cells table (recordColumns),
// the parts of the statements built from them that are the same in both dialects, the scan of their rows, the
// checks of a batch, the paged scan and the sums of Counts. sqlite.go and postgres.go hold only what differs
// (sqliteUpsert, pgUpsert: each dialect's write of records from the same columns).

// ErrNotFound is returned when a run or a record does not exist.
var ErrNotFound = errors.New("store: not found")

// ErrSpecConflict is returned by SaveRun when a different spec is already saved under the run id.
var ErrSpecConflict = errors.New("a different spec is already saved under this run id")

// scanPage is how many records Scan reads per query. Between pages no connection or read transaction is
// held, so the callback may be slow or use the store itself, and WAL checkpoints are never starved.
const scanPage = 1024

// recordColumn is one column of the cells table (cells in SQLite, silico_cells in PostgreSQL) beside run: its
// name, how a record's value is bound when it is written, and where a read puts it.
type recordColumn struct {
	name string
	// pgType is the PostgreSQL type of the column's array in the batch upsert (bigint, text, float8, boolean).
	pgType string
	// carried says a written record's value adds the count of the same name that the carry table keeps of
	// the cell's earlier executions (see DeleteFailed): attempts and tries.
	carried bool
	// value is the record's value as a statement binds it; array the values of a batch of records, one
	// PostgreSQL array parameter.
	value func(r *Record) any
	array func(recs []Record) any
	// dest is where a row's value is scanned; decode, when set, turns it into the record's field afterwards.
	dest   func(s *scannedRecord) any
	decode func(s *scannedRecord) error
}

// scannedRecord is a record being read, with the columns that are stored in another form than the record
// holds them.
type scannedRecord struct {
	Record
	probs string
	cost  float64
}

// keyColumn is the column of recordColumns that, with run, is the cells table's primary key: the cell index.
const keyColumn = "idx"

// recordColumns are the columns of the cells table beside run, in the order of the statements that write and
// read them. A new record column is one line here, plus the migrations of both
// schemas that add it.
var recordColumns = []recordColumn{
	intColumn("idx", func(r *Record) *int { return &r.Index }),
	textColumn("status", func(r *Record) *string { return &r.Status }),
	textColumn("option_id", func(r *Record) *string { return &r.OptionID }),
	textColumn("raw", func(r *Record) *string { return &r.Raw }),
	textColumn("candidates", func(r *Record) *string { return &r.Candidates }),
	textColumn("error_class", func(r *Record) *string { return &r.ErrorClass }),
	textColumn("error_code", func(r *Record) *string { return &r.ErrorCode }),
	textColumn("error_message", func(r *Record) *string { return &r.ErrorMessage }),
	intColumn("prompt_tokens", func(r *Record) *int { return &r.PromptTokens }),
	intColumn("completion_tokens", func(r *Record) *int { return &r.CompletionTokens }),
	costColumn("cost_usd", func(r *Record) *usage.USD { return &r.CostUSD }),
	realColumn("latency_ms", func(r *Record) *float64 { return &r.LatencyMS }),
	intColumn("attempts", func(r *Record) *int { return &r.Attempts }).addsCarried(),
	boolColumn("cached", func(r *Record) *bool { return &r.Cached }),
	textColumn("image_sha256", func(r *Record) *string { return &r.ImageSHA256 }),
	textColumn("finish_reason", func(r *Record) *string { return &r.FinishReason }),
	textColumn("schema", func(r *Record) *string { return &r.Schema }),
	probsColumn(),
	realColumn("coverage", func(r *Record) *float64 { return &r.Coverage }),
	intColumn("tries", func(r *Record) *int { return &r.Tries }).addsCarried(),
	realColumn("probs_sum", func(r *Record) *float64 { return &r.ProbsSum }),
	textColumn("served_model", func(r *Record) *string { return &r.ServedModel }),
	textColumn("system_fingerprint", func(r *Record) *string { return &r.SystemFingerprint }),
}

// addsCarried marks c carried (see recordColumn.carried).
func (c recordColumn) addsCarried() recordColumn {
	c.carried = true
	return c
}

// field is a column that holds a field of Record (f) as is, bound as conv of it.
func field[T, A any](name, pgType string, f func(*Record) *T, conv func(T) A) recordColumn {
	return recordColumn{name: name, pgType: pgType,
		value: func(r *Record) any { return conv(*f(r)) },
		array: func(recs []Record) any {
			out := make([]A, len(recs))
			for i := range recs {
				out[i] = conv(*f(&recs[i]))
			}
			return out
		},
		dest: func(s *scannedRecord) any { return f(&s.Record) },
	}
}

func same[T any](v T) T { return v }

func intColumn(name string, f func(*Record) *int) recordColumn {
	return field(name, "bigint", f, func(v int) int64 { return int64(v) })
}

func textColumn(name string, f func(*Record) *string) recordColumn {
	return field(name, "text", f, same[string])
}

func realColumn(name string, f func(*Record) *float64) recordColumn {
	return field(name, "float8", f, same[float64])
}

// costColumn is an amount of money stored as float64 dollars: Dollars reads back the exact picodollars of any
// cell's cost (see usage.Dollars), and sums are taken over picoCost.
func costColumn(name string, f func(*Record) *usage.USD) recordColumn {
	c := field(name, "float8", f, usage.USD.Float)
	c.dest = func(s *scannedRecord) any { return &s.cost }
	c.decode = func(s *scannedRecord) error {
		*f(&s.Record) = usage.Dollars(s.cost)
		return nil
	}
	return c
}

// picoCost is the SQL of a record's cost in whole picodollars (an integer in both schemas), so that a sum of
// costs in a statement is the exact sum of the records' costs, as usage.USD adds them.
const picoCost = "CAST(round(cost_usd * 1e12) AS BIGINT)"

func boolColumn(name string, f func(*Record) *bool) recordColumn {
	return field(name, "boolean", f, same[bool])
}

// probsColumn is the option probabilities, stored as text (EncodeProbs).
func probsColumn() recordColumn {
	c := field("probs", "text", func(r *Record) *[]float64 { return &r.Probs }, EncodeProbs)
	c.dest = func(s *scannedRecord) any { return &s.probs }
	c.decode = func(s *scannedRecord) (err error) {
		s.Probs, err = DecodeProbs(s.probs)
		return err
	}
	return c
}

// recordColumnNames is the names of recordColumns, comma-separated, as the statements list them.
func recordColumnNames() string {
	names := make([]string, len(recordColumns))
	for i, c := range recordColumns {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// upsertSet is the ON CONFLICT clause of a write of records into table: a record replaces the row of its cell,
// every column but the key, unless it failed and the row holds an answer.
func upsertSet(table string) string {
	var b strings.Builder
	b.WriteString("\nON CONFLICT (run, idx) DO UPDATE SET\n\t")
	sep := ""
	for _, c := range recordColumns {
		if c.name == keyColumn {
			continue
		}
		fmt.Fprintf(&b, "%s%s = excluded.%s", sep, c.name, c.name)
		sep = ", "
	}
	fmt.Fprintf(&b, "\nWHERE excluded.status <> '%s' OR %s.status = '%s'", StatusFailed, table, StatusFailed)
	return b.String()
}

// scanRecords reads all rows of a query of recordColumns into out. The caller closes rows.
func scanRecords(rows statRows, out []Record) ([]Record, error) {
	dest := make([]any, len(recordColumns))
	for rows.Next() {
		var s scannedRecord
		for i, c := range recordColumns {
			dest[i] = c.dest(&s)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		for _, c := range recordColumns {
			if c.decode == nil {
				continue
			}
			if err := c.decode(&s); err != nil {
				return nil, fmt.Errorf("cell %d: %s: %w", s.Index, c.name, err)
			}
		}
		out = append(out, s.Record)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// checkBatch rejects a batch that no back end may write, before any of it is.
func checkBatch(run string, b Batch) error {
	if run == "" && len(b.Records) > 0 {
		return errors.New("store: put: empty run id")
	}
	for i := range b.Records {
		if err := b.Records[i].validate(); err != nil {
			return fmt.Errorf("store: put %s: %w", run, err)
		}
	}
	return nil
}

func (r *Record) validate() error {
	if r.Index < 0 {
		return fmt.Errorf("record index %d is negative", r.Index)
	}
	switch r.Status {
	case StatusOK, StatusUnparsed, StatusFailed:
		return nil
	}
	return fmt.Errorf("cell %d: status %q is not one of %s, %s, %s", r.Index, r.Status, StatusOK, StatusUnparsed, StatusFailed)
}

// scanPaged calls fn with every record that page returns, a page of at most scanPage records after index after
// at a time, until a page comes back short. No query is open while fn runs. It stops at, and returns, fn's first
// error. Both back ends' Scan are this loop.
func scanPaged(run string, fn func(Record) error, page func(after int, buf []Record) ([]Record, error)) error {
	next := -1
	var buf []Record
	for {
		recs, err := page(next, buf[:0])
		if err != nil {
			return fmt.Errorf("store: scan %s: %w", run, err)
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(recs) < scanPage {
			return nil
		}
		next = recs[len(recs)-1].Index
		buf = recs
	}
}

// Counts sums up the records of a run.
type Counts struct {
	// Records is the number of recorded (finished) cells; OK, Unparsed and Failed split it by status.
	Records  int `json:"records"`
	OK       int `json:"ok"`
	Unparsed int `json:"unparsed"`
	Failed   int `json:"failed"`
	// Cached counts records answered from the response cache.
	Cached int `json:"cached"`
	usage.Usage
}
