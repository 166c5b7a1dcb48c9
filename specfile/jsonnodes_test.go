package specfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestJSONNodesAsYAML holds jsonNodes to the tree go-yaml's AST gives for the same JSON, positions included: the
// saved specs workers read, the framework's JSON, and hand-written corner cases.
func TestJSONNodesAsYAML(t *testing.T) {
	docs := map[string][]byte{}
	for _, path := range []string{"testdata/ipip50.yaml", "../examples/quickstart/experiment.yaml",
		"../examples/bfi/experiment.yaml", "../examples/embed/experiment.yaml"} {
		s, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		docs[path+" (saved)"] = b
		if b, err = json.MarshalIndent(s, "", "  "); err != nil {
			t.Fatal(err)
		}
		docs[path+" (indented)"] = b
	}
	b, err := os.ReadFile(filepath.Join("testdata", "bfi_example.json"))
	if err != nil {
		t.Fatal(err)
	}
	docs["bfi_example.json"] = b
	for name, s := range map[string]string{
		"scalars":   `{"a": 1, "b": -2, "c": 0.5, "d": 1e3, "e": -1.5E-2, "f": true, "g": false, "h": null, "i": "x", "j": 1e-07, "k": 1.5e-07, "l": 1e+21, "m": 1E3, "n": -0, "o": 0.0, "p": 1.5e+300, "q": -2e-5}`,
		"empty":     `{"a": {}, "b": [], "c": [{}], "d": [[]], "e": ""}`,
		"unicode":   "{\"é\": \"ünïcödé ✓\", \"k\": \"after\", \"esc\": \"a\\nb\\t\\\"q\\\" \\u00e9 \\/ \\\\\", \"z\": 1}",
		"multiline": "{\n  \"a\": [\n    1,\n    {\"b\": \"c\"}\n  ],\n\n  \"d\":\n    {\"e\": null}\n}\n",
		"crlf":      "{\r\n  \"a\": 1,\r\n  \"b\": [true]\r\n}\r\n",
		"top list":  `[1, "two", {"three": 3}]`,
		"spaces":    "  {\"a\" :1 , \"b\":[ 2 ,3 ] }  \n",
	} {
		docs[name] = []byte(s)
	}
	for name, b := range docs {
		want, perr := yamlNodes(b, name)
		if perr != nil {
			t.Fatalf("%s: go-yaml: %v", name, perr)
		}
		got, ok := jsonNodes(b)
		if !ok {
			t.Errorf("%s: jsonNodes declined plain JSON", name)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: trees differ:\n%s", name, firstDifference(got, want, ""))
		}
	}
}

// TestJSONNodesDeclines holds that what jsonNodes cannot read exactly as go-yaml does is left to go-yaml.
func TestJSONNodesDeclines(t *testing.T) {
	for _, s := range []string{
		`{"a": 1, "a": 2}`,            // duplicate key: go-yaml's error
		`{"<<": {"a": 1}}`,            // a merge key
		`{"a": 1} {"b": 2}`,           // two documents
		`{"a": 1} # a comment`,        // YAML after JSON
		`{a: 1}`,                      // YAML flow mapping
		`{"a": 99999999999999999999}`, // integer out of range
		`{"a": "\ud83d\ude00"}`,       // surrogate pair
		"{\"a\": \"\xff\"}",           // not UTF-8
		`{"a": [1, 2}`,                // syntax error
		"{\t\"a\": 1}",                // a tab, which go-yaml counts otherwise
	} {
		if _, ok := jsonNodes([]byte(s)); ok {
			t.Errorf("jsonNodes read %q; want it left to go-yaml", s)
		}
	}
}

// firstDifference describes where two node trees first differ.
func firstDifference(a, b *node, path string) string {
	if a == nil || b == nil {
		if a != b {
			return path + ": one side is nil"
		}
		return ""
	}
	ha := *a
	hb := *b
	ha.keys, ha.vals, hb.keys, hb.vals = nil, nil, nil, nil
	if !reflect.DeepEqual(ha, hb) {
		return path + ": " + describeNode(a) + " vs " + describeNode(b)
	}
	if len(a.keys) != len(b.keys) || len(a.vals) != len(b.vals) {
		return path + ": different lengths"
	}
	for i := range a.keys {
		if d := firstDifference(a.keys[i], b.keys[i], path+".key"+a.keys[i].str); d != "" {
			return d
		}
	}
	for i := range a.vals {
		if d := firstDifference(a.vals[i], b.vals[i], path+"["+string(rune('0'+i%10))+"]"); d != "" {
			return d
		}
	}
	return ""
}

func describeNode(n *node) string {
	b, _ := json.Marshal(map[string]any{"kind": n.kind, "line": n.line, "col": n.col, "str": n.str, "scalar": n.scalar,
		"num": n.num, "bool": n.boolean, "keyLine": n.keyLine, "keyCol": n.keyCol})
	return string(b)
}
