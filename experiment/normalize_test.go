package experiment

import (
	"strings"
	"testing"
)

// normalizeAnswerSlow is normalizeAnswer without its shortcuts: the reference its fast paths must agree with.
func normalizeAnswerSlow(s string) string {
	s = quoteReplacer.Replace(s)
	s = strings.Join(strings.Fields(s), " ")
	for {
		t := strings.TrimLeft(s, "#> *")
		t = strings.Trim(t, `"' `)
		t = strings.TrimSuffix(t, "*")
		if t == s {
			break
		}
		s = t
	}
	return s
}

// FuzzNormalizeAnswer: skipping the replacer and the re-joined fields on strings they would not change never
// changes what normalizeAnswer returns.
func FuzzNormalizeAnswer(f *testing.F) {
	for _, s := range []string{"", " ", "3. Neutral", "  3.  Neutral ", "3.\tNeutral", "a\nb", "**4**", "__x__",
		"\u201cAgree\u201d", "it\u2019s 4", "`2`", "1.\u00a0No", "\u2003wide\u2003space", "> # 5", "\"'3'\"", "x*",
		"caf\u00e9 au lait", "a\rb", "a\vb\f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := normalizeAnswer(s), normalizeAnswerSlow(s); got != want {
			t.Errorf("normalizeAnswer(%q) = %q, want %q", s, got, want)
		}
	})
}
