package specfile

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// fuzzSeedFiles are the spec files whose bytes, and whose saved JSON, seed the fuzz targets.
var fuzzSeedFiles = []string{"testdata/ipip50.yaml", "../examples/quickstart/experiment.yaml",
	"../examples/bfi/experiment.yaml", "../examples/embed/experiment.yaml"}

// FuzzJSONNodesAsYAML holds jsonNodes to TestJSONNodesAsYAML's property on any input: whatever it reads, go-yaml
// reads too, into the same tree, positions included; what it cannot read so it declines, and neither reader
// panics.
func FuzzJSONNodesAsYAML(f *testing.F) {
	for _, path := range fuzzSeedFiles {
		s, err := Load(path)
		if err != nil {
			f.Fatalf("%s: %v", path, err)
		}
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"a": 1, "b": -2, "c": 0.5, "d": 1e3, "e": -1.5E-2, "f": true, "g": false, "h": null, "i": "x", "n": -0}`,
		`{"a": {}, "b": [], "c": [{}], "d": [[]], "e": ""}`,
		"{\"é\": \"ünïcödé ✓\", \"esc\": \"a\\nb\\t\\\"q\\\" \\u00e9 \\/ \\\\\"}",
		"{\r\n  \"a\": 1,\r\n  \"b\": [true]\r\n}\r\n",
		`[1, "two", {"three": 3}]`,
		`{"a": 1, "a": 2}`, `{"<<": {"a": 1}}`, `{"a": 1} # c`, `{"a": "\ud83d\ude00"}`, "{\t\"a\": 1}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := jsonNodes(b)
		want, perr := yamlNodes(b, "fuzz")
		if !ok {
			return
		}
		if perr != nil {
			t.Fatalf("jsonNodes read %q, which go-yaml refuses: %v", b, perr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: trees differ:\n%s", b, firstDifference(got, want, ""))
		}
	})
}

// FuzzSplitYAMLAsWhole holds splitNodes to TestSplitYAMLAsWhole's property on any input and part size: a file it
// reads in parts is a file go-yaml reads whole, into the same tree, positions included; neither panics.
func FuzzSplitYAMLAsWhole(f *testing.F) {
	for _, path := range fuzzSeedFiles {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(64))
	}
	for _, s := range []string{
		"items:\n  # c\n  - id: a\n    text: \"x\"\n\n  - {id: b, text: y}   # t\n# c\n  - id: c\n    text: |\n      - not an entry\n",
		"items:\n- {id: p1, template: \"t\"}\n- id: p2\n  template: u\nrun: {max_concurrency: 4}\n",
		"a:\n  - &x {id: 1}\n  - *x\nb: 1\n", "text: |\n  Note:\n  - one\n  - two\n", "- 1\n- 2\n",
		"items:\n  - {id: 1\n  - {id: 2}\nb: 1\n",
	} {
		f.Add([]byte(s), uint16(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, part uint16) {
		got, ok := splitNodes(b, 1, int(part))
		body, perr := parseAST(b, "")
		if !ok {
			return
		}
		if perr != nil {
			t.Fatalf("%q read in parts of %d, but go-yaml refuses it whole: %v", b, part, perr)
		}
		c := converter{anchors: map[string]*node{}}
		want := c.convert(body)
		if c.err != nil {
			t.Fatalf("%q read in parts of %d, but not whole: %v", b, part, c.err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q, parts of %d: trees differ:\n%s", b, part, firstDifference(got, want, ""))
		}
	})
}
