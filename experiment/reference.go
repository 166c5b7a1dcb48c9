package experiment

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/silicolab/silico/suggest"
)

// GroupAll is the label of the group of every respondent (and every persona).
const GroupAll = Overall

// Overall is the id the output files give their lines over every item, scale or group: reference.csv's group
// of everyone (GroupAll), reference_scales.csv's scale over every item, order_bias.csv's and compare.csv's item
// over every item, validity.csv's attribute of the whole sample. No item or scale of a spec may take it, so
// such a line is never mistaken for one item's or one scale's.
const Overall = "all"

// Forms of a human reference file.
const (
	// ReferenceAnswers is a file of raw answers: one row per respondent, a column per item id.
	ReferenceAnswers = "answers"
	// ReferenceCountsForm is a file of counts: columns item_id, option_id, count and an optional group.
	ReferenceCountsForm = "counts"
)

var referenceForms = []string{ReferenceAnswers, ReferenceCountsForm}

// Reference is a human reference sample the models' answer distributions are compared with (reference.csv and
// reference_scales.csv). A spec file names a CSV file; the starter reads it when it loads the spec and inlines
// what the analysis needs — for a file of counts the counts of every option per item and group, for a file of
// answers the respondents themselves (Respondents: weights and resamples need them) — so a resolved spec
// carries them and no worker reads a file. A file of counts stays a few hundred numbers
// for any number of people; a file of answers adds a row per respondent, and a spec too large for a workflow
// input is saved in the results store and referred to by digest.
type Reference struct {
	// File is the CSV file the reference was read from, relative to the spec; kept to say where it came from.
	File string `json:"file,omitempty"`
	// Groups are the respondents' attributes that split them into groups besides GroupAll: columns of a file
	// of answers, or the column part of the group labels of a file of counts. A persona belongs to the group
	// "gender=2" when its attribute gender is "2".
	Groups []string `json:"groups,omitempty"`
	// Form is the form the file had: ReferenceAnswers or ReferenceCountsForm.
	Form string `json:"form,omitempty"`
	// Counts has one entry per item and group with an answer, items in questionnaire order, groups GroupAll
	// first, then by column in Groups order and value: what a file of counts gives. A file of answers carries
	// Respondents instead, from which results computes every human figure (distributions, means, α and ω,
	// weights, resamples) with the code that computes the model's.
	Counts []ReferenceCounts `json:"counts,omitempty"`
	// Scales is the humans' reliability per scale and group as a spec resolved before respondents were inlined
	// carries it; read only when Respondents is nil (a file of counts has none: it has no respondents).
	Scales []ReferenceScale `json:"scales,omitempty"`
	// Weight is the column of a file of answers that holds each respondent's survey weight; empty: every
	// respondent weighs 1.
	Weight string `json:"weight,omitempty"`
	// Respondents are the people of a file of answers, one by one (answers form only): what the human side of
	// every resampled or weighted figure needs, which counts cannot give.
	Respondents *Respondents `json:"respondents,omitempty"`
}

// Respondents are the people of a file of answers in file order: their answers, their values of the group
// columns and their weights. One respondent is a small row of numbers, so a few thousand of them stay well inside
// a workflow input; a larger spec is saved in the results store and referred to by digest.
type Respondents struct {
	// Items are the ids of the questionnaire's items the file has a column for, in questionnaire order.
	Items []string `json:"items"`
	// Answers[r][j] is respondent r's option on Items[j], as an index into that item's options (Spec.OptionsFor
	// order); -1 where the answer is missing.
	Answers [][]int `json:"answers"`
	// Groups[r][g] is respondent r's value of Reference.Groups[g] (surrounding spaces trimmed), "" where missing.
	// Empty without groups.
	Groups [][]string `json:"groups,omitempty"`
	// Weights[r] is respondent r's survey weight, a finite number > 0; nil: every respondent weighs 1.
	Weights []float64 `json:"weights,omitempty"`
}

// Len is the number of respondents.
func (r *Respondents) Len() int { return len(r.Answers) }

// Weight is respondent i's weight: Weights[i], or 1 without weights.
func (r *Respondents) Weight(i int) float64 {
	if r.Weights == nil {
		return 1
	}
	return r.Weights[i]
}

// InGroup reports whether respondent i belongs to the group label of a reference whose group columns are
// columns: everyone belongs to GroupAll, and to "column=value" when their value of column is value.
func (r *Respondents) InGroup(columns []string, i int, label string) bool {
	if label == GroupAll {
		return true
	}
	col, val, ok := SplitGroup(label)
	if !ok {
		return false
	}
	g := slices.Index(columns, col)
	return g >= 0 && g < len(r.Groups[i]) && r.Groups[i][g] == val
}

// ReferenceCounts is how many people of one group gave each answer to one item.
type ReferenceCounts struct {
	Item  string `json:"item"`
	Group string `json:"group"`
	// Counts[k] is the number who chose option k of the item's options (Spec.OptionsFor order).
	Counts []int `json:"counts"`
}

// ReferenceScale is the reliability of one scale among the humans of one group, computed when the file is
// read as results computes a model's: psychometrics on the respondents × items matrix of scores (reverse-keyed
// items reversed, missing answers missing).
type ReferenceScale struct {
	Scale string `json:"scale"`
	Group string `json:"group"`
	// Respondents is the number of respondents with at least one scored answer on the scale's items used.
	Respondents int `json:"n"`
	// ItemsUsed is the number of the scale's items with variance among them.
	ItemsUsed int `json:"n_items_used"`
	// Alpha is Cronbach's α (psych raw_alpha) and OmegaTotal ω total (omega(nfactors = 1, fm = "pa")); nil
	// when undefined.
	Alpha      *float64 `json:"alpha"`
	OmegaTotal *float64 `json:"omega_total"`
}

// GroupLabel is the label of the group of respondents whose column has value: "gender=2".
func GroupLabel(column, value string) string { return column + "=" + value }

// SplitGroup returns the column and value of a group label; ok is false for GroupAll and malformed labels.
func SplitGroup(label string) (column, value string, ok bool) {
	column, value, ok = strings.Cut(label, "=")
	return column, value, ok && column != ""
}

// GroupLabels returns the reference's groups in output order: GroupAll, then for a file of answers every
// value the respondents have of each group column, by column in Groups order and value (CompareGroupValues);
// for a file of counts the others in the order Counts and Scales first name them.
func (r *Reference) GroupLabels() []string {
	out := []string{GroupAll}
	if rs := r.Respondents; rs != nil {
		for g, col := range r.Groups {
			var vals []string
			for i := range rs.Groups {
				if g < len(rs.Groups[i]) && rs.Groups[i][g] != "" && !slices.Contains(vals, rs.Groups[i][g]) {
					vals = append(vals, rs.Groups[i][g])
				}
			}
			slices.SortFunc(vals, CompareGroupValues)
			for _, v := range vals {
				out = append(out, GroupLabel(col, v))
			}
		}
		return out
	}
	for _, c := range r.Counts {
		if !slices.Contains(out, c.Group) {
			out = append(out, c.Group)
		}
	}
	for _, c := range r.Scales {
		if !slices.Contains(out, c.Group) {
			out = append(out, c.Group)
		}
	}
	return out
}

// InGroup reports whether persona p belongs to the reference group label: every persona belongs to GroupAll,
// and to "column=value" when its attribute column is value (surrounding spaces ignored).
func (s *Spec) InGroup(p int, label string) bool {
	if label == GroupAll {
		return true
	}
	col, val, ok := SplitGroup(label)
	if !ok {
		return false
	}
	v, has := s.Personas[p].Attributes[col]
	return has && strings.TrimSpace(v) == val
}

// checkReference validates an inlined reference against the questionnaire: known items and scales, counts
// that fit the item's options, group labels of the declared groups.
func (s *Spec) checkReference(errs *Errors) {
	r := s.Reference
	if r == nil {
		return
	}
	if s.IsEmbed() {
		errs.add("reference", "only for chat specs: an embed spec has no answers to compare with humans; remove it")
		return
	}
	if r.File == "" && len(r.Counts) == 0 && r.Respondents == nil {
		errs.add("reference", "missing file: name the CSV of human answers, e.g. reference: {file: human.csv, groups: [gender]}")
	}
	seenGroup := map[string]int{}
	for i, g := range r.Groups {
		p := fmt.Sprintf("reference.groups[%d]", i)
		switch {
		case strings.TrimSpace(g) == "" || strings.Contains(g, "="):
			errs.add(p, "group column %q: want a non-empty column name without \"=\"", g)
		case g == GroupAll:
			errs.add(p, "%q is the group of everyone, always reported; name a column such as gender", g)
		}
		if j, dup := seenGroup[g]; dup {
			errs.add(p, "duplicate group column %q, already entry %d", g, j)
		}
		seenGroup[g] = i
	}
	if r.Form != "" && !contains(referenceForms, r.Form) {
		errs.add("reference.form", "unknown form %q; want %s (read from the file's header)", r.Form, oneOf(referenceForms))
	}
	checkGroup := func(path, label string) {
		if label == GroupAll {
			return
		}
		col, _, ok := SplitGroup(label)
		if !ok || !slices.Contains(r.Groups, col) {
			errs.add(path, "group %q: want %q or column=value with a column of reference.groups (%s)", label, GroupAll,
				strings.Join(r.Groups, ", "))
		}
	}
	items := map[string]int{}
	var ids []string
	scaleOf := map[string]bool{}
	for i, it := range s.Questionnaire.Items {
		if _, dup := items[it.ID]; !dup {
			items[it.ID] = i
			ids = append(ids, it.ID)
		}
		if it.Scale != "" {
			scaleOf[it.Scale] = true
		}
	}
	type key struct{ a, b string }
	seen := map[key]int{}
	for i, c := range r.Counts {
		p := fmt.Sprintf("reference.counts[%d]", i)
		checkGroup(p+".group", c.Group)
		if j, dup := seen[key{c.Item, c.Group}]; dup {
			errs.add(p, "item %q, group %q again (entry %d has it); give each item and group once", c.Item, c.Group, j)
		}
		seen[key{c.Item, c.Group}] = i
		it, ok := items[c.Item]
		if !ok {
			errs.add(p+".item", "unknown item %q%s; the questionnaire's items: %s", c.Item, suggest.DidYouMean(c.Item, ids), strings.Join(ids, ", "))
			continue
		}
		if k := len(s.OptionsFor(it).Options); len(c.Counts) != k {
			errs.add(p+".counts", "%d counts, but item %q has %d options; want one count per option, in their order", len(c.Counts), c.Item, k)
		}
		for k, n := range c.Counts {
			if n < 0 {
				errs.add(fmt.Sprintf("%s.counts[%d]", p, k), "%d is negative; want a number of people ≥ 0", n)
			}
		}
	}
	if r.Respondents != nil {
		s.checkRespondents(errs, items, ids)
	}
	seenScale := map[key]int{}
	for i, sc := range r.Scales {
		p := fmt.Sprintf("reference.scales[%d]", i)
		checkGroup(p+".group", sc.Group)
		if !scaleOf[sc.Scale] {
			errs.add(p+".scale", "scale %q has no items in the questionnaire", sc.Scale)
		}
		if j, dup := seenScale[key{sc.Scale, sc.Group}]; dup {
			errs.add(p, "scale %q, group %q again (entry %d has it)", sc.Scale, sc.Group, j)
		}
		seenScale[key{sc.Scale, sc.Group}] = i
		if sc.Respondents < 0 || sc.ItemsUsed < 0 {
			errs.add(p, "negative counts; want n and n_items_used ≥ 0")
		}
		for _, v := range []*float64{sc.Alpha, sc.OmegaTotal} {
			if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
				errs.add(p, "alpha and omega_total must be finite numbers or null")
			}
		}
	}
}

// checkRespondents validates a reference's respondents: known items in questionnaire order, answers that index
// the item's options, a value per group column and a positive finite weight per respondent.
func (s *Spec) checkRespondents(errs *Errors, items map[string]int, ids []string) {
	r := s.Reference
	rs := r.Respondents
	if r.Form != ReferenceAnswers {
		errs.add("reference.respondents", "only a file of answers has respondents; this reference's form is %q", r.Form)
	}
	idx := make([]int, len(rs.Items))
	last := -1
	for j, id := range rs.Items {
		it, ok := items[id]
		switch {
		case !ok:
			errs.add(fmt.Sprintf("reference.respondents.items[%d]", j), "unknown item %q%s; the questionnaire's items: %s", id,
				suggest.DidYouMean(id, ids), strings.Join(ids, ", "))
		case it <= last:
			errs.add(fmt.Sprintf("reference.respondents.items[%d]", j), "item %q out of questionnaire order (or twice)", id)
		}
		idx[j], last = it, max(last, it)
	}
	if rs.Groups != nil && len(rs.Groups) != len(rs.Answers) {
		errs.add("reference.respondents.groups", "%d rows of group values for %d respondents; want one row per respondent", len(rs.Groups), len(rs.Answers))
	}
	if rs.Weights != nil && len(rs.Weights) != len(rs.Answers) {
		errs.add("reference.respondents.weights", "%d weights for %d respondents; want one per respondent", len(rs.Weights), len(rs.Answers))
	}
	const maxListed = 5 // a systematic mistake would otherwise repeat once per respondent
	bad := 0
	report := func(path, format string, args ...any) {
		if bad++; bad <= maxListed {
			errs.add(path, format, args...)
		}
	}
	for i, a := range rs.Answers {
		p := fmt.Sprintf("reference.respondents.answers[%d]", i)
		if len(a) != len(rs.Items) {
			report(p, "%d answers for %d items; want one per item of reference.respondents.items (-1: missing)", len(a), len(rs.Items))
			continue
		}
		for j, k := range a {
			if _, ok := items[rs.Items[j]]; !ok {
				continue
			}
			if n := len(s.OptionsFor(idx[j]).Options); k < -1 || k >= n {
				report(fmt.Sprintf("%s[%d]", p, j), "%d is not an option of item %q: want 0..%d, or -1 for no answer", k, rs.Items[j], n-1)
			}
		}
		if rs.Groups != nil && i < len(rs.Groups) && len(rs.Groups[i]) != len(r.Groups) {
			report(fmt.Sprintf("reference.respondents.groups[%d]", i), "%d values for %d group columns (%s)", len(rs.Groups[i]), len(r.Groups), strings.Join(r.Groups, ", "))
		}
		if rs.Weights != nil && i < len(rs.Weights) {
			if w := rs.Weights[i]; !(w > 0) || math.IsInf(w, 0) {
				report(fmt.Sprintf("reference.respondents.weights[%d]", i), "weight %v: want a finite number > 0", w)
			}
		}
	}
	if bad > maxListed {
		errs.add("reference.respondents", "%d more mistakes in the respondents not listed", bad-maxListed)
	}
	if rs.Groups == nil && len(r.Groups) > 0 && len(rs.Answers) > 0 {
		errs.add("reference.respondents.groups", "missing: the reference has group columns (%s); want each respondent's values", strings.Join(r.Groups, ", "))
	}
	if rs.Weights != nil && r.Weight == "" {
		errs.add("reference.weight", "missing: the respondents have weights; name the column they came from")
	}
}

// CompareGroupValues orders the values of a group column by their leading number when both have one ("2" <
// "10", "18-29" < "30-44" < "45+"), else as text.
func CompareGroupValues(a, b string) int {
	na, oka := leadingNumber(a)
	nb, okb := leadingNumber(b)
	if oka && okb && na != nb {
		return cmp.Compare(na, nb)
	}
	return strings.Compare(a, b)
}

func leadingNumber(s string) (int, bool) {
	end := 0
	for end < len(s) && end < 9 && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(s[:end])
	return n, err == nil
}
