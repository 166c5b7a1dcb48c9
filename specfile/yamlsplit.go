package specfile

import (
	"bytes"
	"regexp"
)

// Reading a large YAML spec in parts. go-yaml's AST holds about eight bytes per byte of input, so a 52 MB item
// bank needs over 400 MB for the AST alone. A spec that large is one long block sequence (the items, or the
// personas): yamlNodes reads the rest of the file with that sequence blanked out, reads the sequence a few
// thousand lines at a time, and puts the parts' entries in its place, each part's lines shifted to where they
// are in the file. The tree is the one the whole file gives (TestSplitYAMLAsWhole and FuzzSplitYAMLAsWhole hold
// it so); whenever that cannot be told from the text alone (a carriage return or a tab in the file, an anchor or
// an alias in a part, a part that does not read as a sequence, a sequence that ends in a null before more of the
// file, any error) the file is read whole, which also gives go-yaml's own error.

// splitMin is the size of a block sequence, in bytes, from which it is read in parts of about splitPart bytes.
const (
	splitMin  = 4 << 20
	splitPart = 1 << 20
)

// keyLine is a line that ends with a mapping key and no value: what a block sequence's key line looks like. The
// key is a plain word (letters, digits, _ . - and inner spaces): a tag, an anchor, a quote or a flow collection
// on the line could make go-yaml read the file otherwise than its parts.
var keyLine = regexp.MustCompile(`^[ ]*[A-Za-z0-9_]([A-Za-z0-9_. -]*[A-Za-z0-9_.-])?:[ ]*(#.*)?$`)

// seqRun is a run of block sequence entries at one indentation: lines [first, end) of the file, the key on line
// key (all 0-based).
type seqRun struct {
	key, first, end int
	indent          int
}

// lineInfo is a line's offset and indentation; entry says it starts a block sequence entry ("- " or "-").
type lineInfo struct {
	off    int
	indent int
	blank  bool // empty, white space or a comment only
	entry  bool
	tabbed bool // starts with a tab: never part of a run
}

func scanLines(data []byte) []lineInfo {
	var out []lineInfo
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off
		}
		l := data[off:end]
		li := lineInfo{off: off}
		for li.indent < len(l) && l[li.indent] == ' ' {
			li.indent++
		}
		rest := bytes.TrimRight(l[li.indent:], " \r")
		switch {
		case len(rest) > 0 && rest[0] == '\t':
			li.tabbed = true
		case len(rest) == 0 || rest[0] == '#':
			li.blank = true
		case rest[0] == '-' && (len(rest) == 1 || rest[1] == ' '):
			li.entry = true
		}
		out = append(out, li)
		off = end + 1
	}
	return out
}

// longestRun finds the largest run of block sequence entries (in bytes) that follows a key line.
func longestRun(data []byte, lines []lineInfo) (best seqRun, size int) {
	lineEnd := func(i int) int {
		if i+1 < len(lines) {
			return lines[i+1].off
		}
		return len(data)
	}
	for i := 0; i < len(lines); i++ {
		if !lines[i].entry {
			continue
		}
		ind := lines[i].indent
		// The nearest line before that is not blank must be a key line at most as indented.
		k := i - 1
		for k >= 0 && lines[k].blank {
			k--
		}
		j := i + 1
		for j < len(lines) && !lines[j].tabbed && (lines[j].blank || lines[j].indent > ind || lines[j].entry && lines[j].indent == ind) {
			j++
		}
		if k >= 0 && !lines[k].tabbed && lines[k].indent <= ind && keyLine.Match(bytes.TrimSuffix(data[lines[k].off:lineEnd(k)], []byte{'\n'})) {
			if n := lineEnd(j-1) - lines[i].off; n > size {
				best, size = seqRun{key: k, first: i, end: j, indent: ind}, n
			}
		}
		i = j - 1
	}
	return best, size
}

// splitNodes reads data in parts as described above; ok is false when it did not (the caller reads it whole).
func splitNodes(data []byte, minRun, part int) (root *node, ok bool) {
	if bytes.ContainsAny(data, "\r\t") {
		// go-yaml counts the lines around a carriage return its own way (a lone one is a line break, and one
		// ending a comment line before a line feed counts twice), and the columns around a tab: the whole file
		// decides.
		return nil, false
	}
	lines := scanLines(data)
	run, size := longestRun(data, lines)
	if size < minRun || size == 0 {
		return nil, false
	}
	off := func(i int) int {
		if i < len(lines) {
			return lines[i].off
		}
		return len(data)
	}
	start, end := off(run.first), off(run.end)
	// The rest of the file, the run's lines left empty so that every line keeps its number.
	outer := make([]byte, 0, len(data)-(end-start)+(run.end-run.first))
	outer = append(outer, data[:start]...)
	outer = append(outer, bytes.Repeat([]byte{'\n'}, bytes.Count(data[start:end], []byte{'\n'}))...)
	outer = append(outer, data[end:]...)
	root, ok = readPart(outer, 0)
	if !ok {
		return nil, false
	}
	// go-yaml places some nodes by what follows them: an implicit null (an empty entry "-", a key with no value)
	// one column further, and a plain scalar over several lines on its last line, when the document ends right
	// after them; an empty last entry followed by a key becomes that key's mapping. So a part that the file goes
	// on after is read with a stand-in entry after it, as the whole file reads it, the stand-in then dropped; and
	// a run that ends in a null, with more of the file after it, is left to the whole file.
	goesOn := false
	for _, l := range lines[run.end:] {
		goesOn = goesOn || !l.blank
	}
	standIn := append(bytes.Repeat([]byte{' '}, run.indent), "- 0\n"...)
	seq := &node{kind: kindSeq}
	for i := run.first; i < run.end; {
		j := i + 1
		for j < run.end && (off(j)-off(i) < part || !(lines[j].entry && lines[j].indent == run.indent)) {
			j++
		}
		text, more := data[off(i):off(j)], j < run.end || goesOn
		if more {
			text = append(text[:len(text):len(text)], standIn...)
		}
		n, ok := readPart(text, i)
		if !ok || n.kind != kindSeq {
			return nil, false
		}
		if more {
			if len(n.vals) < 2 {
				return nil, false
			}
			n.vals = n.vals[:len(n.vals)-1]
		}
		if j == run.end && goesOn && endsInNull(n) {
			return nil, false
		}
		if i == run.first {
			seq.line, seq.col = n.line, n.col
		}
		seq.vals = append(seq.vals, n.vals...)
		i = j
	}
	// The run's place in the outer tree: the value of the key on the key line, null there.
	v := keyAt(root, run.key+1)
	if v == nil || v.kind != kindNull {
		return nil, false
	}
	seq.keyLine, seq.keyCol = v.keyLine, v.keyCol
	*v = *seq
	return root, true
}

// endsInNull reports whether the last node of n, in the order of the text, is a null.
func endsInNull(n *node) bool {
	for len(n.vals) > 0 {
		n = n.vals[len(n.vals)-1]
	}
	return n.kind == kindNull
}

// readPart reads one part whose first line is line shift+1 of the file; ok is false on any error, an anchor or
// an alias.
func readPart(data []byte, shift int) (*node, bool) {
	f, perr := parseAST(data, "")
	if perr != nil || f == nil {
		return nil, false
	}
	c := converter{anchors: map[string]*node{}}
	n := c.convert(f)
	if c.err != nil || c.sawAnchor {
		return nil, false
	}
	if shift > 0 {
		shiftLines(n, shift)
	}
	return n, true
}

func shiftLines(n *node, by int) {
	n.line += by
	if n.keyLine > 0 {
		n.keyLine += by
	}
	for _, k := range n.keys {
		shiftLines(k, by)
	}
	for _, v := range n.vals {
		shiftLines(v, by)
	}
}

// keyAt returns the value of the mapping key on line (1-based) anywhere in the tree, or nil.
func keyAt(n *node, line int) *node {
	if n == nil {
		return nil
	}
	for i, k := range n.keys {
		if k.line == line {
			return n.vals[i]
		}
	}
	for _, v := range n.vals {
		if v.kind == kindMap || v.kind == kindSeq {
			if r := keyAt(v, line); r != nil {
				return r
			}
		}
	}
	return nil
}
