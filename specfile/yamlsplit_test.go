package specfile

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// wholeNodes reads data in one piece, as yamlNodes does below splitMin.
func wholeNodes(t *testing.T, data []byte) *node {
	t.Helper()
	body, perr := parseAST(data, "")
	if perr != nil {
		t.Fatal(perr)
	}
	c := converter{anchors: map[string]*node{}}
	n := c.convert(body)
	if c.err != nil {
		t.Fatal(c.err)
	}
	return n
}

// TestSplitYAMLAsWhole holds a file read in parts to the tree of the whole file, positions included, with
// parts of a few entries: block and flow entries, comments and blank lines between them, block scalars,
// nested lists, a sequence not indented under its key, and the example specs.
func TestSplitYAMLAsWhole(t *testing.T) {
	docs := map[string]string{}
	for _, path := range []string{"testdata/ipip50.yaml", "../examples/quickstart/experiment.yaml",
		"../examples/bfi/experiment.yaml", "../examples/embed/experiment.yaml"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		docs[path] = string(b)
	}
	docs["generated"] = string(largeSpec(300))
	docs["styles"] = `name: styles
questionnaire:
  name: q
  items:
    # a comment before the first entry
    - id: a
      text: "first, block mapping"

    - {id: b, text: second, scale: E}   # a trailing comment
# a comment at column 1
    - id: c
      text: |
        a literal block
        - that looks like an entry
          and: a key
      options: [x, y]
    - id: d
      text: >-
        folded
        text
    -
      id: e
      text: 'single ''quoted'''
    - id: f
      nested:
        - 1
        - [2, 3]
        - {k: v}
    - id: g
      text: "multi
        line"
personas:
- {id: p1, template: "t"}
- id: p2
  template: u
run: {max_concurrency: 4}
`
	for name, s := range docs {
		want := wholeNodes(t, []byte(s))
		for _, part := range []int{1, 64, 300} {
			got, ok := splitNodes([]byte(s), 1, part)
			if !ok {
				if name == "generated" || name == "styles" {
					t.Errorf("%s, parts of %d bytes: not read in parts", name, part)
				}
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, parts of %d bytes: trees differ:\n%s", name, part, firstDifference(got, want, ""))
			}
		}
	}
}

// TestSplitYAMLDeclines holds that what cannot be read in parts exactly is read whole.
func TestSplitYAMLDeclines(t *testing.T) {
	for name, s := range map[string]string{
		"anchor in an entry":   "a:\n  - &x {id: 1}\n  - *x\nb: 1\n",
		"alias to the outside": "d: &x {k: 1}\nitems:\n  - *x\n  - {id: 2}\n",
		"syntax error":         "items:\n  - {id: 1\n  - {id: 2}\nb: 1\n",
		"in a literal block":   "text: |\n  Note:\n  - one\n  - two\n",
		"no key line":          "- 1\n- 2\n",
	} {
		if _, ok := splitNodes([]byte(s), 1, 1); ok {
			t.Errorf("%s: read in parts; want it read whole", name)
		}
	}
	// A file below splitMin is read whole: the same errors as ever.
	if _, perr := yamlNodes([]byte("items:\n  - {id: 1\n"), "f.yaml"); perr == nil || !strings.Contains(perr.Error(), "f.yaml:") {
		t.Errorf("syntax error: %v", perr)
	}
}
