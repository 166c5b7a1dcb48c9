package specfile

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/silicolab/silico/experiment"
)

// node is a YAML/JSON value with its position, simpler to walk than the library's AST: aliases, anchors, tags and
// merge keys are already resolved, and mappings keep their file order.
type node struct {
	kind      nodeKind
	line, col int
	keys      []*node // mapping: key scalars, in file order
	vals      []*node // mapping values, or sequence entries
	str       string  // scalar: the value as written (unquoted)
	scalar    scalarKind
	num       float64 // int and float scalars
	boolean   bool
	// aliased, on a root only, says the tree has YAML aliases: nodes shared by more than one parent.
	aliased bool
	// keyLine and keyCol are the position of the key of a collection that is a mapping value: errors about the
	// collection as a whole point at its key.
	keyLine, keyCol int
}

// where is the position errors about n point at.
func (n *node) where() (line, col int) {
	if n.keyLine > 0 {
		return n.keyLine, n.keyCol
	}
	return n.line, n.col
}

type nodeKind uint8

const (
	kindNull nodeKind = iota
	kindScalar
	kindMap
	kindSeq
)

type scalarKind uint8

const (
	scalarString scalarKind = iota
	scalarInt
	scalarFloat
	scalarBool
)

// describe names what a node is, for "want X, got Y" messages.
func (n *node) describe() string {
	switch n.kind {
	case kindNull:
		return "nothing (null)"
	case kindMap:
		return "a mapping"
	case kindSeq:
		return "a list"
	}
	switch n.scalar {
	case scalarInt:
		return "the integer " + n.str
	case scalarFloat:
		return "the number " + n.str
	case scalarBool:
		return "the boolean " + n.str
	}
	s := n.str
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return fmt.Sprintf("the string %q", s)
}

// drop removes the keys in ks from a mapping.
func (n *node) drop(ks []string) {
	for i := 0; i < len(n.keys); {
		if slices.Contains(ks, n.keys[i].str) {
			n.keys = slices.Delete(n.keys, i, i+1)
			n.vals = slices.Delete(n.vals, i, i+1)
			continue
		}
		i++
	}
}

// get returns the value of key k of a mapping, or nil.
func (n *node) get(k string) *node {
	if n == nil || n.kind != kindMap {
		return nil
	}
	for i, key := range n.keys {
		if key.str == k {
			return n.vals[i]
		}
	}
	return nil
}

// parseNodes parses YAML or JSON into a node tree. A syntax error is returned as an *experiment.Error with its position.
// A JSON document is read without go-yaml when jsonNodes can (the same tree, in a fraction of the memory).
func parseNodes(data []byte, file string) (*node, *experiment.Error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		if n, ok := jsonNodes(data); ok {
			return n, nil
		}
	}
	return yamlNodes(data, file)
}

// yamlNodes parses YAML (JSON included) into a node tree with go-yaml; a large file in parts (see splitNodes).
func yamlNodes(data []byte, file string) (*node, *experiment.Error) {
	if len(data) >= splitMin {
		if n, ok := splitNodes(data, splitMin, splitPart); ok {
			return n, nil
		}
	}
	body, perr := parseAST(data, file)
	if perr != nil {
		return nil, perr
	}
	c := converter{anchors: map[string]*node{}}
	n := c.convert(body)
	if c.err != nil {
		c.err.File = file
		return nil, c.err
	}
	n.aliased = c.sawAnchor
	return n, nil
}

// parseAST parses data with go-yaml and returns the body of its one document.
func parseAST(data []byte, file string) (ast.Node, *experiment.Error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		e := &experiment.Error{File: file, Msg: "not valid YAML or JSON: " + err.Error()}
		var se *yaml.SyntaxError
		if errors.As(err, &se) {
			e.Msg = "not valid YAML or JSON: " + se.Message
			if se.Token != nil {
				e.Line, e.Column = se.Token.Position.Line, se.Token.Position.Column
			}
		}
		return nil, e
	}
	var body ast.Node
	for _, d := range f.Docs {
		if d.Body == nil {
			continue
		}
		if _, isComment := d.Body.(*ast.CommentGroupNode); isComment {
			continue
		}
		if body != nil {
			return nil, &experiment.Error{File: file, Line: pos(d.Body).Line, Column: pos(d.Body).Column, Msg: "more than one YAML document; a spec is one document"}
		}
		body = d.Body
	}
	if body == nil {
		return nil, &experiment.Error{File: file, Line: 1, Column: 1, Msg: "empty spec: want a mapping with name, models, personas, questionnaire, ..."}
	}
	return body, nil
}

func pos(n ast.Node) token.Position {
	if n == nil {
		return token.Position{}
	}
	if t := n.GetToken(); t != nil && t.Position != nil {
		return *t.Position
	}
	return token.Position{}
}

type converter struct {
	anchors map[string]*node
	err     *experiment.Error
	depth   int
	// sawAnchor says an anchor or an alias was read: a part of a file read in parts (splitNodes) must have none.
	sawAnchor bool
}

func (c *converter) fail(n ast.Node, format string, args ...any) *node {
	if c.err == nil {
		p := pos(n)
		c.err = &experiment.Error{Line: p.Line, Column: p.Column, Msg: fmt.Sprintf(format, args...)}
	}
	return &node{kind: kindNull}
}

func (c *converter) convert(an ast.Node) *node {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > 200 {
		return c.fail(an, "nested too deeply")
	}
	p := pos(an)
	n := &node{line: p.Line, col: p.Column}
	switch v := an.(type) {
	case nil:
		n.kind = kindNull
	case *ast.NullNode:
		n.kind = kindNull
	case *ast.StringNode:
		n.kind, n.str = kindScalar, v.Value
	case *ast.LiteralNode:
		n.kind = kindScalar
		if v.Value != nil {
			n.str = v.Value.Value
		}
	case *ast.IntegerNode:
		n.kind, n.scalar, n.str = kindScalar, scalarInt, v.Token.Value
		switch x := v.Value.(type) {
		case int64:
			n.num = float64(x)
		case uint64:
			n.num = float64(x)
		}
	case *ast.FloatNode:
		n.kind, n.scalar, n.str, n.num = kindScalar, scalarFloat, v.Token.Value, v.Value
	case *ast.InfinityNode, *ast.NanNode:
		n.kind, n.scalar, n.str = kindScalar, scalarFloat, an.GetToken().Value
		return c.fail(an, "%s is not a usable number", n.str)
	case *ast.BoolNode:
		n.kind, n.scalar, n.str, n.boolean = kindScalar, scalarBool, v.Token.Value, v.Value
	case *ast.TagNode:
		return c.convert(v.Value)
	case *ast.AnchorNode:
		c.sawAnchor = true
		inner := c.convert(v.Value)
		c.anchors[strings.TrimSpace(v.Name.String())] = inner
		return inner
	case *ast.AliasNode:
		c.sawAnchor = true
		name := strings.TrimSpace(v.Value.String())
		target, ok := c.anchors[name]
		if !ok {
			return c.fail(an, "alias *%s names no anchor defined before it", name)
		}
		return target
	case *ast.MappingNode:
		n.kind = kindMap
		for _, mv := range v.Values {
			c.addPair(n, mv)
		}
	case *ast.MappingValueNode:
		n.kind = kindMap
		c.addPair(n, v)
	case *ast.SequenceNode:
		n.kind = kindSeq
		for _, e := range v.Values {
			n.vals = append(n.vals, c.convert(e))
		}
	case *ast.CommentGroupNode:
		n.kind = kindNull
	default:
		return c.fail(an, "unsupported YAML construct %s", an.Type())
	}
	return n
}

func (c *converter) addPair(m *node, mv *ast.MappingValueNode) {
	if mv.Key.IsMergeKey() {
		src := c.convert(mv.Value)
		var maps []*node
		switch src.kind {
		case kindMap:
			maps = []*node{src}
		case kindSeq:
			maps = src.vals
		}
		for _, s := range maps {
			if s.kind != kindMap {
				c.fail(mv.Value, "a merge key (<<) takes a mapping or a list of mappings")
				return
			}
			for i, k := range s.keys {
				if m.get(k.str) == nil {
					m.keys, m.vals = append(m.keys, k), append(m.vals, s.vals[i])
				}
			}
		}
		return
	}
	k := c.convert(mv.Key)
	if len(m.keys) == 0 && len(m.vals) == 0 {
		// A mapping is where its first key is (the library places a block mapping at its first ':').
		m.line, m.col = k.line, k.col
	}
	if k.kind != kindScalar {
		c.fail(mv.Key, "a mapping key must be a plain value, not %s", k.describe())
		return
	}
	// A key given explicitly overrides the same key brought in by a merge key.
	for i, old := range m.keys {
		if old.str == k.str {
			m.keys[i], m.vals[i] = k, c.convert(mv.Value)
			m.vals[i].keyLine, m.vals[i].keyCol = k.line, k.col
			return
		}
	}
	v := c.convert(mv.Value)
	if v.kind == kindMap || v.kind == kindSeq || v.kind == kindNull {
		v.keyLine, v.keyCol = k.line, k.col
	}
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
}
