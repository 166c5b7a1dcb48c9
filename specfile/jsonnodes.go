package specfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// jsonNodes builds the node tree of a JSON document with encoding/json's tokenizer: the tree parseNodes builds
// from go-yaml's AST, positions included, without building the AST, which holds about eight bytes per byte of
// input (a saved spec of 100,000 items is a 55 MB JSON document, read by every worker). ok is false for anything
// that is not plain JSON or that go-yaml might read otherwise (a syntax error, a duplicate or merge key, an
// integer out of range, a surrogate escape, a tab, a carriage return that does not end a line with a line feed,
// a number, true, false or null with spaces after it at the end of its line, bytes that are not UTF-8):
// parseNodes then reads it as YAML, which gives the same tree or the error go-yaml gives. TestJSONNodesAsYAML and
// FuzzJSONNodesAsYAML hold the two trees equal.
func jsonNodes(data []byte) (n *node, ok bool) {
	if !utf8.Valid(data) || bytes.IndexByte(data, '\t') >= 0 || loneCR(data) || spacedPlainEnd(data) {
		return nil, false
	}
	j := &jsonReader{data: data, dec: json.NewDecoder(bytes.NewReader(data)), line: 1, col: 1}
	j.dec.UseNumber()
	n, ok = j.value(0)
	if !ok {
		return nil, false
	}
	if _, err := j.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false // a second value, or trailing bytes that are not white space
	}
	return n, true
}

// loneCR reports a carriage return not followed by a line feed: a line break to YAML, white space to advance.
func loneCR(data []byte) bool {
	for i := bytes.IndexByte(data, '\r'); i >= 0; {
		if i+1 == len(data) || data[i+1] != '\n' {
			return true
		}
		next := bytes.IndexByte(data[i+1:], '\r')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// spacedPlainEnd reports a line that ends in a number, true, false or null followed by spaces, which go-yaml
// places as many columns further right. A line feed is never inside a JSON string, so a letter or digit before
// the spaces ends such a value.
func spacedPlainEnd(data []byte) bool {
	for i := bytes.IndexByte(data, '\n'); i >= 0; {
		j := i
		if j > 0 && data[j-1] == '\r' {
			j--
		}
		k := j
		for k > 0 && data[k-1] == ' ' {
			k--
		}
		if k < j && k > 0 {
			if c := data[k-1]; c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' {
				return true
			}
		}
		next := bytes.IndexByte(data[i+1:], '\n')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// jsonReader reads tokens and tracks the line and column (in characters, from 1) of an offset of data; offsets
// only move forward.
type jsonReader struct {
	data      []byte
	dec       *json.Decoder
	off       int // the offset line and col are of
	line, col int
}

// next returns the next token and its position: the first byte after the previous token that is neither white
// space nor a separator.
func (j *jsonReader) next() (tok json.Token, line, col int, ok bool) {
	start := int(j.dec.InputOffset())
	tok, err := j.dec.Token()
	if err != nil {
		return nil, 0, 0, false
	}
	for start < len(j.data) {
		switch j.data[start] {
		case ' ', '\t', '\r', '\n', ',', ':':
			start++
			continue
		}
		break
	}
	j.advance(start)
	return tok, j.line, j.col, true
}

// advance moves the position to offset to.
func (j *jsonReader) advance(to int) {
	for j.off < to {
		r, size := utf8.DecodeRune(j.data[j.off:])
		j.off += size
		if r == '\n' {
			j.line, j.col = j.line+1, 1
			continue
		}
		j.col++
	}
}

func (j *jsonReader) value(depth int) (*node, bool) {
	tok, line, col, ok := j.next()
	if !ok {
		return nil, false
	}
	return j.node(tok, line, col, depth)
}

func (j *jsonReader) node(tok json.Token, line, col, depth int) (*node, bool) {
	if depth > 200 {
		return nil, false // the YAML reader says "nested too deeply"
	}
	n := &node{line: line, col: col}
	switch v := tok.(type) {
	case nil:
		n.kind = kindNull
	case bool:
		n.kind, n.scalar, n.boolean, n.str = kindScalar, scalarBool, v, strconv.FormatBool(v)
	case string:
		if hasSurrogateEscape(j.data[j.off:j.dec.InputOffset()]) {
			return nil, false
		}
		n.kind, n.str = kindScalar, v
	case json.Number:
		n.kind, n.str = kindScalar, string(v)
		switch dot, exp := strings.Contains(n.str, "."), strings.ContainsAny(n.str, "eE"); {
		case exp && !dot:
			break // go-yaml reads 1e3 as a string, as YAML 1.1 does
		case dot:
			f, err := v.Float64()
			if err != nil {
				return nil, false
			}
			n.scalar, n.num = scalarFloat, f
		default:
			n.scalar = scalarInt
			if i, err := strconv.ParseInt(n.str, 10, 64); err == nil {
				n.num = float64(i)
			} else if u, err := strconv.ParseUint(n.str, 10, 64); err == nil {
				n.num = float64(u)
			} else {
				return nil, false
			}
		}
	case json.Delim:
		switch v {
		case '[':
			n.kind = kindSeq
			for j.dec.More() {
				e, ok := j.value(depth + 1)
				if !ok {
					return nil, false
				}
				n.vals = append(n.vals, e)
			}
		case '{':
			n.kind = kindMap
			seen := map[string]bool{}
			for j.dec.More() {
				kt, kl, kc, ok := j.next()
				if !ok {
					return nil, false
				}
				key, _ := kt.(string)
				if seen[key] || key == "<<" || hasSurrogateEscape(j.data[j.off:j.dec.InputOffset()]) {
					return nil, false
				}
				seen[key] = true
				if len(n.keys) == 0 {
					n.line, n.col = kl, kc // a mapping is where its first key is, as parseNodes places it
				}
				val, ok := j.value(depth + 1)
				if !ok {
					return nil, false
				}
				if val.kind != kindScalar {
					val.keyLine, val.keyCol = kl, kc
				}
				n.keys = append(n.keys, &node{kind: kindScalar, line: kl, col: kc, str: key})
				n.vals = append(n.vals, val)
			}
		}
		if _, err := j.dec.Token(); err != nil { // the closing delimiter
			return nil, false
		}
	default:
		return nil, false
	}
	return n, true
}

// hasSurrogateEscape reports whether a JSON string's source holds a \u escape of a UTF-16 surrogate, which
// encoding/json pairs and go-yaml may not.
func hasSurrogateEscape(src []byte) bool {
	for i := 0; i+5 < len(src); i++ {
		if src[i] == '\\' {
			if src[i+1] == 'u' && (src[i+2] == 'd' || src[i+2] == 'D') && bytes.IndexByte([]byte("89abAB"), src[i+3]) >= 0 {
				return true
			}
			i++ // the escaped character
		}
	}
	return false
}
