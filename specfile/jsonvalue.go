package specfile

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// integerPtr reads a whole number that may be absent (nil) or zero (a pointer to 0).
func (d *decoder) integerPtr(n *node, path string) *int {
	if n == nil {
		return nil
	}
	v := d.integer(n, path)
	return &v
}

// int64Ptr reads a whole number of 64 bits that may be absent (nil) or zero (a pointer to 0).
func (d *decoder) int64Ptr(n *node, path string) *int64 {
	if n == nil {
		return nil
	}
	if n.kind != kindScalar || n.scalar != scalarInt {
		d.errAt(n, path, "want a whole number, got %s", n.describe())
		return nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(n.str), 10, 64)
	if err != nil {
		d.errAt(n, path, "%s is not a whole number from %d to %d", n.str, int64(math.MinInt64), int64(math.MaxInt64))
		return nil
	}
	return &v
}

// seedPtr reads one seed (a whole number or a numeric string, as seeds takes them) that may be absent (nil).
func (d *decoder) seedPtr(n *node, path string) *int64 {
	if n == nil {
		return nil
	}
	if n.kind == kindSeq {
		d.errAt(n, path, "want one seed, a whole number such as 7, got %s", n.describe())
		return nil
	}
	v := d.seeds(n, path)
	if len(v) != 1 {
		return nil
	}
	return &v[0]
}

// logitBias reads a mapping of token ids to whole-number biases; experiment.Validate checks ids and ranges.
func (d *decoder) logitBias(n *node, path string) map[string]int {
	return mapping(d, n, path, `a mapping of token ids to biases, such as {"1639": -100}`, true, (*decoder).integer)
}

// jsonMap reads a mapping whose values are sent as JSON, each as jsonValue writes it.
func (d *decoder) jsonMap(n *node, path string) map[string]json.RawMessage {
	if n.kind != kindMap {
		d.errAt(n, path, "want a mapping of request keys to values, such as {top_k: 40, min_p: 0.05}, got %s", n.describe())
		return nil
	}
	out := make(map[string]json.RawMessage, len(n.keys))
	for i, k := range n.keys {
		p := child(path, k.str)
		d.mark(p, p, n.vals[i])
		out[k.str] = d.jsonValue(n.vals[i], p)
	}
	return out
}

// jsonValue writes n as JSON, as written: mappings keep the file's key order, numbers their value (an integer as
// an integer), strings are strings. So a YAML spec and its JSON form send the same bytes.
func (d *decoder) jsonValue(n *node, path string) json.RawMessage {
	var b bytes.Buffer
	writeJSON(&b, n)
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, n *node) {
	switch n.kind {
	case kindNull:
		b.WriteString("null")
	case kindMap:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k.str)
			b.WriteByte(':')
			writeJSON(b, n.vals[i])
		}
		b.WriteByte('}')
	case kindSeq:
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, v)
		}
		b.WriteByte(']')
	default:
		switch n.scalar {
		case scalarInt:
			b.WriteString(strconv.FormatFloat(n.num, 'f', -1, 64))
		case scalarFloat:
			b.WriteString(strconv.FormatFloat(n.num, 'g', -1, 64))
		case scalarBool:
			b.WriteString(strconv.FormatBool(n.boolean))
		default:
			writeString(b, n.str)
		}
	}
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a Go string always encodes
	b.Write(q)
}
