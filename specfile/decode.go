package specfile

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/suggest"
	"github.com/silicolab/silico/usage"
)

// decoder turns a node tree into a Spec, collecting every mistake with its position. With locs not nil it also
// records where each part of the resolved Spec came from, so that Validate's field paths can be mapped back to
// the file (see parse: only a spec that fails validation needs them).
type decoder struct {
	file    string
	baseDir string
	// noFiles refuses the keys that name files (workflow inputs).
	noFiles bool
	errs    experiment.Errors
	// notes are remarks that are not errors: keys accepted but without effect in silico.
	notes []string
	locs  map[string]loc
	// unplaced says Validate found mistakes while locs was nil: they need a decoding that records positions.
	unplaced bool
	// aliased says the tree has nodes shared through YAML aliases, which must not be cleared once decoded.
	aliased bool
	// referenceNode is the reference section whose file parse reads after decoding (see referenceFile).
	referenceNode *node
}

// loc is where a resolved field came from: its path in the source and its position.
type loc struct {
	file      string
	path      string
	line, col int
}

// keyHints point users of other formats (the seed-000 framework) at the key this format uses.
var keyHints = map[string]string{
	"general_instruction":    "instruction",
	"default_answer_options": "options",
	"instruction_items":      "items",
	"answer_options":         "options",
	"question":               "text",
	"parameters":             "params",
	"name_or_path":           "name",
	"max_new_tokens":         "max_tokens",
	"demographic_profiles":   "personas",
	"prompt_template":        "prompt",
	"dimension":              "scale",
	"concurrency":            "max_concurrency",
}

func (d *decoder) errAt(n *node, path, format string, args ...any) {
	e := &experiment.Error{File: d.file, Field: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.where()
	}
	d.errs = append(d.errs, e)
}

// noteAt records a remark about the value n at path, as "file:line:col: path: msg".
func (d *decoder) noteAt(n *node, path, msg string) {
	e := experiment.Error{File: d.file, Field: path, Msg: msg}
	e.Line, e.Column = n.where()
	d.notes = append(d.notes, e.Error())
}

func (d *decoder) mark(resolved, src string, n *node) {
	if n == nil {
		return
	}
	line, col := n.where()
	d.setLoc(resolved, loc{file: d.file, path: src, line: line, col: col})
}

// setLoc records where the resolved field came from, when the decoder records positions.
func (d *decoder) setLoc(resolved string, l loc) {
	if d.locs != nil {
		d.locs[resolved] = l
	}
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// child is the path of key k under path.
func child(path, k string) string {
	if !plainKey.MatchString(k) {
		k = strconv.Quote(k)
		return path + "[" + k + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// fields checks that n is a mapping whose keys are all allowed, reports the others (with a hint), and returns the
// non-null values by key. It returns nil when n is not a mapping.
func (d *decoder) fields(n *node, path string, allowed ...string) map[string]*node {
	if n.kind != kindMap {
		d.errAt(n, path, "want a mapping with keys %s, got %s", strings.Join(allowed, ", "), n.describe())
		return nil
	}
	out := make(map[string]*node, len(n.keys))
	for i, k := range n.keys {
		if !slices.Contains(allowed, k.str) {
			d.unknownKey(k, path, allowed)
			continue
		}
		p := child(path, k.str) // one string for the key and the path: a spec of 100,000 items has 400,000
		d.mark(p, p, n.vals[i])
		if n.vals[i].kind != kindNull {
			out[k.str] = n.vals[i]
		}
	}
	return out
}

func (d *decoder) unknownKey(k *node, path string, allowed []string) {
	hint := suggest.DidYouMean(k.str, allowed)
	if h, ok := keyHints[k.str]; ok && slices.Contains(allowed, h) {
		hint = fmt.Sprintf(" (did you mean %q?)", h)
	}
	if slices.Contains(allowed, "extra") && slices.Contains(allowed, "logit_bias") {
		// Perhaps a sampling parameter of one server's own (llama.cpp's top_k, vLLM's min_p).
		extra := fmt.Sprintf("a key your server adds to the OpenAI format goes under extra, e.g. extra: {%s: ...}", k.str)
		if hint == "" {
			hint = " (" + extra + ")"
		} else {
			hint = strings.TrimSuffix(hint, ")") + "; or " + extra + ")"
		}
	}
	d.errAt(k, child(path, k.str), "unknown key %q%s; accepted keys: %s", k.str, hint, strings.Join(allowed, ", "))
}

// text reads any scalar as the text written (numbers and booleans included), as a string type S.
func text[S ~string](d *decoder, n *node, path string) S { return S(d.str(n, path)) }

// str reads any scalar as the text written (numbers and booleans included).
func (d *decoder) str(n *node, path string) string {
	if n == nil || n.kind == kindNull {
		return ""
	}
	if n.kind != kindScalar {
		d.errAt(n, path, "want a string, got %s", n.describe())
		return ""
	}
	return n.str
}

func (d *decoder) integer(n *node, path string) int {
	if n == nil {
		return 0
	}
	if n.kind != kindScalar || n.scalar != scalarInt {
		d.errAt(n, path, "want a whole number, got %s", n.describe())
		return 0
	}
	if n.num > math.MaxInt32 || n.num < math.MinInt32 {
		d.errAt(n, path, "%s is too large", n.str)
		return 0
	}
	return int(n.num)
}

func (d *decoder) number(n *node, path string) float64 {
	if n == nil {
		return 0
	}
	if n.kind == kindScalar && n.scalar == scalarString && expNumber.MatchString(n.str) {
		// go-yaml reads an exponent without a decimal point (1e-7) as a string, as YAML 1.1 does; encoding/json
		// writes small and large floats that way, so a spec saved as JSON must read back.
		if v, err := strconv.ParseFloat(n.str, 64); err == nil {
			return v
		}
	}
	if n.kind != kindScalar || (n.scalar != scalarInt && n.scalar != scalarFloat) {
		d.errAt(n, path, "want a number, got %s", n.describe())
		return 0
	}
	return n.num
}

// dollars reads an amount of US dollars to the picodollar (usage.USD): exactly as written when it is a decimal (0.1
// is a tenth of a dollar, not the float64 nearest to it), else the number rounded to the nearest picodollar.
func (d *decoder) dollars(n *node, path string) usage.USD {
	f := d.number(n, path)
	if f == 0 {
		return 0 // absent, zero, or not a number (reported)
	}
	v, err := usage.ParseUSD(n.str)
	switch {
	case err == nil:
	case math.Abs(f) >= maxDollars:
		d.errAt(n, path, "%s is not an amount of US dollars the budget can hold (less than $%d)", n.str, int(maxDollars))
		return 0
	default:
		v = usage.Dollars(f)
	}
	if v == 0 {
		// Zero would mean no budget at all.
		d.errAt(n, path, "%s is less than a picodollar; want 0 (no budget) or at least 0.000000000001", n.str)
	}
	return v
}

// maxDollars bounds the amounts a usage.USD holds, in whole dollars.
const maxDollars = 9_223_372

// expNumber is a number written with an exponent and no decimal point, which go-yaml reads as a string.
var expNumber = regexp.MustCompile(`^-?[0-9]+[eE][-+]?[0-9]+$`)

func (d *decoder) numberPtr(n *node, path string) *float64 {
	if n == nil {
		return nil
	}
	v := d.number(n, path)
	return &v
}

func (d *decoder) booleanPtr(n *node, path string) *bool {
	if n == nil {
		return nil
	}
	v := d.boolean(n, path)
	return &v
}

func (d *decoder) boolean(n *node, path string) bool {
	if n == nil {
		return false
	}
	if n.kind != kindScalar || n.scalar != scalarBool {
		d.errAt(n, path, "want true or false, got %s", n.describe())
		return false
	}
	return n.boolean
}

// list checks that n is a list.
func (d *decoder) list(n *node, path, what string) []*node {
	if n == nil {
		return nil
	}
	if n.kind != kindSeq {
		d.errAt(n, path, "want a list of %s, got %s", what, n.describe())
		return nil
	}
	for i, e := range n.vals {
		p := index(path, i)
		d.mark(p, p, e)
	}
	return n.vals
}

func (d *decoder) strings(n *node, path string) []string {
	if n == nil {
		return nil
	}
	if n.kind == kindScalar {
		return []string{d.str(n, path)}
	}
	var out []string
	for i, e := range d.list(n, path, "strings") {
		out = append(out, d.str(e, index(path, i)))
	}
	return out
}

// integers reads a list of whole numbers.
func (d *decoder) integers(n *node, path string) []int {
	var out []int
	for i, e := range d.list(n, path, "whole numbers") {
		out = append(out, d.integer(e, index(path, i)))
	}
	return out
}

// numbers reads a list of numbers.
func (d *decoder) numbers(n *node, path string) []float64 {
	var out []float64
	for i, e := range d.list(n, path, "numbers") {
		out = append(out, d.number(e, index(path, i)))
	}
	return out
}

// seeds reads a list of integers or numeric strings (or one of them).
func (d *decoder) seeds(n *node, path string) []int64 {
	if n == nil {
		return nil
	}
	items := []*node{n}
	if n.kind == kindSeq {
		items = n.vals
	} else {
		path = index(path, 0)
	}
	var out []int64
	for i, e := range items {
		p := path
		if n.kind == kindSeq {
			p = index(path, i)
		}
		if e.kind != kindScalar || e.scalar == scalarBool || e.scalar == scalarFloat {
			d.errAt(e, p, "want a whole number or a numeric string such as \"7\", got %s", e.describe())
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(e.str), 10, 64)
		if err != nil {
			d.errAt(e, p, "want a whole number or a numeric string such as \"7\", got %s", e.describe())
			continue
		}
		out = append(out, v)
	}
	return out
}

func (d *decoder) duration(n *node, path string) experiment.Duration {
	if n == nil {
		return 0
	}
	if n.kind == kindScalar && (n.scalar == scalarInt || n.scalar == scalarFloat) {
		return experiment.Duration(time.Duration(n.num * float64(time.Second)))
	}
	if n.kind == kindScalar && n.scalar == scalarString {
		v, err := time.ParseDuration(strings.TrimSpace(n.str))
		if err == nil {
			return experiment.Duration(v)
		}
	}
	d.errAt(n, path, "want a duration such as \"30s\" or \"2m\" (or a number of seconds), got %s", n.describe())
	return 0
}

// numberMap reads a mapping of texts to numbers.
func (d *decoder) numberMap(n *node, path string) map[string]float64 {
	if n == nil {
		return nil
	}
	return mapping(d, n, path, "a mapping of texts to numbers", false, (*decoder).number)
}

// mapping reads a mapping whose values value reads; want says what n should be, in the error when it is no
// mapping. Each entry's position is its key's when atKey (a key that is wrong is reported there), else its value's.
func mapping[V any](d *decoder, n *node, path, want string, atKey bool, value func(*decoder, *node, string) V) map[string]V {
	if n.kind != kindMap {
		d.errAt(n, path, "want %s, got %s", want, n.describe())
		return nil
	}
	out := make(map[string]V, len(n.keys))
	for i, k := range n.keys {
		p := child(path, k.str)
		at := n.vals[i]
		if atKey {
			at = k
		}
		d.mark(p, p, at)
		out[k.str] = value(d, n.vals[i], p)
	}
	return out
}

// attributes reads a mapping of scalars as strings.
func (d *decoder) attributes(n *node, path string) map[string]string {
	if n == nil {
		return nil
	}
	if n.kind != kindMap {
		d.errAt(n, path, "want a mapping of attribute names to values, got %s", n.describe())
		return nil
	}
	out := make(map[string]string, len(n.keys))
	for i, k := range n.keys {
		v := n.vals[i]
		p := child(path, k.str)
		d.mark(p, p, v)
		if v.kind == kindMap || v.kind == kindSeq {
			d.errAt(v, p, "want a single value (text or number), got %s", v.describe())
			continue
		}
		out[k.str] = v.str
	}
	return out
}
