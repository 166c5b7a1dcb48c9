package sim

import (
	"encoding/json"
	"slices"
	"strings"
)

// reply is one choice's answer before limits and faults cut it: its text and, when the text writes an answer
// option, where the option's label is and which labels the model could have written there.
type reply struct {
	text string
	// labelAt and labelEnd are the byte offsets of the label in text; labelAt is -1 when the text writes no
	// option (a sentence).
	labelAt, labelEnd int
	// labels are the options' labels as the text writes them: the enumerators of the prompt's options ("3",
	// "c") or, in a JSON answer to a schema with an enum, the option ids (JSON-escaped). The label is one token.
	labels []string
	// chosen is the index in labels of the label text writes.
	chosen int
}

// label returns the label text writes, or "".
func (r reply) label() string {
	if r.labelAt < 0 {
		return ""
	}
	return r.text[r.labelAt:r.labelEnd]
}

// lastUser returns the content of the last user message, where the options are listed.
func lastUser(msgs []chatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// optionLabel returns an option's label: its enumerator without the "." or ")" (up to three digits, or a letter).
func optionLabel(option string) string {
	i := 0
	for i < len(option) && i < 3 && option[i] >= '0' && option[i] <= '9' {
		i++
	}
	return option[:max(i, 1)]
}

// compose writes the answer of hash h to msgs in format f. The option is the one answer chose before formats
// existed (opts[h mod len(opts)]), so a plain request's answer is unchanged; a plain answer is the option as the
// prompt writes it ("3. Neither Accurate Nor Inaccurate"), label first. A JSON answer is {"answer":"<label>"},
// with the label mapped to the schema's enum when there is one: the enum value equal to the label, else the
// value at the option's place when the enum lists as many values as the prompt lists options, else
// enum[h mod len(enum)]. A reason, when the schema has one, follows the answer, so the label is always the
// token after {"answer":".
//
// Under a position bias, the answers its draw picks (see PositionBias) write the option at its position instead.
func compose(h uint64, msgs []chatMessage, f responseFormat, bias PositionBias) reply {
	last := lastUser(msgs)
	var buf [maxEnumerators]span
	spans := findOptions(last, buf[:0])
	labels := make([]string, len(spans))
	for i, s := range spans {
		labels[i] = optionLabel(last[s.start:s.end])
	}
	k := -1
	if len(spans) > 0 {
		k = int(h % uint64(len(spans)))
		if b := bias.at(h, len(spans)); b >= 0 {
			k = b
		}
	}
	if !f.json() {
		if k < 0 {
			return reply{text: sentence(h), labelAt: -1}
		}
		return reply{text: last[spans[k].start:spans[k].end], labelEnd: len(labels[k]), labels: labels, chosen: k}
	}

	const prefix = `{"answer":`
	r := reply{labelAt: -1}
	var answer string
	switch {
	case f.enum != nil:
		c := -1
		if k >= 0 {
			c = slices.Index(f.enum, labels[k])
			if c < 0 && len(f.enum) == len(labels) {
				c = k
			}
		}
		if c < 0 {
			c = int(h % uint64(len(f.enum)))
		}
		answer, r.chosen = f.enum[c], c
		r.labels = make([]string, len(f.enum))
		for i, id := range f.enum {
			r.labels[i] = jsonInner(id)
		}
	case k >= 0:
		answer, r.labels, r.chosen = labels[k], labels, k
	default:
		answer = sentence(h)
	}
	var sb strings.Builder
	sb.WriteString(prefix)
	q := jsonString(answer)
	if r.labels != nil {
		r.labelAt = len(prefix) + 1
		r.labelEnd = len(prefix) + len(q) - 1
	}
	sb.WriteString(q)
	if f.reason {
		sb.WriteString(`,"reason":`)
		sb.WriteString(jsonString(reason(h)))
	}
	sb.WriteByte('}')
	r.text = sb.String()
	return r
}

// jsonString is s as a JSON string, quotes included.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil { // a string always encodes; invalid UTF-8 becomes U+FFFD
		return `""`
	}
	return string(b)
}

// jsonInner is s as it appears between the quotes of a JSON string.
func jsonInner(s string) string {
	q := jsonString(s)
	return q[1 : len(q)-1]
}

// reason is the reason a JSON answer gives when the schema asks for one.
func reason(h uint64) string {
	switch mix64(h^0x5ea50) % 4 {
	case 0:
		return "It fits how I usually behave."
	case 1:
		return "That is how I see myself most days."
	case 2:
		return "It depends, but this is closest."
	default:
		return "This matches my experience."
	}
}
