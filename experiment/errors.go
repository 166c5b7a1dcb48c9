package experiment

import (
	"fmt"
	"strings"
)

// Error is one mistake in a spec. File, Line and Column are set when the spec came from a file (package specfile);
// a spec validated in memory (Validate) has only Field. Field is a path such as "models[1].rpm" or
// "questionnaire.items[3].scale" (indexes are 0-based); Msg says what is wrong and what would be accepted.
type Error struct {
	File   string
	Line   int
	Column int
	Field  string
	Msg    string
}

// Error formats the mistake as "file:line:col: field: msg", leaving out the parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Column)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors are all the mistakes found in a spec, in file order when positions are known.
// specfile.Load, specfile.Parse and Validate return a non-nil Errors, never an empty one.
type Errors []*Error

// Error lists the mistakes one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es *Errors) add(field, format string, args ...any) {
	*es = append(*es, &Error{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// oneOf lists the accepted values: "a, b or c".
func oneOf(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = fmt.Sprintf("%q", v)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
