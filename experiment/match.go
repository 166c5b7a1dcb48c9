package experiment

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Match statuses.
const (
	MatchOK       = "ok"
	MatchUnparsed = "unparsed"
)

// MatchResult is the option a raw answer chose. Status is MatchOK with OptionID set, or MatchUnparsed; an
// unparsed answer that fits several options equally well lists their ids in Candidates.
type MatchResult struct {
	Status     string   `json:"status"`
	OptionID   string   `json:"option_id,omitempty"`
	Candidates []string `json:"candidates,omitempty"`
}

var refusals = []string{
	"as an ai", "as a language model", "as an artificial intelligence", "i cannot", "i can't", "i can not",
	"i'm sorry", "i am sorry", "i apologize", "i'm unable", "i am unable", "i'm not able", "i am not able",
	"i do not have personal", "i don't have personal",
}

var answerPrefixes = []string{"my answer is", "the answer is", "answer:", "answer", "option", "choice", "rating:", "response:"}

// Match maps a model's raw answer to an option of set. In order: a whole-answer match of an option id or text;
// refusals ("As an AI", "I cannot") are unparsed; a leading enumeration ("3", "3.", "3)", "(3)", "c)", "C.")
// against the option ids, the enumerations that start the option texts, or the position of a letter; the option
// text contained in the answer (case-insensitive, whole words, "3. Neutral" also as "Neutral", the longest
// wins); a lone option number in a short answer. Two equally good options give MatchUnparsed with Candidates.
func Match(raw string, set OptionSet) MatchResult {
	ans := normalizeAnswer(raw)
	if ans == "" {
		return MatchResult{Status: MatchUnparsed}
	}
	low := strings.ToLower(ans)
	bare := strings.TrimRight(low, ".!")

	// The whole answer is an option id or text.
	var cands []string
	for _, o := range set.Options {
		t := strings.ToLower(normalizeAnswer(o.Text))
		if bare == strings.ToLower(o.ID) || bare == strings.TrimRight(t, ".!") || (bare == coreText(t) && bare != "") {
			cands = appendUnique(cands, o.ID)
		}
	}
	if r, done := decide(cands); done {
		return r
	}
	for _, p := range refusals {
		if strings.Contains(low, p) {
			return MatchResult{Status: MatchUnparsed}
		}
	}

	rest := stripAnswerPrefix(low)
	if enum, ok := leadingEnum(rest); ok {
		cands = cands[:0]
		letters := false
		for _, o := range set.Options {
			if strings.EqualFold(o.ID, enum) {
				cands = appendUnique(cands, o.ID)
			}
			if isLetter(o.ID) {
				letters = true
			}
			if e, ok := leadingEnum(strings.ToLower(normalizeAnswer(o.Text))); ok && e == enum {
				cands = appendUnique(cands, o.ID)
			}
		}
		if len(cands) == 0 && !letters && isLetter(enum) {
			if k := int(enum[0] - 'a'); k < len(set.Options) {
				cands = append(cands, set.Options[k].ID)
			}
		}
		if r, done := decide(cands); done {
			return r
		}
	}

	if r, done := decide(textMatches(low, set)); done {
		return r
	}

	// A lone option number somewhere in a short answer: "I'd pick 4".
	if utf8.RuneCountInString(ans) <= 60 {
		cands = cands[:0]
		for _, w := range strings.FieldsFunc(low, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if !isDigits(w) {
				continue
			}
			for _, o := range set.Options {
				if o.ID == w {
					cands = appendUnique(cands, o.ID)
				}
			}
		}
		if r, done := decide(cands); done {
			return r
		}
	}
	return MatchResult{Status: MatchUnparsed}
}

// decide turns candidates into a result: one is a match, several are a tie, none leaves the decision to the next rule.
func decide(cands []string) (MatchResult, bool) {
	switch len(cands) {
	case 0:
		return MatchResult{}, false
	case 1:
		return MatchResult{Status: MatchOK, OptionID: cands[0]}, true
	default:
		return MatchResult{Status: MatchUnparsed, Candidates: slices.Clone(cands)}, true
	}
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// textMatches finds the options whose text (or text without its enumeration) occurs in the answer as whole words.
// A match inside a longer match ("agree" in "strongly agree") does not count.
func textMatches(low string, set OptionSet) []string {
	type hit struct {
		id         string
		start, end int
	}
	var hits []hit
	for _, o := range set.Options {
		t := strings.TrimRight(strings.ToLower(normalizeAnswer(o.Text)), ".!")
		for _, needle := range []string{t, coreText(t)} {
			if needle == "" {
				continue
			}
			for off := 0; ; {
				k := strings.Index(low[off:], needle)
				if k < 0 {
					break
				}
				st, en := off+k, off+k+len(needle)
				if wordBoundary(low, st, en) {
					hits = append(hits, hit{o.ID, st, en})
				}
				off = st + 1
			}
		}
	}
	var out []string
	for i, h := range hits {
		inside := false
		for j, g := range hits {
			if i != j && g.id != h.id && g.start <= h.start && h.end <= g.end && g.end-g.start > h.end-h.start {
				inside = true
				break
			}
		}
		if !inside {
			out = appendUnique(out, h.id)
		}
	}
	return out
}

func wordBoundary(s string, start, end int) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:start])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return false
		}
	}
	if end < len(s) {
		r, _ := utf8.DecodeRuneInString(s[end:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// coreText is an option text without its leading enumeration: "3. neutral" → "neutral". Empty when it has none.
func coreText(t string) string {
	if _, ok := leadingEnum(t); !ok {
		return ""
	}
	t = strings.TrimLeft(t, "([")
	j := strings.IndexAny(t, " .):]-")
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(strings.TrimLeft(t[j:], " .):]-–—"))
}

// leadingEnum reads an enumeration at the start of s (lower case): "3", "3.", "3)", "(3)", "3:", "c)", "c.".
// A letter needs punctuation after it or to stand alone, so "a little" is not "a".
func leadingEnum(s string) (string, bool) {
	paren := strings.HasPrefix(s, "(") || strings.HasPrefix(s, "[")
	if paren {
		s = s[1:]
	}
	n := 0
	for n < len(s) && n < 3 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	digits := n > 0
	if !digits && len(s) > 0 && s[0] >= 'a' && s[0] <= 'z' {
		n = 1
	}
	if n == 0 || (n < len(s) && s[n] >= '0' && s[n] <= '9') {
		return "", false
	}
	enum, rest := s[:n], s[n:]
	switch {
	case rest == "":
		return enum, true
	case strings.ContainsRune(".):]-", rune(rest[0])):
		if rest[0] == '.' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9' {
			return "", false // 3.5 is a number, not an enumeration
		}
		return enum, true
	case paren:
		return "", false
	case digits && (rest[0] == ' ' || rest[0] == ','):
		return enum, true
	}
	return "", false
}

func stripAnswerPrefix(s string) string {
	for _, p := range answerPrefixes {
		if strings.HasPrefix(s, p) {
			r := strings.TrimLeft(s[len(p):], " :-–=")
			if r != "" {
				return r
			}
		}
	}
	return s
}

func isLetter(s string) bool {
	return len(s) == 1 && s[0] >= 'a' && s[0] <= 'z' || len(s) == 1 && s[0] >= 'A' && s[0] <= 'Z'
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// quoteChars are the characters quoteReplacer replaces on their own; it also drops "**" and "__".
const quoteChars = "\u201c\u201d\u201e\u00ab\u00bb\u2018\u2019\u201a`\u00a0"

// singleSpaced reports whether s is already what strings.Join(strings.Fields(s), " ") makes of it: ASCII
// spaces only, one between words, none at either end.
func singleSpaced(s string) bool {
	prev := byte(' ')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			return false // possibly Unicode white space: leave it to strings.Fields
		case c == ' ' && prev == ' ', c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			return false
		}
		prev = c
	}
	return prev != ' ' || s == ""
}

var quoteReplacer = strings.NewReplacer(
	"\u201c", `"`, "\u201d", `"`, "\u201e", `"`, "\u00ab", `"`, "\u00bb", `"`,
	"\u2018", "'", "\u2019", "'", "\u201a", "'", "`", "",
	"**", "", "__", "", "\u00a0", " ",
)

// normalizeAnswer straightens quotes, drops markdown emphasis, headings and quoting, collapses white space and
// trims surrounding quotes.
func normalizeAnswer(s string) string {
	// Match normalises the answer and every option text of every cell: the replacer and the re-joined fields
	// allocate even when they change nothing, so they run only on strings they would change.
	if strings.ContainsAny(s, quoteChars) || strings.Contains(s, "**") || strings.Contains(s, "__") {
		s = quoteReplacer.Replace(s)
	}
	if !singleSpaced(s) {
		s = strings.Join(strings.Fields(s), " ")
	}
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

// Labels maps every spelling of an option label to the option's index in set: how the label token of an answer
// is read (see package optionprobs). The labels of an option are its id, the enumeration its text starts with ("3." gives
// "3"), its letter by position when no option id is a letter (as Match reads "c)"), and its text when the text is
// one word ("agree"); all lower-cased. A spelling two options share belongs to neither. The answer reader
// passes the set a cell showed (ShownOptions.Set), whose ids are the labels shown, so no spelling comes from an
// id the prompt did not show; Match is given the same set, so the written answer and its logprobs are read
// alike.
func Labels(set OptionSet) map[string]int {
	out := make(map[string]int, 3*len(set.Options))
	shared := map[string]bool{}
	add := func(label string, k int) {
		label = strings.ToLower(strings.TrimSpace(label))
		if label == "" || shared[label] {
			return
		}
		if j, ok := out[label]; ok && j != k {
			delete(out, label)
			shared[label] = true
			return
		}
		out[label] = k
	}
	letters := slices.ContainsFunc(set.Options, func(o Option) bool { return isLetter(o.ID) })
	for k, o := range set.Options {
		add(o.ID, k)
		text := strings.ToLower(normalizeAnswer(o.Text))
		if e, ok := leadingEnum(text); ok {
			add(e, k)
		}
		if !letters && k < 26 {
			add(string(rune('a'+k)), k)
		}
		if w := strings.TrimRight(text, ".!"); w != "" && !strings.ContainsAny(w, " \t") {
			add(w, k)
		}
	}
	return out
}
