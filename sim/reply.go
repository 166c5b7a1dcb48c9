package sim

import (
	"encoding/json"
	"slices"
	"strconv"
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

// optionText returns an option's text after its enumerator and the separator and spaces that follow it
// ("Neutral" for "3. Neutral").
func optionText(option string) string {
	return strings.TrimLeft(option[len(optionLabel(option)):], ".) \t")
}

// compose writes the answer of hash h to msgs in format f. The option is the one answer chose before formats
// existed (opts[h mod len(opts)]), so a plain request's answer is unchanged; a plain answer is the option as the
// prompt writes it ("3. Neither Accurate Nor Inaccurate"), label first. A JSON answer is {"answer":"<label>"},
// with the label mapped to the schema's enum when there is one: the enum value equal to the label, else the
// value at the option's place when the enum lists as many values as the prompt lists options, else
// enum[h mod len(enum)]. A reason, when the schema has one, follows the answer, so the label is always the
// token after {"answer":". pick, when not negative, is the index in the reply's labels of the option to write
// instead (seeded sampling's draw; the labels do not depend on h). Otherwise, with preferences, the option is
// drawn by them (see Preferences) rather than taken at h mod len(opts); and under a position bias, the answers its
// draw picks (see PositionBias) write the option at its position instead.
func compose(h uint64, msgs []chatMessage, f responseFormat, pick int, bias PositionBias, prefs Preferences) reply {
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
		if c := prefs.draw(h, last, spans); c >= 0 {
			k = c
		}
		if pick >= 0 && pick < len(spans) {
			k = pick
		} else if b := bias.at(h, len(spans)); b >= 0 {
			k = b
		}
	}
	if !f.json() {
		if k < 0 {
			return reply{text: sentence(h), labelAt: -1}
		}
		return reply{text: last[spans[k].start:spans[k].end], labelEnd: len(labels[k]), labels: labels, chosen: k}
	}

	if f.stated != nil {
		return reply{text: stated(h, f.stated, labels, k), labelAt: -1}
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
		if pick >= 0 && pick < len(f.enum) {
			c = pick
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

// stated writes the probabilities a verbalized answer of hash h states for ids (the schema's keys): the id the
// written answer would choose (the one equal to the prompt's label k, else the one at its place when the schema
// lists as many ids as the prompt lists options, else ids[h mod len(ids)]) gets a weight from 0.50 to 0.99, every
// other id one from 0.00 to 0.49, so the stated answer is the written one and never tied. Two answers in three
// state those weights as they are (their sum is rarely 1, so that silico's normalisation is exercised); the
// third divides them by their sum and writes 4 decimals (a sum of 1 to rounding).
func stated(h uint64, ids, labels []string, k int) string {
	c := -1
	if k >= 0 {
		c = slices.Index(ids, labels[k])
		if c < 0 && len(ids) == len(labels) {
			c = k
		}
	}
	if c < 0 {
		c = int(h % uint64(len(ids)))
	}
	w := make([]float64, len(ids))
	var sum float64
	for i := range ids {
		r := float64(mix64(h^uint64(0x57a7ed+i))%50) / 100
		if i == c {
			r += 0.5
		}
		w[i] = r
		sum += r
	}
	normalise := mix64(h^0x5c0a1e)%3 == 0
	var sb strings.Builder
	sb.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(jsonString(id))
		sb.WriteByte(':')
		if normalise {
			sb.WriteString(strconv.FormatFloat(w[i]/sum, 'f', 4, 64))
		} else {
			sb.WriteString(strconv.FormatFloat(w[i], 'f', 2, 64))
		}
	}
	sb.WriteByte('}')
	return sb.String()
}
