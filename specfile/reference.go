package specfile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/suggest"
)

// maxReferenceErrors is how many mistakes in one human reference file are listed: a file of thousands of rows
// with one systematic mistake would otherwise bury every other error.
const maxReferenceErrors = 20

// countColumns are the columns of a human reference file of counts.
var countColumns = []string{"item_id", "option_id", "count", "group"}

// refReader reads one human reference file: the file, the questionnaire it is resolved against and the
// mistakes found so far.
type refReader struct {
	d       *decoder
	spec    *experiment.Spec
	ref     *experiment.Reference
	t       *csvTable
	itemIdx map[string]int // item id → index in the questionnaire
	itemIDs []string
	errs    int
}

// fail records a mistake at line and column of the file; past maxReferenceErrors it only counts them.
func (rr *refReader) fail(line, col int, format string, args ...any) {
	rr.errs++
	if rr.errs <= maxReferenceErrors {
		rr.d.errs = append(rr.d.errs, &experiment.Error{File: rr.t.name, Line: line, Column: col, Field: "reference.file",
			Msg: fmt.Sprintf(format, args...)})
	}
}

// referenceFile reads the human reference file that section n names into s.Reference: the counts of every option
// per item and group of a file of counts, the respondents one by one of a file of raw answers (results computes
// every human figure from them). The form is told by
// the header: item_id, option_id and count columns make a file of counts, anything else is a file of answers
// with a column per item id.
func (d *decoder) referenceFile(s *experiment.Spec, n *node) {
	t, ok := d.readCSVTable(n.get("file"), "reference.file")
	if !ok {
		return
	}
	rr := &refReader{d: d, spec: s, ref: s.Reference, t: t, itemIdx: map[string]int{}}
	for i, it := range s.Questionnaire.Items {
		if _, dup := rr.itemIdx[it.ID]; !dup {
			rr.itemIdx[it.ID] = i
			rr.itemIDs = append(rr.itemIDs, it.ID)
		}
	}
	lower := make([]string, len(t.header))
	for i, h := range t.header {
		lower[i] = strings.ToLower(h)
	}
	_, isItem := rr.itemIdx["item_id"]
	if slices.Contains(lower, "item_id") && !isItem {
		rr.ref.Form = experiment.ReferenceCountsForm
		rr.counts(lower)
	} else {
		rr.ref.Form = experiment.ReferenceAnswers
		rr.answers(n.get("groups"))
	}
	if rr.errs > maxReferenceErrors {
		d.errs = append(d.errs, &experiment.Error{File: t.name, Field: "reference.file",
			Msg: fmt.Sprintf("%d more mistakes in this file not listed", rr.errs-maxReferenceErrors)})
	}
}

// option returns the index of option id among item it's options, or reports the mistake at (line, col).
func (rr *refReader) option(it int, id string, line, col int) (int, bool) {
	opts := rr.spec.OptionsFor(it).Options
	for k, o := range opts {
		if o.ID == id {
			return k, true
		}
	}
	ids := make([]string, len(opts))
	for k, o := range opts {
		ids[k] = o.ID
	}
	rr.fail(line, col, "%q is not an option id of item %s; its options: %s", id, rr.spec.Questionnaire.Items[it].ID, strings.Join(ids, ", "))
	return 0, false
}

// answers reads a file of raw answers: a column per item id (option ids; empty or NA is missing) and the group
// columns the spec names. groups is the spec's reference.groups node, for errors.
func (rr *refReader) answers(groups *node) {
	t, ref := rr.t, rr.ref
	itemCol := map[int]int{} // column → item index
	groupCol := make([]int, len(ref.Groups))
	for g := range groupCol {
		groupCol[g] = -1
	}
	nItems := len(rr.spec.Questionnaire.Items)
	inFile := make([]bool, nItems)
	known := slices.Concat(rr.itemIDs, ref.Groups)
	weightCol := -1
	if ref.Weight != "" {
		weightCol = slices.Index(t.header, ref.Weight)
		if weightCol < 0 {
			e := &experiment.Error{File: rr.d.file, Field: "reference.weight",
				Msg: fmt.Sprintf("no column %q in %s (columns: %s)%s", ref.Weight, t.name, strings.Join(t.header, ", "), suggest.DidYouMean(ref.Weight, t.header))}
			if w := rr.d.referenceNode.get("weight"); w != nil {
				e.Line, e.Column = w.where()
			}
			rr.d.errs = append(rr.d.errs, e)
			return
		}
	}
	for c, h := range t.header {
		if it, ok := rr.itemIdx[h]; ok {
			if inFile[it] {
				rr.fail(1, t.headerCols[c], "column %q again; give each item one column", h)
				continue
			}
			itemCol[c] = it
			inFile[it] = true
			continue
		}
		if g := slices.Index(ref.Groups, h); g >= 0 {
			groupCol[g] = c
			continue
		}
		if c == weightCol {
			continue
		}
		rr.fail(1, t.headerCols[c], "column %q is neither an item id of the questionnaire nor a group of reference.groups%s; "+
			"want a column per item id (%s) and the group columns (%s), or columns item_id, option_id, count and group for a file of counts",
			h, suggest.DidYouMean(h, known), strings.Join(rr.itemIDs, ", "), strings.Join(ref.Groups, ", "))
	}
	missingGroup := false
	for g, c := range groupCol {
		if c < 0 {
			missingGroup = true
			e := &experiment.Error{File: rr.d.file, Field: index("reference.groups", g),
				Msg: fmt.Sprintf("no column %q in %s (columns: %s)", ref.Groups[g], t.name, strings.Join(t.header, ", "))}
			if groups != nil && groups.kind == kindSeq && g < len(groups.vals) {
				e.Line, e.Column = groups.vals[g].where()
			}
			rr.d.errs = append(rr.d.errs, e)
		}
	}
	if len(itemCol) == 0 {
		rr.fail(1, 1, "no column is an item id of the questionnaire (%s); header: %s", strings.Join(rr.itemIDs, ", "), strings.Join(t.header, ","))
		return
	}
	if rr.errs > 0 || missingGroup {
		return
	}
	var absent, present []string
	for it, ok := range inFile {
		if !ok {
			absent = append(absent, rr.spec.Questionnaire.Items[it].ID)
		} else {
			present = append(present, rr.spec.Questionnaire.Items[it].ID)
		}
	}
	if len(absent) > 0 {
		rr.d.noteAt(rr.d.referenceNode.get("file"), "reference.file", fmt.Sprintf("%s has no column for items %s: they get no human distribution",
			t.name, strings.Join(absent, ", ")))
	}

	// pos[it] is item it's place among present; answer[r][pos[it]] is respondent r's option index on item it,
	// -1 when missing; group[r][g] its value of group g.
	pos := make([]int, nItems)
	for j, id := range present {
		pos[rr.itemIdx[id]] = j
	}
	answer := make([][]int, len(t.rows))
	group := make([][]string, len(t.rows))
	var weights []float64
	for r, row := range t.rows {
		answer[r] = slices.Repeat([]int{-1}, len(present))
		for c, it := range itemCol {
			v := strings.TrimSpace(row[c])
			if v == "" || v == "NA" {
				continue
			}
			if k, ok := rr.option(it, v, t.lines[r], t.cols[r][c]); ok {
				answer[r][pos[it]] = k
			}
		}
		if weightCol >= 0 {
			v := strings.TrimSpace(row[weightCol])
			w, err := dataNumber(v)
			if err != nil || !(w > 0) {
				rr.fail(t.lines[r], t.cols[r][weightCol], "weight %q in column %s: want a number > 0 for every respondent, "+
					"written as %s", v, ref.Weight, acceptedNumbers)
			}
			weights = append(weights, w)
		}
		group[r] = make([]string, len(ref.Groups))
		for g, c := range groupCol {
			v := strings.TrimSpace(row[c])
			if v == "NA" {
				v = ""
			}
			group[r][g] = v
		}
	}
	if rr.errs > 0 {
		return
	}
	// The file's people, inlined: each one's answers on the items the file has (in questionnaire order), group
	// values and weights.
	rs := &experiment.Respondents{Items: present, Answers: answer, Weights: weights}
	if len(ref.Groups) > 0 {
		rs.Groups = group
	}
	ref.Respondents = rs
}

// counts reads a file of counts: item_id, option_id, count and an optional group ("gender=2"; empty or "all"
// for the whole sample). lower is the header in lower case.
func (rr *refReader) counts(lower []string) {
	t, ref := rr.t, rr.ref
	col := map[string]int{}
	for c, h := range lower {
		if !slices.Contains(countColumns, h) {
			rr.fail(1, t.headerCols[c], "unknown column %q in a file of counts%s; want columns item_id, option_id, count and optionally group",
				t.header[c], suggest.DidYouMean(h, countColumns))
			continue
		}
		col[h] = c
	}
	for _, need := range countColumns[:3] {
		if _, ok := col[need]; !ok {
			rr.fail(1, 1, "no %s column: a file of counts has columns item_id, option_id, count and optionally group", need)
		}
	}
	if rr.errs > 0 {
		return
	}
	type key struct {
		it    int
		group string
	}
	counts := map[key][]int{}
	seen := map[[3]string]int{} // item, option, group → line
	firstLine := map[int]int{}
	groupsOf := map[int]bool{} // items with counts of a group other than all
	var labels []string
	for r, row := range t.rows {
		line := t.lines[r]
		cell := func(c string) (string, int) {
			i, ok := col[c]
			if !ok {
				return "", 1
			}
			return strings.TrimSpace(row[i]), t.cols[r][i]
		}
		id, idCol := cell("item_id")
		it, ok := rr.itemIdx[id]
		if !ok {
			rr.fail(line, idCol, "unknown item id %q%s; the questionnaire's items: %s", id, suggest.DidYouMean(id, rr.itemIDs), strings.Join(rr.itemIDs, ", "))
			continue
		}
		opt, optCol := cell("option_id")
		k, ok := rr.option(it, opt, line, optCol)
		if !ok {
			continue
		}
		cs, cCol := cell("count")
		n, err := dataCount(cs)
		if err != nil {
			rr.fail(line, cCol, "count %q: want a whole number of people ≥ 0, written as %s", cs, acceptedNumbers)
			continue
		}
		g, gCol := cell("group")
		if g == "" {
			g = experiment.GroupAll
		}
		if g != experiment.GroupAll {
			c, v, ok := experiment.SplitGroup(g)
			switch {
			case !ok || v == "":
				rr.fail(line, gCol, "group %q: want column=value such as gender=2, or empty (or %q) for the whole sample", g, experiment.GroupAll)
				continue
			case !slices.Contains(ref.Groups, c):
				declared := strings.Join(ref.Groups, ", ")
				if declared == "" {
					declared = "none declared"
				}
				rr.fail(line, gCol, "group %q: column %q is not in reference.groups (%s); add it there", g, c, declared)
				continue
			}
			groupsOf[it] = true
		}
		if prev, dup := seen[[3]string{id, opt, g}]; dup {
			rr.fail(line, 1, "item %s, option %s, group %s again (line %d has it); give each count once", id, opt, g, prev)
			continue
		}
		seen[[3]string{id, opt, g}] = line
		if _, ok := firstLine[it]; !ok {
			firstLine[it] = line
		}
		kk := key{it, g}
		if counts[kk] == nil {
			counts[kk] = make([]int, len(rr.spec.OptionsFor(it).Options))
			if !slices.Contains(labels, g) {
				labels = append(labels, g)
			}
		}
		counts[kk][k] += n
	}
	for it := range groupsOf {
		if counts[key{it, experiment.GroupAll}] == nil {
			rr.fail(firstLine[it], 1, "item %s has counts for groups but none for the whole sample; add its rows with an empty group (or %q)",
				rr.spec.Questionnaire.Items[it].ID, experiment.GroupAll)
		}
	}
	if rr.errs > 0 {
		return
	}
	labels = sortLabels(labels, ref.Groups)
	for it := range rr.spec.Questionnaire.Items {
		for _, g := range labels {
			if c := counts[key{it, g}]; c != nil {
				ref.Counts = append(ref.Counts, experiment.ReferenceCounts{Item: rr.spec.Questionnaire.Items[it].ID, Group: g, Counts: c})
			}
		}
	}
}

// sortLabels orders group labels: all first, then by column in the order of groups, then by value (see
// experiment.CompareGroupValues).
func sortLabels(labels, groups []string) []string {
	out := slices.Clone(labels)
	slices.SortStableFunc(out, func(a, b string) int {
		if a == experiment.GroupAll || b == experiment.GroupAll {
			return cmp.Compare(boolInt(b == experiment.GroupAll), boolInt(a == experiment.GroupAll))
		}
		ca, va, _ := experiment.SplitGroup(a)
		cb, vb, _ := experiment.SplitGroup(b)
		return cmp.Or(cmp.Compare(slices.Index(groups, ca), slices.Index(groups, cb)), experiment.CompareGroupValues(va, vb))
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
