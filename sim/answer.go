package sim

import "strings"

// FNV-1a, 64 bit: stable across processes and Go versions, unlike hash/maphash.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvUint64(h, v uint64) uint64 {
	for range 8 {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}

// mix64 is SplitMix64's finaliser: it spreads FNV's weak low bits before a modulo.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// answerHash is the hash of (model, seed, all messages) that chooses the answer.
func answerHash(model string, seed int64, msgs []chatMessage) uint64 {
	h := fnvString(fnvOffset, model)
	h = fnvUint64(h, uint64(seed))
	for _, m := range msgs {
		// The separators keep ("ab","c") and ("a","bc") apart.
		h = fnvString(h, "\x00"+m.Role)
		h = fnvString(h, "\x00"+m.Name)
		h = fnvString(h, "\x00")
		h = fnvString(h, m.Content)
	}
	return mix64(h)
}

// Options returns the answer options listed in text, each written as in the text ("3. Neither Accurate Nor
// Inaccurate"): the last run of two or more successive enumerators ("1.", "2)", "a.", "B)") that start a line
// or follow a space, comma, semicolon, colon or bracket. Options end at the next enumerator or the line's end;
// trailing separators (",", ";", ", or") are dropped, and an option closing a one-line list also ends at its
// first sentence break. Options exposes the parser the handler uses, for tests of prompt formats.
func Options(text string) []string {
	var buf [maxEnumerators]span
	spans := findOptions(text, buf[:0])
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = text[s.start:s.end]
	}
	return out
}

// maxEnumerators bounds the enumerators considered in one message; prompts list a handful of options.
const maxEnumerators = 64

type span struct{ start, end int }

type enumerator struct {
	start, body int // offsets of the enumerator and of its option text
	kind        byte
	value       int
}

const (
	kindDigit byte = iota + 1
	kindLower
	kindUpper
)

// findOptions appends the spans of the options in text to dst (which it reuses for scratch) and returns them.
// It allocates nothing for up to maxEnumerators enumerators.
func findOptions(text string, dst []span) []span {
	var encBuf [maxEnumerators]enumerator
	enums := scanEnumerators(text, encBuf[:0])

	// The last run of successive enumerators of one kind, at least two long.
	bestStart, bestLen := -1, 0
	for i := 0; i < len(enums); {
		j := i + 1
		for j < len(enums) && enums[j].kind == enums[j-1].kind && enums[j].value == enums[j-1].value+1 {
			j++
		}
		if j-i >= 2 {
			bestStart, bestLen = i, j-i
		}
		i = j
	}
	if bestStart < 0 {
		return dst[:0]
	}
	run := enums[bestStart : bestStart+bestLen]
	oneLine := strings.IndexByte(text[run[0].start:run[len(run)-1].start], '\n') < 0
	out := dst[:0]
	for i, e := range run {
		end := len(text)
		if i+1 < len(run) {
			end = run[i+1].start
		}
		if nl := strings.IndexByte(text[e.body:end], '\n'); nl >= 0 {
			end = e.body + nl
		}
		last := i == len(run)-1
		if last && oneLine {
			end = e.body + sentenceEnd(text[e.body:end])
		}
		end = e.body + len(trimOption(text[e.body:end], last && oneLine))
		if end <= e.body {
			continue // an enumerator without text is no option
		}
		out = append(out, span{e.start, end})
	}
	if len(out) < 2 {
		return dst[:0]
	}
	return out
}

// scanEnumerators finds "N." "N)" (N up to 3 digits) and "x." "x)" (one ASCII letter) followed by a space or tab,
// at the start of a line or after a space, comma, semicolon, colon or opening bracket.
func scanEnumerators(text string, dst []enumerator) []enumerator {
	for i := 0; i < len(text) && len(dst) < cap(dst); i++ {
		if i > 0 && !isBoundary(text[i-1]) {
			continue
		}
		c := text[i]
		var e enumerator
		j := i
		switch {
		case c >= '0' && c <= '9':
			for j < len(text) && j-i < 3 && text[j] >= '0' && text[j] <= '9' {
				e.value = e.value*10 + int(text[j]-'0')
				j++
			}
			e.kind = kindDigit
		case c >= 'a' && c <= 'z':
			e.kind, e.value, j = kindLower, int(c-'a'), i+1
		case c >= 'A' && c <= 'Z':
			e.kind, e.value, j = kindUpper, int(c-'A'), i+1
		default:
			continue
		}
		if j+1 >= len(text) || (text[j] != '.' && text[j] != ')') || (text[j+1] != ' ' && text[j+1] != '\t') {
			continue
		}
		k := j + 1
		for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
			k++
		}
		e.start, e.body = i, k
		dst = append(dst, e)
		i = k - 1
	}
	return dst
}

func isBoundary(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ';', ':', '(', '[':
		return true
	}
	return false
}

// sentenceEnd returns the offset of the first sentence break (". ", "? ", "! ") in s, or len(s).
func sentenceEnd(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '?' || s[i] == '!') && (s[i+1] == ' ' || s[i+1] == '\t') {
			return i
		}
	}
	return len(s)
}

func trimOption(s string, dropPeriod bool) string {
	for {
		n := len(s)
		s = strings.TrimRight(s, " \t\r,;")
		if dropPeriod {
			s = strings.TrimRight(s, ".")
		}
		for _, conj := range [...]string{" or", " and"} {
			if t, ok := strings.CutSuffix(s, conj); ok && strings.HasSuffix(strings.TrimRight(t, " \t"), ",") {
				s = t
			}
		}
		if len(s) == n {
			return s
		}
	}
}

// sentence is the reply when the prompt lists no options.
func sentence(h uint64) string {
	switch h % 6 {
	case 0:
		return "I would rather not say."
	case 1:
		return "That describes me fairly well."
	case 2:
		return "It depends on the situation."
	case 3:
		return "I am not sure about that."
	case 4:
		return "Yes, mostly."
	default:
		return "No, not really."
	}
}
