// Package suggest proposes the known word a mistyped one was probably meant to be, for "did you mean" hints in
// error messages.
package suggest

import (
	"fmt"
	"strings"
)

// DidYouMean returns " (did you mean X?)" when one of the candidates is close to got, "" otherwise. Close means
// an edit distance (case ignored) of at most max(2, len(got)/3), and less than the length of got, so that a short
// word is not "corrected" into an unrelated one.
func DidYouMean(got string, candidates []string) string {
	best, bestD := "", -1
	g := strings.ToLower(got)
	for _, c := range candidates {
		d := editDistance(g, strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(2, len(got)/3) || bestD == len(got) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
