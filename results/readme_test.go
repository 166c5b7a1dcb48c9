package results

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeOutputs is the text of README.md's "## Outputs" section.
func readmeOutputs(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "\n## Outputs\n")
	if start < 0 {
		t.Fatal("README.md has no ## Outputs section")
	}
	s = s[start+len("\n## Outputs\n"):]
	if end := strings.Index(s, "\n## "); end >= 0 {
		s = s[:end]
	}
	return s
}

// TestReadmeListsTheColumns: README's list of the columns of results.jsonl and results.csv is Header(), in order,
// so the docs cannot drift from the table rowColumns.
func TestReadmeListsTheColumns(t *testing.T) {
	const intro = "`results.jsonl` and `results.csv` have one row per cell in submission order: `"
	s := readmeOutputs(t)
	i := strings.Index(s, intro)
	if i < 0 {
		t.Fatalf("README's ## Outputs no longer says %q", intro)
	}
	list, _, ok := strings.Cut(s[i+len(intro):], "`")
	if !ok {
		t.Fatal("README's list of columns has no closing backtick")
	}
	// A column may be annotated with its values in parentheses: "status (ok|unparsed|failed)".
	annotation := regexp.MustCompile(`\s*\([^)]*\)$`)
	var got []string
	for _, f := range strings.Split(list, ",") {
		got = append(got, annotation.ReplaceAllString(strings.Join(strings.Fields(f), " "), ""))
	}
	if want := Header(); !slices.Equal(got, want) {
		t.Errorf("README lists the columns\n%v\nHeader() is\n%v", got, want)
	}
}

// TestReadmeNamesTheFactsOfOneRun: the sentence of README's ## Outputs that lists the facts of one run names
// exactly the columns marked run, in table order.
func TestReadmeNamesTheFactsOfOneRun(t *testing.T) {
	const tail = " are facts of one run"
	s := strings.Join(strings.Fields(readmeOutputs(t)), " ")
	i := strings.Index(s, tail)
	if i < 0 {
		t.Fatalf("README's ## Outputs no longer says which columns%s", tail)
	}
	// The sentence starts after the previous sentence's end.
	sentence := s[:i]
	if j := strings.LastIndex(sentence, ". "); j >= 0 {
		sentence = sentence[j+2:]
	}
	var got []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(sentence, -1) {
		got = append(got, m[1])
	}
	var want []string
	for _, c := range rowColumns {
		if c.run {
			want = append(want, c.name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("README names %v as the facts of one run, the columns marked run are %v", got, want)
	}
}
