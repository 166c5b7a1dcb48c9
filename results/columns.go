package results

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

// rowColumn is one column of a row: its name (a header of results.csv and a key of results.jsonl), how it is
// written to each and read back, and whether it is a fact of the cell. The table rowColumns is the only list of
// them: Header, Values, CellColumns and the JSON form all follow it.
type rowColumn struct {
	name string
	// run marks a fact of one run rather than of the cell (how this run got the answer: its id, timing,
	// requests, the response cache); CellColumns leaves such columns out.
	run bool
	// csv formats the column as in results.csv. nil for probs, which results.csv spreads over p_<option id>
	// columns of their own (HeaderFor, ValuesFor); cell is then the column's cell fact, which CellColumns puts
	// after those of the CSV columns.
	csv  func(r *Row) string
	cell func(r *Row) string
	// json appends the column's JSON value to b; decode reads it back into the row.
	json   func(b []byte, r *Row) ([]byte, error)
	decode func(r *Row, v []byte) error
}

// rowColumns are the columns of a row in order: the keys of a results.jsonl line, and (probs aside) the header
// of results.csv. A new column is one line here, besides its Row field (set by BuildRow) and its place in
// README's list of the columns, which a test holds to Header.
var rowColumns = []rowColumn{
	text("run_id", func(r *Row) *string { return &r.RunID }).ofRun(),
	integer("index", func(r *Row) *int { return &r.Index }),
	text("cell_id", func(r *Row) *string { return &r.CellID }),
	text("model", func(r *Row) *string { return &r.Model }),
	integer("seed", func(r *Row) *int64 { return &r.Seed }),
	text("item_id", func(r *Row) *string { return &r.ItemID }),
	text("item_text", func(r *Row) *string { return &r.ItemText }),
	text("scale", func(r *Row) *string { return &r.Scale }),
	boolean("reversed", func(r *Row) *bool { return &r.Reversed }),
	text("persona_id", func(r *Row) *string { return &r.PersonaID }),
	text("variant", func(r *Row) *string { return &r.Variant }),
	text("prompt_variant", func(r *Row) *string { return &r.PromptVariant }),
	text("order", func(r *Row) *string { return &r.Order }),
	text("shown", func(r *Row) *string { return &r.Shown }),
	optInteger("shown_position", func(r *Row) **int { return &r.ShownPosition }),
	text("status", func(r *Row) *string { return &r.Status }),
	text("option_id", func(r *Row) *string { return &r.OptionID }),
	text("option_text", func(r *Row) *string { return &r.OptionText }),
	optInteger("score", func(r *Row) **int { return &r.Score }),
	text("raw", func(r *Row) *string { return &r.Raw }),
	text("error_class", func(r *Row) *string { return &r.ErrorClass }),
	text("error_code", func(r *Row) *string { return &r.ErrorCode }),
	text("error_message", func(r *Row) *string { return &r.ErrorMessage }),
	integer("prompt_tokens", func(r *Row) *int { return &r.PromptTokens }),
	integer("completion_tokens", func(r *Row) *int { return &r.CompletionTokens }),
	money("cost_usd", func(r *Row) *usage.USD { return &r.CostUSD }),
	fixed("latency_ms", func(r *Row) *float64 { return &r.LatencyMS }, formatLatency).ofRun(),
	integer("attempts", func(r *Row) *int { return &r.Attempts }).ofRun(),
	integer("tries", func(r *Row) *int { return &r.Tries }).ofRun(),
	boolean("cached", func(r *Row) *bool { return &r.Cached }).ofRun(),
	text("image_sha256", func(r *Row) *string { return &r.ImageSHA256 }),
	text("finish_reason", func(r *Row) *string { return &r.FinishReason }),
	text("schema", func(r *Row) *string { return &r.Schema }),
	probsColumn("probs"),
	optFloat("coverage", func(r *Row) **float64 { return &r.Coverage }),
	text("probs_source", func(r *Row) *string { return &r.ProbsSource }),
	optFloat("probs_sum", func(r *Row) **float64 { return &r.ProbsSum }),
	optFloat("entropy", func(r *Row) **float64 { return &r.Entropy }),
	text("top_option", func(r *Row) *string { return &r.TopOption }),
	optFloat("expected_score", func(r *Row) **float64 { return &r.ExpectedScore }),
	optBool("top_agrees", func(r *Row) **bool { return &r.TopAgrees }),
	// Cell facts, not run facts: a cached answer keeps the provenance of the call that produced it.
	text("served_model", func(r *Row) *string { return &r.ServedModel }),
	text("system_fingerprint", func(r *Row) *string { return &r.SystemFingerprint }),
}

// ofRun marks c a fact of one run (see rowColumn.run).
func (c rowColumn) ofRun() rowColumn {
	c.run = true
	return c
}

// text is a string column: written as is in CSV, a JSON string.
func text(name string, f func(*Row) *string) rowColumn {
	return rowColumn{name: name,
		csv:    func(r *Row) string { return *f(r) },
		json:   func(b []byte, r *Row) ([]byte, error) { return appendJSONString(b, *f(r)), nil },
		decode: func(r *Row, v []byte) error { return json.Unmarshal(v, f(r)) },
	}
}

// integer is an integer column, in decimal in both.
func integer[T int | int64](name string, f func(*Row) *T) rowColumn {
	return rowColumn{name: name,
		csv:    func(r *Row) string { return strconv.FormatInt(int64(*f(r)), 10) },
		json:   func(b []byte, r *Row) ([]byte, error) { return strconv.AppendInt(b, int64(*f(r)), 10), nil },
		decode: func(r *Row, v []byte) error { return json.Unmarshal(v, f(r)) },
	}
}

// boolean is a true/false column.
func boolean(name string, f func(*Row) *bool) rowColumn {
	return rowColumn{name: name,
		csv:    func(r *Row) string { return strconv.FormatBool(*f(r)) },
		json:   func(b []byte, r *Row) ([]byte, error) { return strconv.AppendBool(b, *f(r)), nil },
		decode: func(r *Row, v []byte) error { return json.Unmarshal(v, f(r)) },
	}
}

// optInteger is an integer column that may have no value: empty in CSV, null in JSON.
func optInteger(name string, f func(*Row) **int) rowColumn {
	return rowColumn{name: name,
		csv: func(r *Row) string {
			if p := *f(r); p != nil {
				return strconv.Itoa(*p)
			}
			return ""
		},
		json: func(b []byte, r *Row) ([]byte, error) {
			if p := *f(r); p != nil {
				return strconv.AppendInt(b, int64(*p), 10), nil
			}
			return append(b, "null"...), nil
		},
		decode: func(r *Row, v []byte) error { return json.Unmarshal(v, f(r)) },
	}
}

// optBool is a true/false column that may have no value: empty in CSV, null in JSON.
func optBool(name string, f func(*Row) **bool) rowColumn {
	return rowColumn{name: name,
		csv: func(r *Row) string {
			if p := *f(r); p != nil {
				return strconv.FormatBool(*p)
			}
			return ""
		},
		json: func(b []byte, r *Row) ([]byte, error) {
			if p := *f(r); p != nil {
				return strconv.AppendBool(b, *p), nil
			}
			return append(b, "null"...), nil
		},
		decode: func(r *Row, v []byte) error { return json.Unmarshal(v, f(r)) },
	}
}

// optFloat is a probability, entropy or expected score that may have no value: in CSV in the shortest form
// that reads back exactly (empty for none), in JSON as encoding/json writes a float64 (null for none).
func optFloat(name string, f func(*Row) **float64) rowColumn {
	return rowColumn{name: name,
		csv: func(r *Row) string { return Stat(*f(r)) },
		json: func(b []byte, r *Row) ([]byte, error) {
			if p := *f(r); p != nil {
				return appendJSONFloat(b, *p)
			}
			return append(b, "null"...), nil
		},
		decode: func(r *Row, v []byte) error { return json.Unmarshal(v, f(r)) },
	}
}

// fixed is a number column with a fixed formatting (format), the same text in CSV and JSON, so that a value
// reads the same in both files.
func fixed(name string, f func(*Row) *float64, format func(float64) string) rowColumn {
	return rowColumn{name: name,
		csv: func(r *Row) string { return format(*f(r)) },
		json: func(b []byte, r *Row) ([]byte, error) {
			if v := *f(r); math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("unsupported value: %s", strconv.FormatFloat(v, 'g', -1, 64))
			}
			return append(b, format(*f(r))...), nil
		},
		decode: func(r *Row, v []byte) error { return json.Unmarshal(v, f(r)) },
	}
}

// money is an amount of dollars, written with every digit it has (usage.USD's String, the same text in CSV and
// JSON), so that the column's values add up exactly to the summary's cost.
func money(name string, f func(*Row) *usage.USD) rowColumn {
	return rowColumn{name: name,
		csv:    func(r *Row) string { return f(r).String() },
		json:   func(b []byte, r *Row) ([]byte, error) { return f(r).AppendText(b), nil },
		decode: func(r *Row, v []byte) error { return json.Unmarshal(v, f(r)) },
	}
}

// probsColumn is the option probabilities: in JSON an object of option id to probability in the item's option
// order (probsJSON); in results.csv the p_<option id> columns; as a cell fact the store's encoding.
func probsColumn(name string) rowColumn {
	return rowColumn{name: name,
		cell: func(r *Row) string { return store.EncodeProbs(r.Probs) },
		json: func(b []byte, r *Row) ([]byte, error) {
			v, err := probsJSON{r.Options, r.Probs}.MarshalJSON()
			return append(b, v...), err
		},
		decode: func(r *Row, v []byte) error {
			var p probsJSON
			if err := p.UnmarshalJSON(v); err != nil {
				return err
			}
			r.Options, r.Probs = p.ids, p.probs
			return nil
		},
	}
}

// appendJSON appends the row as one results.jsonl line, without the newline: an object with the columns' keys in
// order, HTML characters in text left unescaped. The bytes are those encoding/json's Encoder with
// SetEscapeHTML(false) writes for the same values.
func (r *Row) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	for i := range rowColumns {
		c := &rowColumns[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, c.name...)
		b = append(b, '"', ':')
		var err error
		if b, err = c.json(b, r); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return append(b, '}'), nil
}

// appendJSONFloat appends v as encoding/json writes a float64: the shortest form that reads back exactly, in
// exponent form below 1e-6 and from 1e21 on (ES6 number formatting). NaN and infinities are errors, as there.
func appendJSONFloat(b []byte, v float64) ([]byte, error) {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, fmt.Errorf("unsupported value: %s", strconv.FormatFloat(v, 'g', -1, 64))
	}
	format := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json does with HTML escaping off: '"' and '\'
// escaped, control characters as \b, \f, \n, \r, \t or \u00XX, invalid UTF-8 as \ufffd, and U+2028 and U+2029
// escaped; everything else as is.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
