package experiment

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// OrderMode is how an item's answer options are ordered when they are shown.
type OrderMode string

// The option order modes.
const (
	// OrderAsWritten shows the options as the spec writes them (the default).
	OrderAsWritten OrderMode = "as_written"
	// OrderReversed shows them in reverse, pinned options aside.
	OrderReversed OrderMode = "reversed"
	// OrderBalanced runs every cell twice: as written (the cell's own id) and reversed (id suffix /rev).
	OrderBalanced OrderMode = "balanced"
	// OrderShuffled shows each cell its own permutation, a pure function of the order seed and the cell id.
	OrderShuffled OrderMode = "shuffled"
)

var orderModes = []string{string(OrderAsWritten), string(OrderReversed), string(OrderBalanced), string(OrderShuffled)}

// ReversedCellSuffix ends the id of the reversed cell of a balanced item.
const ReversedCellSuffix = "/rev"

// permutationVersion prefixes the string whose SHA-256 seeds a shuffled cell's permutation. Changing how a
// permutation is drawn must change it, so that old runs' cells are never reread under a new order.
const permutationVersion = "silico/option-order/v1"

// OrderSettings say how an item's options are ordered: questionnaire.order for every item, an item's order
// instead of it (the item's section replaces the questionnaire's whole, it does not merge with it).
type OrderSettings struct {
	Mode OrderMode `json:"mode,omitempty"`
	// Pin are option ids that stay at their written position whatever the mode ("don't know").
	Pin []string `json:"pin,omitempty"`
	// Seed seeds shuffled permutations; nil: the cell's seed value.
	Seed *int64 `json:"seed,omitempty"`
}

// OrderFor returns the order settings of item i: its own, or the questionnaire's, the mode defaulted.
func (s *Spec) OrderFor(i int) OrderSettings {
	var out OrderSettings
	if o := s.Questionnaire.Items[i].Order; o != nil {
		out = *o
	} else if o := s.Questionnaire.Order; o != nil {
		out = *o
	}
	if out.Mode == "" {
		out.Mode = OrderAsWritten
	}
	return out
}

// Orders is how many cells each (item i, persona) has for its option orders: 2 under balanced, 1 otherwise.
func (s *Spec) Orders(i int) int { return s.numOrders(i) }

// numOrders is Orders.
func (s *Spec) numOrders(i int) int {
	if s.OrderFor(i).Mode == OrderBalanced {
		return 2
	}
	return 1
}

// ShownOptions are the options of a cell as its prompt shows them.
type ShownOptions struct {
	// Set is the option set in shown order, each option's text relabelled for its shown position and its id
	// replaced by its label there (see Shown): the one mapping, label ↔ shown position ↔ option, that the
	// json_schema enum, the verbalized keys, Match on the written answer and the logprob labels all read.
	Set OptionSet
	// Perm maps a shown position to the canonical option's index in OptionsFor(item).
	Perm []int
	// Order is the order the cell shows: as_written, reversed or shuffled (a balanced item's cells are
	// as_written and reversed).
	Order OrderMode
	canon []Option
}

// Shown returns cell c's options as shown: in the order of the cell's order mode, pinned options at their
// written positions. An option whose text starts with an enumeration ("1. Very Inaccurate", "A) Agree") has it
// replaced by the enumeration the written list has at the option's shown position, so the list still reads 1,
// 2, 3 …. Every option's id in Set is then the label the model saw at its position (ShownLabels): a model
// answers "1" having read "1. Disagree strongly", whatever id the spec gave that option, and an id the prompt
// never shows ("9") names nothing. Canonical maps labels, positions and distributions back to the spec's ids
// and order. Render's {answer_options}, the answer reader, the json_schema enum and the results all use it.
func (s *Spec) Shown(c Cell) ShownOptions {
	set := s.OptionsFor(c.Item)
	n := len(set.Options)
	ord := s.OrderFor(c.Item)
	mode := s.ShownOrder(c)
	perm := make([]int, n)
	for k := range perm {
		perm[k] = k
	}
	out := ShownOptions{Set: set, Perm: perm, Order: mode, canon: set.Options}
	if mode == OrderAsWritten || n < 2 {
		out.Set.Options = ShownLabels(set.Options)
		return out
	}
	// free are the positions of unpinned options: the permutation moves options among them only.
	var free []int
	for k, o := range set.Options {
		if !slices.Contains(ord.Pin, o.ID) {
			free = append(free, k)
		}
	}
	moved := make([]int, len(free))
	copy(moved, free)
	switch mode {
	case OrderReversed:
		for i, j := 0, len(moved)-1; i < j; i, j = i+1, j-1 {
			moved[i], moved[j] = moved[j], moved[i]
		}
	case OrderShuffled:
		seed := s.Seeds[c.Seed]
		if ord.Seed != nil {
			seed = *ord.Seed
		}
		r := permutationSource(seed, s.CellID(c))
		r.Shuffle(len(moved), func(i, j int) { moved[i], moved[j] = moved[j], moved[i] })
	}
	for i, pos := range free {
		perm[pos] = moved[i]
	}
	shown := make([]Option, n)
	for pos, k := range perm {
		shown[pos] = relabel(set.Options[k], set.Options[pos])
	}
	out.Set.Options = ShownLabels(shown)
	return out
}

// ShownLabels returns options (in the order shown, their texts as shown) with each id replaced by the label the
// option is shown with, the name a model has for it: the enumeration its text starts with, bare ("1. Agree" →
// "1", "(b) No" → "b"; spelt as the id that equals it but for case, if one does); for a text without one, the
// option's own id, which is then the only name the json_schema enum gives it, unless that id is another
// option's shown label (a "Don't know" with id "3" beside "3. Neutral"): that option is then named by its text.
// Labels follow what is shown, never the spec's ids, so an id that is another option's shown label, or that the
// list never shows, cannot misplace an answer. Validate refuses a list that shows one enumeration twice. options
// is returned as it is when every id already is its label.
func ShownLabels(options []Option) []Option {
	var buf [16]string
	enums := buf[:0]
	for _, o := range options {
		enums = append(enums, shownEnum(o.Text))
	}
	var out []Option
	for k, o := range options {
		label := o.ID
		switch {
		case enums[k] != "":
			// In the spelling of the id that is this label, if there is one ("a" for a text "A"), as the
			// spec writes it everywhere else.
			label = enums[k]
			if j := slices.IndexFunc(options, func(p Option) bool { return strings.EqualFold(p.ID, label) }); j >= 0 {
				label = options[j].ID
			}
		case slices.ContainsFunc(enums, func(e string) bool { return strings.EqualFold(e, o.ID) }):
			label = o.Text
		}
		if label != o.ID {
			if out == nil {
				out = slices.Clone(options)
			}
			out[k].ID = label
		}
	}
	if out == nil {
		return options
	}
	return out
}

// shownEnum is the enumeration text starts with, without brackets and separators ("(b) No" → "b"), or "".
func shownEnum(text string) string {
	e, _, ok := splitEnum(text)
	if !ok {
		return ""
	}
	return strings.Trim(e, enumTrim)
}

// enumTrim are the characters around an enumeration that are not its label.
const enumTrim = "()[].:-, \t"

// permutationSource is the PRNG of a shuffled cell: PCG seeded with the SHA-256 of the versioned string
// "silico/option-order/v1\x00<seed>\x00<cell id>", so a cell's permutation depends on nothing but the two.
func permutationSource(seed int64, cellID string) *rand.Rand {
	sum := sha256.Sum256([]byte(permutationVersion + "\x00" + strconv.FormatInt(seed, 10) + "\x00" + cellID))
	return rand.New(rand.NewPCG(binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16])))
}

// relabel is option o shown at the position where the written list has option at: its text's leading
// enumeration replaced by at's. An option or a position without an enumeration keeps its text. The id is left
// to ShownLabels.
func relabel(o, at Option) Option {
	_, orest, ok1 := splitEnum(o.Text)
	ae, _, ok2 := splitEnum(at.Text)
	if ok1 && ok2 {
		o.Text = ae + orest
	}
	return o
}

// splitEnum splits a text into its leading enumeration with the separator that follows it ("1. ", "(a) ", "B) ")
// and the rest. ok is false when the text starts with no enumeration.
func splitEnum(text string) (enum, rest string, ok bool) {
	lead := len(text) - len(strings.TrimLeft(text, " \t"))
	t := text[lead:]
	// leadingEnum reads at most a bracket, three digits and two more bytes: lower-casing that prefix alone keeps
	// a long option text from being copied (Shown labels every cell's options).
	var low [8]byte
	m := copy(low[:], t)
	for i := range m {
		if 'A' <= low[i] && low[i] <= 'Z' {
			low[i] += 'a' - 'A'
		}
	}
	if _, ok := leadingEnum(string(low[:m])); !ok {
		return "", "", false
	}
	n := 0
	if t[0] == '(' || t[0] == '[' {
		n++
	}
	if n < len(t) && t[n] >= '0' && t[n] <= '9' {
		for n < len(t) && t[n] >= '0' && t[n] <= '9' {
			n++
		}
	} else {
		n++ // a letter enumeration is one letter
	}
	for n < len(t) && strings.ContainsRune(".):]-, ", rune(t[n])) {
		n++
	}
	return text[:lead+n], t[n:], true
}

// Canonical is the canonical option index of shown position k.
func (sh ShownOptions) Canonical(k int) int { return sh.Perm[k] }

// CanonicalID maps a shown label (the id of an option of Set) to the canonical id of the option shown with it;
// ok is false for a label the cell did not show.
func (sh ShownOptions) CanonicalID(label string) (string, bool) {
	for k, o := range sh.Set.Options {
		if o.ID == label {
			return sh.canon[sh.Perm[k]].ID, true
		}
	}
	return "", false
}

// Position is the 1-based shown position of the canonical option id; 0 when it is not an option.
func (sh ShownOptions) Position(canonicalID string) int {
	for k, c := range sh.Perm {
		if sh.canon[c].ID == canonicalID {
			return k + 1
		}
	}
	return 0
}

// CanonicalProbs reorders a distribution over the shown options (shown order) into canonical option order.
func (sh ShownOptions) CanonicalProbs(shown []float64) []float64 {
	if len(shown) != len(sh.Perm) {
		return shown
	}
	out := make([]float64, len(shown))
	for k, p := range shown {
		out[sh.Perm[k]] = p
	}
	return out
}

// CanonicalIDs are the canonical ids of the shown options, in shown order.
func (sh ShownOptions) CanonicalIDs() []string {
	out := make([]string, len(sh.Perm))
	for k, c := range sh.Perm {
		out[k] = sh.canon[c].ID
	}
	return out
}

// checkOrder checks an order section at path against the option set it orders.
func (s *Spec) checkOrder(errs *Errors, path string, o *OrderSettings, set OptionSet) {
	if o == nil {
		return
	}
	if o.Mode != "" && !contains(orderModes, string(o.Mode)) {
		errs.add(path+".mode", "unknown mode %q; want %s", o.Mode, oneOf(orderModes))
	}
	if s.Run.Cumulative && o.Mode == OrderBalanced {
		errs.add(path+".mode", "run.cumulative gives each persona one answer per item to remember, and mode balanced asks every item twice; use as_written, reversed or shuffled, or drop run.cumulative")
	}
	for i, id := range o.Pin {
		found := false
		for _, opt := range set.Options {
			found = found || opt.ID == id
		}
		if !found {
			var ids []string
			for _, opt := range set.Options {
				if !slices.Contains(ids, opt.ID) {
					ids = append(ids, opt.ID)
				}
			}
			errs.add(fmt.Sprintf("%s.pin[%d]", path, i), "%q is no option id; want one of %s", id, strings.Join(ids, ", "))
		}
	}
}

// checkOrders checks questionnaire.order and every item's order.
func (s *Spec) checkOrders(errs *Errors) {
	if s.IsEmbed() {
		if s.Questionnaire.Order != nil {
			errs.add("questionnaire.order", "a kind: embed spec shows no answer options; remove order")
		}
		return
	}
	// questionnaire.order may pin an option only some items' own sets have: it then pins it where it is.
	all := s.Questionnaire.Options
	for i := range s.Questionnaire.Items {
		if o := s.Questionnaire.Items[i].Options; o != nil {
			all.Options = append(slices.Clip(all.Options), o.Options...)
		}
	}
	s.checkOrder(errs, "questionnaire.order", s.Questionnaire.Order, all)
	for i := range s.Questionnaire.Items {
		s.checkOrder(errs, fmt.Sprintf("questionnaire.items[%d].order", i), s.Questionnaire.Items[i].Order, s.OptionsFor(i))
		s.checkRelabel(errs, i)
	}
}

// checkRelabel refuses an item whose options move while some of the moving ones start with an enumeration and
// others do not: a moved option takes the enumeration of the place it is shown at only when both it and that
// place's written option have one, so a mix would show two options with one label ("1. Agree" moved below a plain
// "Don't know" keeps its "1.", and so does the option shown first).
func (s *Spec) checkRelabel(errs *Errors, i int) {
	o := s.OrderFor(i)
	if o.Mode == OrderAsWritten {
		return
	}
	var enumerated, plain []string
	for _, opt := range s.OptionsFor(i).Options {
		if slices.Contains(o.Pin, opt.ID) {
			continue
		}
		if _, _, ok := splitEnum(opt.Text); ok {
			enumerated = append(enumerated, opt.ID)
		} else {
			plain = append(plain, opt.ID)
		}
	}
	if len(enumerated) == 0 || len(plain) == 0 {
		return
	}
	path := "questionnaire.order"
	if s.Questionnaire.Items[i].Order != nil {
		path = fmt.Sprintf("questionnaire.items[%d].order", i)
	}
	errs.add(path, "item %s: options %s start with an enumeration (\"1. ...\") and %s do not, so under mode %s a moved "+
		"option could show another's label; pin the plain ones (pin: [%s]) or write every option's text alike",
		s.Questionnaire.Items[i].ID, strings.Join(enumerated, ", "), strings.Join(plain, ", "), o.Mode, strings.Join(plain, ", "))
}
