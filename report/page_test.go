package report

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/fstest"
)

// TestPageAfterAReport: a page built on the report's templates has the report's head and helpers, also once a
// report has been written in the same process (html/template cannot clone an executed template).
func TestPageAfterAReport(t *testing.T) {
	if err := page.ExecuteTemplate(io.Discard, "hist", histogram{}); err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"p.tmpl": {Data: []byte(`<head>{{template "head"}}</head>{{stat .}} {{twice 2}}`)}}
	p, err := Page(fsys, "p.tmpl", map[string]any{"twice": func(v int) int { return 2 * v }})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	v := 0.5
	if err := p.ExecuteTemplate(&b, "p.tmpl", &v); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, `default-src 'none'`) || !strings.HasSuffix(s, "0.500 4") {
		t.Errorf("page %q: want the report's policy, then 0.500 4", s)
	}
}
