package experiment

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// likert is a five-point set whose ids are the enumerations its texts start with, and a pinned "don't know".
func likert() OptionSet {
	var set OptionSet
	for w := 1; w <= 5; w++ {
		set.Options = append(set.Options, Option{ID: fmt.Sprint(w), Text: fmt.Sprintf("%d. Level %d", w, w), Weight: w})
	}
	set.Options = append(set.Options, Option{ID: "dk", Text: "Don't know", IgnoredForScale: true})
	return set
}

func orderSpec(mode OrderMode, pin ...string) *Spec {
	s := gridSpec(2, 2, 3, 2)
	s.Questionnaire.Options = likert()
	s.Questionnaire.Order = &OrderSettings{Mode: mode, Pin: pin}
	return s
}

func TestBalancedDoublesTheCellsAndKeepsTheWrittenCellsIDs(t *testing.T) {
	plain := gridSpec(2, 2, 3, 2)
	s := orderSpec(OrderBalanced)
	if got, want := s.NumCells(), 2*plain.NumCells(); got != want {
		t.Fatalf("NumCells = %d, want %d", got, want)
	}
	ids := map[string]bool{}
	var written []string
	for i := range s.NumCells() {
		c := s.Cell(i)
		if c.Index != i || c.Order != i%2 {
			t.Fatalf("Cell(%d) = %+v: the order is the innermost dimension", i, c)
		}
		if got := s.CellIndex(c.Model, c.Seed, c.Item, c.Persona, c.Order); got != i {
			t.Fatalf("CellIndex(%+v) = %d", c, got)
		}
		id := s.CellID(c)
		if ids[id] {
			t.Fatalf("duplicate cell id %s", id)
		}
		ids[id] = true
		if c.Order == 0 {
			written = append(written, id)
		} else if !strings.HasSuffix(id, ReversedCellSuffix) {
			t.Fatalf("reversed cell id %s lacks %s", id, ReversedCellSuffix)
		}
	}
	var want []string
	for i := range plain.NumCells() {
		want = append(want, plain.CellID(plain.Cell(i)))
	}
	if !slices.Equal(written, want) {
		t.Fatalf("as-written cell ids %v, want the plain grid's %v", written, want)
	}
	// Passes still cover the grid at item boundaries.
	s.Run.ChunkSize = 4
	end := 0
	for _, p := range s.Passes() {
		if p.Start != end || s.Cell(p.Start).Persona != 0 || s.Cell(p.Start).Order != 0 {
			t.Fatalf("pass %+v does not start at an item boundary after %d", p, end)
		}
		end = p.End
	}
	if end != s.NumCells() {
		t.Fatalf("passes end at %d of %d", end, s.NumCells())
	}
}

// TestAnItemsOwnOrderChangesOnlyItsCells: an item balanced on its own has two cells per persona, the others one,
// whether it is the first item (whose cell count the layout once took for every item's) or another.
func TestAnItemsOwnOrderChangesOnlyItsCells(t *testing.T) {
	for item, want := range map[int]string{
		1: "m0/100/i0/p0 m0/100/i0/p1 m0/100/i1/p0 m0/100/i1/p0/rev m0/100/i1/p1 m0/100/i1/p1/rev m0/100/i2/p0 m0/100/i2/p1",
		0: "m0/100/i0/p0 m0/100/i0/p0/rev m0/100/i0/p1 m0/100/i0/p1/rev m0/100/i1/p0 m0/100/i1/p1 m0/100/i2/p0 m0/100/i2/p1",
	} {
		s := gridSpec(1, 2, 3, 2)
		s.Questionnaire.Options = likert()
		s.Questionnaire.Items[item].Order = &OrderSettings{Mode: OrderBalanced}
		if got := s.NumCells(); got != 2*(2+4+2) {
			t.Fatalf("item %d balanced: NumCells = %d, want 16", item, got)
		}
		var got []string
		for i := range s.NumCells() {
			c := s.Cell(i)
			if s.CellIndex(c.Model, c.Seed, c.Item, c.Persona, c.Order) != i {
				t.Fatalf("item %d balanced: CellIndex does not invert Cell(%d) = %+v", item, i, c)
			}
			got = append(got, s.CellID(c))
		}
		if strings.Join(got[:8], " ") != want {
			t.Fatalf("item %d balanced: ids %v, want %s", item, got[:8], want)
		}
	}
}

func TestDefaultSpecIsTodays(t *testing.T) {
	s := gridSpec(1, 1, 2, 2)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"order"`) {
		t.Fatalf("a spec without order encodes an order key, which changes its hash and run id: %s", b)
	}
	sh := s.Shown(s.Cell(0))
	if sh.Order != OrderAsWritten || !slices.Equal(sh.Perm, []int{}) && len(sh.Perm) != 0 {
		t.Fatalf("Shown = %+v", sh)
	}
}

func TestReversedRelabelsAndMapsBack(t *testing.T) {
	s := orderSpec(OrderReversed, "dk")
	c := s.Cell(0)
	sh := s.Shown(c)
	var texts, ids []string
	for _, o := range sh.Set.Options {
		texts, ids = append(texts, o.Text), append(ids, o.ID)
	}
	if want := []string{"1. Level 5", "2. Level 4", "3. Level 3", "4. Level 2", "5. Level 1", "Don't know"}; !slices.Equal(texts, want) {
		t.Fatalf("shown texts %q, want %q", texts, want)
	}
	if want := []string{"1", "2", "3", "4", "5", "dk"}; !slices.Equal(ids, want) {
		t.Fatalf("shown ids %q, want %q", ids, want)
	}
	if want := []string{"5", "4", "3", "2", "1", "dk"}; !slices.Equal(sh.CanonicalIDs(), want) {
		t.Fatalf("canonical ids %q, want %q", sh.CanonicalIDs(), want)
	}
	// The model answers "1" having read "1. Level 5": that is canonical option 5, shown first.
	m := Match("1", sh.Set)
	id, ok := sh.CanonicalID(m.OptionID)
	if !ok || id != "5" || sh.Position("5") != 1 {
		t.Fatalf("answer 1 maps to %q (%v), position of 5 is %d; want 5 at 1", id, ok, sh.Position("5"))
	}
	if got := sh.CanonicalProbs([]float64{.5, .2, .1, .1, .05, .05}); !slices.Equal(got, []float64{.05, .1, .1, .2, .5, .05}) {
		t.Fatalf("CanonicalProbs = %v", got)
	}
	if !strings.Contains(mustRender(t, s, c), "1. Level 5\n2. Level 4") {
		t.Fatalf("render does not show the reversed options:\n%s", mustRender(t, s, c))
	}
}

func TestLetterIDsRelabel(t *testing.T) {
	s := gridSpec(1, 1, 1, 1)
	s.Questionnaire.Options = OptionSet{Options: []Option{
		{ID: "A", Text: "A) Agree", Weight: 3}, {ID: "B", Text: "B) Unsure", Weight: 2}, {ID: "C", Text: "C) Disagree", Weight: 1}}}
	s.Questionnaire.Order = &OrderSettings{Mode: OrderReversed}
	sh := s.Shown(s.Cell(0))
	if got := sh.Set.Options[0]; got.ID != "A" || got.Text != "A) Disagree" {
		t.Fatalf("first shown option %+v, want A) Disagree with id A", got)
	}
	if id, _ := sh.CanonicalID(Match("A)", sh.Set).OptionID); id != "C" {
		t.Fatalf("answer A) maps to %q, want C", id)
	}
}

func TestShuffledIsAPureFunctionOfSeedAndCell(t *testing.T) {
	s := orderSpec(OrderShuffled, "dk")
	perms := map[string]bool{}
	for i := range s.NumCells() {
		c := s.Cell(i)
		a, b := s.Shown(c), orderSpec(OrderShuffled, "dk").Shown(c)
		if !slices.Equal(a.Perm, b.Perm) {
			t.Fatalf("cell %d: %v then %v from the same spec", i, a.Perm, b.Perm)
		}
		if a.Perm[5] != 5 {
			t.Fatalf("cell %d: pinned dk moved: %v", i, a.Perm)
		}
		sorted := slices.Clone(a.Perm)
		slices.Sort(sorted)
		if !slices.Equal(sorted, []int{0, 1, 2, 3, 4, 5}) {
			t.Fatalf("cell %d: %v is no permutation", i, a.Perm)
		}
		perms[fmt.Sprint(a.Perm)] = true
	}
	if len(perms) < s.NumCells()/2 {
		t.Fatalf("%d cells share %d permutations: they do not differ across cells", s.NumCells(), len(perms))
	}
	// An explicit order seed gives other permutations than the cells' seeds.
	seeded := orderSpec(OrderShuffled, "dk")
	seven := int64(7)
	seeded.Questionnaire.Order.Seed = &seven
	same := 0
	for i := range s.NumCells() {
		if slices.Equal(s.Shown(s.Cell(i)).Perm, seeded.Shown(seeded.Cell(i)).Perm) {
			same++
		}
	}
	if same == s.NumCells() {
		t.Fatal("order.seed changes no permutation")
	}
}

func TestOrderValidation(t *testing.T) {
	s := orderSpec("backwards", "nope")
	s.Run.Cumulative = true
	errs := Errors{}
	s.checkOrders(&errs)
	msg := errs.Error()
	for _, want := range []string{"questionnaire.order.mode", "unknown mode \"backwards\"", "questionnaire.order.pin[0]", "\"nope\" is no option id"} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors %q lack %q", msg, want)
		}
	}
	s = orderSpec(OrderBalanced)
	s.Run.Cumulative = true
	errs = Errors{}
	s.checkOrders(&errs)
	if !strings.Contains(errs.Error(), "run.cumulative") {
		t.Errorf("balanced under run.cumulative is accepted: %v", errs)
	}
}

func mustRender(t *testing.T, s *Spec, c Cell) string {
	t.Helper()
	msgs, err := s.Render(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content)
	}
	return b.String()
}

func TestVerbalizedProbesAreTheirOwnCells(t *testing.T) {
	s := orderSpec(OrderBalanced)
	plainIDs := map[int]string{}
	for i := range s.NumCells() {
		plainIDs[i] = s.CellID(s.Cell(i))
	}
	s.Run.Answer = &AnswerSettings{Modes: []AnswerMode{AnswerLogprobs, AnswerVerbalized}}
	if s.Probes() != 2 || s.NumCells() != 2*len(plainIDs) {
		t.Fatalf("Probes = %d, NumCells = %d; want 2 and %d", s.Probes(), s.NumCells(), 2*len(plainIDs))
	}
	seen := map[string]bool{}
	for i := range s.NumCells() {
		c := s.Cell(i)
		if s.CellIndexOf(c) != i {
			t.Fatalf("CellIndexOf(%+v) = %d, want %d", c, s.CellIndexOf(c), i)
		}
		id := s.CellID(c)
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		a := s.CellAnswer(c)
		switch c.Probe {
		case 0:
			if a.Mode != AnswerLogprobs || !a.Logprobs || strings.Contains(id, VerbalizedCellSuffix) {
				t.Fatalf("probe 0 of %s answers %+v", id, a)
			}
		case 1:
			if a.Mode != AnswerVerbalized || !strings.Contains(id, VerbalizedCellSuffix) {
				t.Fatalf("probe 1 of %s answers %+v", id, a)
			}
		}
	}
	if !seen["m0/100/i0/p0/verbalized/rev"] || !seen["m0/100/i0/p0/rev"] {
		t.Fatalf("ids %v lack the probe and order suffixes", seen)
	}
	s.Models[1].Answer = &AnswerSettings{Modes: []AnswerMode{AnswerText}}
	errs := Errors{}
	s.checkAnswers(&errs)
	if !strings.Contains(errs.Error(), "every model or none") {
		t.Fatalf("models with different probes are accepted: %v", errs)
	}
}

// TestMixedEnumerationsMustBePinned: an item whose moving options mix enumerated and plain texts is refused under
// a mode that moves them, naming the plain ones to pin; pinned, or as written, it is accepted.
func TestMixedEnumerationsMustBePinned(t *testing.T) {
	err := orderSpec(OrderReversed).Validate()
	if err == nil || !strings.Contains(err.Error(), "pin: [dk]") {
		t.Fatalf("reversed with a plain \"Don't know\": %v, want a refusal naming pin: [dk]", err)
	}
	if err := orderSpec(OrderReversed, "dk").Validate(); err != nil {
		t.Errorf("pinned: %v", err)
	}
	if err := orderSpec(OrderAsWritten).Validate(); err != nil {
		t.Errorf("as written: %v", err)
	}
}

// TestTheVerbalizedProbeIsInstructed: under answer.modes the verbalized probe's last user message asks for the
// probabilities (naming the ids the cell shows), and the main call's does not.
func TestTheVerbalizedProbeIsInstructed(t *testing.T) {
	s := orderSpec(OrderBalanced, "dk")
	s.Run.Answer = &AnswerSettings{Modes: []AnswerMode{AnswerLogprobs, AnswerVerbalized}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range s.NumCells() {
		c := s.Cell(i)
		msgs, err := s.Render(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		last := msgs[len(msgs)-1].Content
		asked := strings.HasSuffix(last, "\n\n"+VerbalizedInstruction(s.Shown(c).Set))
		if asked != (c.Probe == 1) {
			t.Fatalf("cell %s (probe %d): instruction appended %v; its last message:\n%s", s.CellID(c), c.Probe, asked, last)
		}
	}
}

// otherDigits is a five-point set whose ids are digits other than the enumerations its texts show: four of
// them are another option's label, and 9 is none.
func otherDigits() OptionSet {
	ids := []string{"5", "4", "9", "2", "1"}
	var set OptionSet
	for k, id := range ids {
		set.Options = append(set.Options, Option{ID: id, Text: fmt.Sprintf("%d. Level %d", k+1, k+1), Weight: k + 1})
	}
	return set
}

// TestShownLabelsAreWhatThePromptShows: whatever the ids, the label of a position is the enumeration shown
// there, so the written answer, the logprob labels, the json_schema enum and the verbalized keys all follow the
// prompt: "1" is the option shown first, and 9 (no label shown) names nothing.
func TestShownLabelsAreWhatThePromptShows(t *testing.T) {
	for _, tc := range []struct {
		mode  OrderMode
		first string // canonical id of the option shown first, labelled 1
	}{{OrderAsWritten, "5"}, {OrderReversed, "1"}} {
		s := gridSpec(1, 1, 1, 1)
		s.Questionnaire.Options = otherDigits()
		s.Questionnaire.Order = &OrderSettings{Mode: tc.mode}
		s.Run.Answer = &AnswerSettings{Mode: AnswerJSONSchema}
		c := s.Cell(0)
		sh := s.Shown(c)
		var ids []string
		for _, o := range sh.Set.Options {
			ids = append(ids, o.ID)
		}
		if want := []string{"1", "2", "3", "4", "5"}; !slices.Equal(ids, want) {
			t.Fatalf("%s: shown labels %q, want %q", tc.mode, ids, want)
		}
		m := Match("1", sh.Set)
		if id, ok := sh.CanonicalID(m.OptionID); !ok || id != tc.first {
			t.Errorf("%s: answer 1 maps to %q (%v), want %s, the option shown first", tc.mode, id, ok, tc.first)
		}
		labels := Labels(sh.Set)
		if k, ok := labels["1"]; !ok || k != 0 {
			t.Errorf("%s: label 1 reads as shown position %d (%v), want 0", tc.mode, k, ok)
		}
		if k, ok := labels["9"]; ok {
			t.Errorf("%s: id 9, shown nowhere, reads as shown position %d", tc.mode, k)
		}
		if got := string(s.CallParams(c).ResponseFormat); !strings.Contains(got, `"enum":["1","2","3","4","5"]`) {
			t.Errorf("%s: json_schema %s; want the enum of the labels shown", tc.mode, got)
		}
		s.Run.Answer = &AnswerSettings{Mode: AnswerVerbalized}
		if got := string(s.CallParams(c).ResponseFormat); !strings.Contains(got, `"required":["1","2","3","4","5"]`) {
			t.Errorf("%s: verbalized schema %s; want the labels shown as its keys", tc.mode, got)
		}
		if got := mustRender(t, s, c); !strings.Contains(got, "for each option (1, 2, 3, 4, 5)") {
			t.Errorf("%s: verbalized prompt %q; want it to name the labels shown", tc.mode, got)
		}
	}
}

// TestShownLabelsOfPlainTexts: a text without an enumeration is named by its id, which a shown label
// overrides: a "Don't know" whose id is 3 beside "3. Level 3" is named by its text, and "3" is the option shown
// with it. A text that is a label itself ("A") keeps the spelling of the id that equals it ("a").
func TestShownLabelsOfPlainTexts(t *testing.T) {
	set := likert().Options
	set[5].ID = "3"
	set[2].ID = "x"
	got := ShownLabels(set)
	var ids []string
	for _, o := range got {
		ids = append(ids, o.ID)
	}
	if want := []string{"1", "2", "3", "4", "5", "Don't know"}; !slices.Equal(ids, want) {
		t.Fatalf("labels %q, want %q", ids, want)
	}
	if m := Match("3", OptionSet{Options: got}); m.OptionID != "3" || got[2].Text != "3. Level 3" {
		t.Errorf("answer 3 matched %+v, want the option shown as 3. Level 3", m)
	}
	if set[0].ID != "1" || set[5].ID != "3" {
		t.Errorf("ShownLabels changed its argument: %+v", set)
	}
	plain := []Option{{ID: "dk", Text: "Don't know"}, {ID: "a", Text: "A"}, {ID: "b", Text: "B"}}
	if got := ShownLabels(plain); &got[0] != &plain[0] {
		t.Errorf("labels %+v: want the options as they are, every id already its label", got)
	}
}

// TestShownEnumerationsAreUnique: two options showing one label could not be told apart by a model's answer.
func TestShownEnumerationsAreUnique(t *testing.T) {
	errs := Errors{}
	checkOptions(&errs, "questionnaire.options", OptionSet{Options: []Option{
		{ID: "a", Text: "1. Yes"}, {ID: "b", Text: "(1) No"}, {ID: "c", Text: "c) Maybe"}, {ID: "d", Text: "C. Never"}}})
	msg := errs.Error()
	for _, want := range []string{"questionnaire.options.options[1].text", "label 1, as options[0] does", "options[3].text", "label C, as options[2] does"} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors %q lack %q", msg, want)
		}
	}
}
