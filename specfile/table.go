package specfile

import (
	"slices"
	"strings"
)

// key is one row of a section's table: a key of the file format, the field of T it fills and how its value is
// decoded. Rows are built with field (or handled, refused), never by hand, so that every row names its field.
type key[T any] struct {
	name string
	// at returns a pointer to the field of t the key fills; nil for a key that fills no field (refused). The
	// tests use it to hold every table to the json tags of its type.
	at func(t *T) any
	// decode decodes n, the key's value (never null), into t; path is the key's path, for errors.
	decode func(d *decoder, n *node, path string, t *T)
	// hidden keys are left out of the accepted keys that errors list, unless the mapping holds them.
	hidden bool
}

// field is the row of key name: dec decodes its value into the field at returns. dec is a typed decoder such as
// (*decoder).integer, text[S], another section's table.decode, or a decoder of its own.
func field[T, U any](name string, at func(*T) *U, dec func(*decoder, *node, string) U) key[T] {
	return key[T]{
		name:   name,
		at:     func(t *T) any { return at(t) },
		decode: func(d *decoder, n *node, path string, t *T) { *at(t) = dec(d, n, path) },
	}
}

// handled is the row of a key that the section's own decoder reads, because its forms do not fit one decoder.
func handled[T, U any](name string, at func(*T) *U) key[T] {
	return key[T]{name: name, at: func(t *T) any { return at(t) }, decode: func(*decoder, *node, string, *T) {}}
}

// refused is the row of a key that fills no field and is always an error: check reports it.
func refused[T any](name string, check func(d *decoder, n *node, path string)) key[T] {
	return key[T]{name: name, hidden: true, decode: func(d *decoder, n *node, path string, _ *T) { check(d, n, path) }}
}

// table is the keys of one section of the format, in the order errors list them and their values are decoded.
// It is the only list of a section's keys: decoding, "unknown key" errors, "did you mean" hints and the "want a
// mapping with keys ..." messages all come from it.
type table[T any] []key[T]

// names are the keys errors list as accepted in mapping n: every key but the hidden ones, and those n holds.
func (tb table[T]) names(n *node) []string {
	out := make([]string, 0, len(tb))
	for _, k := range tb {
		if !k.hidden || n.get(k.name) != nil {
			out = append(out, k.name)
		}
	}
	return out
}

// what describes a list of these sections for "want a list of ..." errors, such as "models {id, name, provider,
// ...}": every key when there are few, else the first three.
func (tb table[T]) what(list string) string {
	keys := tb.names(nil)
	if len(keys) > 5 {
		keys = append(keys[:3:3], "...")
	}
	return list + " {" + strings.Join(keys, ", ") + "}"
}

// into decodes mapping n into t. It reports keys not in the table and values of the wrong kind; a key that is
// absent or null leaves its field as it was (zero, or a default the caller set). It returns the non-null values
// by key, or nil when n is not a mapping (reported).
func (tb table[T]) into(d *decoder, n *node, path string, t *T) map[string]*node {
	f := d.fields(n, path, tb.names(n)...)
	if f != nil {
		tb.apply(d, f, path, t)
	}
	return f
}

// apply decodes into t the values in f of the table's keys; f holds a mapping's values by key (see fields).
func (tb table[T]) apply(d *decoder, f map[string]*node, path string, t *T) {
	for _, k := range tb {
		if v := f[k.name]; v != nil {
			k.decode(d, v, child(path, k.name), t)
		}
	}
}

// decode decodes the section n; its zero value when n is not a mapping (reported).
func (tb table[T]) decode(d *decoder, n *node, path string) T {
	var t T
	tb.into(d, n, path, &t)
	return t
}

// decodePtr decodes the optional section n: nil when n is not a mapping (reported).
func (tb table[T]) decodePtr(d *decoder, n *node, path string) *T {
	t := new(T)
	if tb.into(d, n, path, t) == nil {
		return nil
	}
	return t
}

// only is the table of the named keys alone, for a format that shares some keys of a section.
func (tb table[T]) only(names ...string) table[T] {
	return slices.DeleteFunc(slices.Clone(tb), func(k key[T]) bool { return !slices.Contains(names, k.name) })
}

// without is the table without the named keys.
func (tb table[T]) without(names ...string) table[T] {
	return slices.DeleteFunc(slices.Clone(tb), func(k key[T]) bool { return slices.Contains(names, k.name) })
}

// listOf decodes a list of sections of tb, such as models; an entry that is not a mapping is reported and kept
// as a zero value, so that the indexes of later entries stay those of the file.
func listOf[T any](tb table[T], list string) func(*decoder, *node, string) []T {
	what := tb.what(list)
	return func(d *decoder, n *node, path string) []T {
		var out []T
		for i, e := range d.list(n, path, what) {
			out = append(out, tb.decode(d, e, index(path, i)))
		}
		return out
	}
}
