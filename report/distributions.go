package report

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/psychometrics"
	"github.com/silicolab/silico/results"
)

// pmfHeight is the height in pixels of an item's tallest bar (the largest probability of either side): an item's
// probabilities are mostly well below 1, and what a reader compares is the shape of the model's distribution
// against the humans', so each item's bars are scaled to fill the chart. The template's .pmf .b has this height.
const pmfHeight = 32

// distTable is one model's answer distributions: a groupTable per reference group (everyone first, then the
// groups in reference.csv's order), or one table of everyone's when the spec has no reference.
type distTable struct {
	Model string
	// Open is true for the first model: its section shows unfolded, the others fold so a run of many models
	// and items stays a page one can scroll (the print style unfolds them all).
	Open bool
	// Source is results.SourceProbs, SourceAnswers or SourceMixed over all the model's cells.
	Source string
	// MeanW1 and MeanJSD are those of group everyone (its table's); Coverage is over the cells with
	// probabilities.
	MeanW1, MeanJSD, Coverage *float64
	Groups                    []groupTable
}

// groupTable is one model's comparison with the humans of one reference group: its items and, beneath, its
// scales' reliabilities beside the humans'.
type groupTable struct {
	Key    string // model/group, for data-key
	Anchor string // the heading's id
	// Label is reference.csv's group label ("all", "gender=2"); Name says it in words ("everyone", "gender = 2").
	Label, Name string
	// Personas is the number of the spec's personas in the group.
	Personas int
	// RespLo and RespHi are the fewest and the most respondents of the group who answered an item (0 without a
	// reference).
	RespLo, RespHi int
	// HasRef: the spec has a human reference (the human columns show). Everyone: the group of every persona,
	// the only one with the per-cell columns (the cells' own statistics are not kept per group).
	HasRef, Everyone bool
	// Mixed: the model's cells differ in source, so each row says its own.
	Mixed bool
	// Span says how far W1 can go in this table's items: "4" when each has five scored options.
	Span            string
	MeanW1, MeanJSD *float64
	// Cols are the comparison columns every row of the table has a value for, in order (see refCols).
	Cols []valCol
	Rows []distRow
	// ScaleCols are the columns of the scales' means of the items' figures (see scaleCols), Scales the
	// scales of reference_scales.csv with, last, the line over every item.
	ScaleCols []valCol
	Scales    []refScaleRow
	// NegAlpha: some scale's model α is negative (the table says what that does to ω).
	NegAlpha bool
}

// distRow is one item of a groupTable. The statistics are nil where undefined (no human side, no cell with
// probabilities).
type distRow struct {
	Key               string // model/group/item
	Item, Text, Scale string
	Reversed          bool
	Source            string
	Cells, Humans     int
	Bars              []optBar
	// ModelH and HumanH are the entropies in bits of the model's mean distribution and of the humans'.
	ModelH, HumanH *float64
	// Vals are the comparison figures, one per column of the table's Cols.
	Vals []val
	// CellH, Coverage and Agree are over the model's cells with probabilities (group everyone only): their
	// mean entropy, their mean probability on valid labels and the share whose most likely option is the
	// written answer.
	CellH, Coverage     *float64
	Agree               *float64
	HasModel, HasHumans bool
}

// figure is a statistic with its interval: Lo and Hi are nil when it has none (the template writes the
// interval only when both are set, and draws it when W is set, see axis.place).
type figure struct {
	V, Lo, Hi *float64
	W         *whisker
}

// valCol is one comparison column of a group's table: a distance or score of the model against the humans,
// and beside it, when the analysis has them, the same figure for the uniform answer (a baseline any model
// should beat), for two random halves of the humans (a human–human baseline, not a bound: each half has half
// the people) and for the perfect model (a model of the run's size whose answers are drawn from the humans'
// distribution: as close as sampling allows).
type valCol struct {
	Key  string // data-key suffix: w1, jsd
	Head string // column heading
	// Unit and Better say what the figure is measured in and which way is closer to the humans; Legend what it
	// is.
	Unit, Better, Legend     string
	Baseline, Split, Perfect bool
	// Axis names the whisker axis the column's intervals are drawn on: columns with the same Axis share one
	// (the model's and the humans' mean score), "" is the column's own.
	Axis string
}

// Span is the number of table columns c takes: the model's, and the baselines and floor it has.
func (c valCol) Span() int {
	n := 1
	for _, has := range []bool{c.Baseline, c.Split, c.Perfect} {
		if has {
			n++
		}
	}
	return n
}

// valHead is what template "valhead" writes: the headings of Cols, each with Unit when it is set, else the
// column's own.
type valHead struct {
	Cols []valCol
	Unit string
}

// valCells is what template "valcells" writes: one row's Vals of Cols, keyed Key/column.
type valCells struct {
	Cols []valCol
	Vals []val
	Key  string
}

// val is one row's figures of a valCol: the model's, the uniform answer's, the humans' split halves' and the
// perfect model's (the last three shown only when the column has them; the perfect model's interval is the
// spread of its draws); Fill colours the model's cell ("" for none).
type val struct {
	Model, Uniform, Split, Perfect figure
	Fill                           string
}

// optBar is one option of an item: its model and human probability as bar heights (pixels, see pmfHeight), as
// text (data-p and data-h, 6 decimals as reference.csv writes them; "" without that side) and as the percent
// written under the bars (PModel, PHuman).
type optBar struct {
	Label, Title   string
	Model, Human   string
	PModel, PHuman string
	HModel, HHuman float64
}

// refScaleRow is one model × scale × group of reference_scales.csv.
type refScaleRow struct {
	Key                 string // model/group/scale
	Scale, Name         string
	Personas, ItemsUsed int
	// Overall: the line of every item of the questionnaire (scale results.ScaleOverall), which has the means
	// and no α or ω.
	Overall bool
	// Humans are the respondents with a score on the scale; HumanItemsUsed the items the humans' figures used.
	Humans, HumanItemsUsed int
	// The four reliabilities with their intervals.
	ModelAlpha, HumanAlpha figure
	ModelOmega, HumanOmega figure
	// ItemsCompared are the scale's items with an alignment; Vals the means of their figures, one per column of
	// the table's ScaleCols.
	ItemsCompared int
	Vals          []val
	// HasH: the reference carries the humans' figures for the scale and group.
	HasH bool
	// NegAlpha: the model's α is negative, so its ω (which reverses negatively loading items) is not comparable
	// with the humans'.
	NegAlpha bool
	// Notes say why an empty figure is empty (reference_scales.csv's note for the model's; the humans' are
	// empty where the reference has none).
	Notes []string
}

// showDistributions says whether the report has the distributions section: when some cell had option
// probabilities or the spec has a human reference. Without either every item's distribution is the share of
// written answers, which the heatmap and items.csv already show.
func showDistributions(r *Run) bool { return r.Spec.Reference != nil || r.cells.any() }

// groupName says a reference group's label in words: "everyone" for every respondent, "column = value" for
// the others.
func groupName(label string) string {
	if label == experiment.GroupAll {
		return "everyone"
	}
	if col, v, ok := experiment.SplitGroup(label); ok {
		return col + " = " + v
	}
	return label
}

// refFlags say which optional figures the analysis' reference rows carry, so a column shows only with data:
// the uniform baseline, the humans' split halves, the perfect-model floor and nonresponse (an item with
// non-answer options).
type refFlags struct{ Baseline, Split, Perfect, Nonresponse bool }

// flagsOf reads refFlags from the rows of reference.csv.
func flagsOf(s *experiment.Spec, rows []results.ReferenceRow) refFlags {
	var f refFlags
	for i := range rows {
		r := &rows[i]
		f.Baseline = f.Baseline || r.UniformAlignment != nil || r.UniformW1 != nil
		f.Split = f.Split || r.SplitHalfAlignment != nil || r.SplitHalfW1 != nil
		f.Perfect = f.Perfect || slices.ContainsFunc(r.Perfect[:], func(fl results.Floor) bool { return fl.Mean != nil })
	}
	for it := range s.Questionnaire.Items {
		if slices.ContainsFunc(s.OptionsFor(it).Options, func(o experiment.Option) bool { return o.IgnoredForScale }) {
			f.Nonresponse = true
		}
	}
	return f
}

// refCols are the comparison columns of a table with a reference: alignment and W1 with the uniform baseline
// and the humans' split halves where reference.csv has them, SimBench's score, JSD, the four with the perfect
// model's floor where reference.csv has it, and, when an item has non-answer options, the two sides'
// nonresponse shares; each row's refVals fills the same columns in the same order.
func refCols(span string, f refFlags) []valCol {
	w1Range := "from 0 (the same distribution) up to the number of scored options − 1"
	if span != "" {
		w1Range = "from 0 (the same distribution) to " + span
	}
	cols := []valCol{
		{Key: "alignment", Head: "alignment", Unit: "0 to 1", Better: "higher is closer",
			Legend:   "1 − W1 / (number of scored options − 1): 1 is identical, 0 as far apart as the scale allows; higher is closer",
			Baseline: f.Baseline, Split: f.Split, Perfect: f.Perfect},
		{Key: "w1", Head: "W1", Unit: "scale points", Better: "lower is closer",
			Legend:   "the 1-Wasserstein distance between the model's and the humans' distributions over the scored options, unit spacing: how far, in answer steps, the model's answers would have to move to match the humans', " + w1Range,
			Baseline: f.Baseline, Split: f.Split, Perfect: f.Perfect},
		{Key: "simbench", Head: "SimBench", Unit: "score", Better: "higher is closer",
			Legend:  "100 · (1 − TVD(model, humans) / TVD(uniform, humans)): 0 is no better than the uniform answer, 100 identical to the humans, negative worse than uniform",
			Perfect: f.Perfect},
		{Key: "jsd", Head: "JSD", Unit: "bits", Better: "lower is closer",
			Legend:  "the Jensen–Shannon divergence over every option, 0 (the same) to 1 (nothing in common); the deeper the orange, the larger",
			Perfect: f.Perfect},
		{Key: "model_mean", Head: "model mean", Unit: "score", Better: "closer to the humans' is closer", Axis: "mean",
			Legend: "the model's expected score Σ p · score over the scored options (reverse-keyed items reversed)"},
		{Key: "human_mean", Head: "human mean", Unit: "score", Better: "the reference", Axis: "mean",
			Legend: "the humans' mean score, the same way; the two whiskers share one axis"},
	}
	if f.Nonresponse {
		cols = append(cols,
			valCol{Key: "model_nonresponse", Head: "model nonresponse", Unit: "share", Better: "closer to the humans' is closer",
				Legend: "the model's probability on the options that are not answers (don't know, refuse); the figures above leave them out"},
			valCol{Key: "human_nonresponse", Head: "human nonresponse", Unit: "share", Better: "the reference",
				Legend: "the humans' share of those options"})
	}
	return cols
}

// withCI turns a results.Interval into a figure's bounds around v.
func withCI(v *float64, iv results.Interval) figure { return figure{V: v, Lo: iv.Lo, Hi: iv.Hi} }

// floorFigure is a perfect-model floor as a figure: its mean, with the 2.5 % and 97.5 % quantiles of its draws
// as the interval.
func floorFigure(f results.Floor) figure { return figure{V: f.Mean, Lo: f.Lo, Hi: f.Hi} }

// refVals are row rr's figures of refCols' columns (f as refCols had it).
func refVals(rr *results.ReferenceRow, f refFlags) []val {
	n := 6
	if f.Nonresponse {
		n = 8
	}
	out := make([]val, n)
	if rr == nil {
		return out
	}
	out[0] = val{Model: withCI(rr.Alignment, rr.Intervals[results.IntervalAlignment]), Uniform: figure{V: rr.UniformAlignment},
		Split: figure{V: rr.SplitHalfAlignment}, Perfect: floorFigure(rr.Perfect[results.PerfectAlignment])}
	out[1] = val{Model: withCI(rr.W1, rr.Intervals[results.IntervalW1]), Uniform: figure{V: rr.UniformW1},
		Split: figure{V: rr.SplitHalfW1}, Perfect: floorFigure(rr.Perfect[results.PerfectW1])}
	out[2] = val{Model: withCI(rr.SimBench, rr.Intervals[results.IntervalSimBench]), Perfect: floorFigure(rr.Perfect[results.PerfectSimBench])}
	out[3] = val{Model: withCI(rr.JSD, rr.Intervals[results.IntervalJSD]), Perfect: floorFigure(rr.Perfect[results.PerfectJSD])}
	if rr.JSD != nil {
		// JSD in bits lies in [0, 1]: white for equal distributions, deep orange for disjoint ones.
		out[3].Fill = ramp(*rr.JSD, orange)
	}
	out[4] = val{Model: withCI(rr.ModelMean, rr.Intervals[results.IntervalModelMean])}
	out[5] = val{Model: withCI(rr.HumanMean, rr.Intervals[results.IntervalHumanMean])}
	if f.Nonresponse {
		out[6] = val{Model: figure{V: rr.ModelNonresponse}}
		out[7] = val{Model: figure{V: rr.HumanNonresponse}}
	}
	return out
}

// scaleCols are the columns of a scale table's means of its items' figures: alignment and W1 with the uniform
// baseline and the humans' split halves where reference.csv has them, and SimBench, the three with the perfect
// model's floor; scaleVals fills them.
func scaleCols(span string, f refFlags) []valCol {
	cols := refCols(span, f)[:3]
	for i := range cols {
		cols[i].Key = "mean_" + cols[i].Key
		cols[i].Legend = "the mean over the scale's items of each item's " + cols[i].Head + " (the items' table)"
	}
	return cols
}

// scaleVals are reference_scales.csv line rs's figures of scaleCols' columns.
func scaleVals(rs *results.ReferenceScale) []val {
	m, iv := rs.Means, rs.MeanIntervals
	pf := rs.Perfect
	return []val{
		{Model: withCI(m[results.MeanAlignment], iv[results.MeanAlignment]), Uniform: figure{V: m[results.MeanUniformAlignment]},
			Split: figure{V: m[results.MeanSplitHalfAlignment]}, Perfect: floorFigure(pf[results.PerfectAlignment])},
		{Model: withCI(m[results.MeanW1], iv[results.MeanW1]), Uniform: figure{V: m[results.MeanUniformW1]},
			Split: figure{V: m[results.MeanSplitHalfW1]}, Perfect: floorFigure(pf[results.PerfectW1])},
		{Model: withCI(m[results.MeanSimBench], iv[results.MeanSimBench]), Perfect: floorFigure(pf[results.PerfectSimBench])},
	}
}

// drawWhiskers places the whiskers of the model figures of rows (each row's values, one per column of cols) on
// one axis per column, or per shared Axis, with each row's uniform baseline and split halves marked, and the
// perfect model's figures on the same axis as the model's.
func drawWhiskers(cols []valCol, rows [][]val) {
	axes := map[string]*axis{}
	axisOf := func(c valCol) *axis {
		k := cmp.Or(c.Axis, "col:"+c.Key)
		if axes[k] == nil {
			axes[k] = &axis{}
		}
		return axes[k]
	}
	for _, vals := range rows {
		for c, v := range vals {
			ax := axisOf(cols[c])
			ax.addFigure(v.Model)
			ax.addFigure(v.Perfect)
			ax.add(v.Uniform.V, v.Split.V)
		}
	}
	for _, vals := range rows {
		for c := range vals {
			v := &vals[c]
			axisOf(cols[c]).place(&v.Model, v.Uniform.V, v.Split.V)
			axisOf(cols[c]).place(&v.Perfect, nil, nil)
		}
	}
}

// drawWhiskers places every whisker of the table: the items' comparison figures (drawWhiskers' axes), the
// scales' means the same way, and the scales' α (model and humans on one axis) and ω (another).
func (g *groupTable) drawWhiskers() {
	items := make([][]val, len(g.Rows))
	for i := range g.Rows {
		items[i] = g.Rows[i].Vals
	}
	drawWhiskers(g.Cols, items)
	means := make([][]val, len(g.Scales))
	var alpha, omega []*figure
	for i := range g.Scales {
		r := &g.Scales[i]
		means[i] = r.Vals
		if !r.Overall {
			alpha = append(alpha, &r.ModelAlpha, &r.HumanAlpha)
			omega = append(omega, &r.ModelOmega, &r.HumanOmega)
		}
	}
	drawWhiskers(g.ScaleCols, means)
	placeOnOneAxis(alpha)
	placeOnOneAxis(omega)
}

// distTables has one section per model, in spec order.
func distTables(r *Run) []distTable {
	s := r.Spec
	ref := map[[3]string]*results.ReferenceRow{}
	for i := range r.Reference {
		row := &r.Reference[i]
		ref[[3]string{row.Model, row.Group, row.ItemID}] = row
	}
	groups := []string{experiment.GroupAll}
	if s.Reference != nil {
		groups = s.Reference.GroupLabels()
	}
	span := w1Span(s)
	flags := flagsOf(s, r.Reference)
	out := make([]distTable, 0, len(s.Models))
	for m, model := range s.Models {
		t := distTable{Model: model.ID, Open: m == 0}
		cells, fromProbs := 0, 0
		for gi, g := range groups {
			gt := groupTable{Key: model.ID + "/" + g, Anchor: "grp-" + strconv.Itoa(m) + "-" + strconv.Itoa(gi), Label: g,
				Name: groupName(g), HasRef: s.Reference != nil, Everyone: g == experiment.GroupAll, Span: span}
			for p := range s.Personas {
				if s.InGroup(p, g) {
					gt.Personas++
				}
			}
			if gt.HasRef {
				gt.Cols = refCols(span, flags)
			}
			var w1, jsd float64
			nw, nj, first := 0, 0, true
			for it, item := range s.Questionnaire.Items {
				pmf := r.GroupPMF(m, it, g)
				if gt.Everyone {
					cells += pmf.Cells
					fromProbs += pmf.FromProbs
				}
				row := distRow{Key: model.ID + "/" + g + "/" + item.ID, Item: item.ID, Text: item.Text, Scale: item.Scale,
					Reversed: item.Reversed, Source: pmf.Source(), Cells: pmf.Cells, HasModel: pmf.P != nil}
				if pmf.P != nil {
					row.ModelH = entropy(pmf.P)
				}
				var human []float64
				rr := ref[[3]string{model.ID, g, item.ID}]
				if rr != nil {
					human, row.Humans, row.HasHumans = rr.Human, rr.Humans, rr.Human != nil
					row.HumanH = rr.HumanEntropy
					if rr.ModelEntropy != nil {
						row.ModelH = rr.ModelEntropy
					}
					if rr.W1 != nil {
						w1 += *rr.W1
						nw++
					}
					if rr.JSD != nil {
						jsd += *rr.JSD
						nj++
					}
					if first || rr.Humans < gt.RespLo {
						gt.RespLo = rr.Humans
					}
					gt.RespHi = max(gt.RespHi, rr.Humans)
					first = false
				}
				if gt.HasRef {
					row.Vals = refVals(rr, flags)
				}
				if gt.Everyone {
					ps := r.cells.item(m, it)
					row.CellH, row.Coverage, row.Agree = ps.meanEntropy(), ps.meanCoverage(), ps.agreeShare()
				}
				row.Bars = optBars(s.OptionsFor(it).Options, pmf.P, human)
				gt.Rows = append(gt.Rows, row)
			}
			gt.MeanW1, gt.MeanJSD = ratio(w1, nw), ratio(jsd, nj)
			gt.Scales = refScaleRows(r.Analysis, model.ID, g)
			if gt.HasRef {
				gt.ScaleCols = scaleCols(span, flags)
				gt.drawWhiskers()
			}
			gt.NegAlpha = slices.ContainsFunc(gt.Scales, func(rs refScaleRow) bool { return rs.NegAlpha })
			t.Groups = append(t.Groups, gt)
		}
		t.Source = results.PMF{Cells: cells, FromProbs: fromProbs}.Source()
		for i := range t.Groups {
			t.Groups[i].Mixed = t.Source == results.SourceMixed
		}
		t.MeanW1, t.MeanJSD = t.Groups[0].MeanW1, t.Groups[0].MeanJSD
		t.Coverage = r.cells.model(m).meanCoverage()
		out = append(out, t)
	}
	return out
}

// w1Span is the largest W1 of the questionnaire's items as text, the number of scored options − 1 (W1 has unit
// spacing), when every item has the same; "" when they differ.
func w1Span(s *experiment.Spec) string {
	span := -1
	for it := range s.Questionnaire.Items {
		k := 0
		for _, o := range s.OptionsFor(it).Options {
			if !o.IgnoredForScale {
				k++
			}
		}
		switch {
		case span < 0:
			span = k - 1
		case span != k-1:
			return ""
		}
	}
	if span < 1 {
		return ""
	}
	return strconv.Itoa(span)
}

// optBars returns the bars of an item's options; model or human may be nil (no such side).
func optBars(opts []experiment.Option, model, human []float64) []optBar {
	top := 0.0
	for _, p := range [][]float64{model, human} {
		for _, v := range p {
			top = max(top, v)
		}
	}
	scale := 0.0
	if top > 0 {
		scale = pmfHeight / top
	}
	out := make([]optBar, len(opts))
	for k, o := range opts {
		b := optBar{Label: o.ID, Title: "option " + o.ID}
		if len([]rune(o.ID)) > 3 {
			b.Label = strconv.Itoa(k + 1) // a long id would not fit under its bars; the title names it
		}
		if o.Text != "" && o.Text != o.ID {
			b.Title += " “" + o.Text + "”"
		}
		var parts []string
		if model != nil {
			b.Model, b.PModel, b.HModel = prob(model[k]), percent(model[k]), scale*model[k]
			parts = append(parts, "model "+strconv.FormatFloat(model[k], 'f', 3, 64))
		}
		if human != nil {
			b.Human, b.PHuman, b.HHuman = prob(human[k]), percent(human[k]), scale*human[k]
			parts = append(parts, "humans "+strconv.FormatFloat(human[k], 'f', 3, 64))
		}
		if len(parts) > 0 {
			b.Title += ": " + strings.Join(parts, ", ")
		}
		out[k] = b
	}
	return out
}

// percent writes a probability as a whole percent, the figure under an option's bar.
func percent(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) }

// sourceText says in words where a model's distributions come from (results.PMF.Source).
func sourceText(source string) string {
	switch source {
	case results.SourceProbs:
		return "option probabilities"
	case results.SourceAnswers:
		return "written answers"
	case results.SourceMixed:
		return "option probabilities and written answers"
	}
	return "no answers"
}

// prob writes a probability with 6 decimals.
func prob(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }

func entropy(p []float64) *float64 {
	h, err := psychometrics.Entropy(p)
	if err != nil {
		return nil
	}
	return &h
}

// refScaleRows are reference_scales.csv's lines of model and group, in its order (scales as the questionnaire
// has them).
func refScaleRows(a *results.Analysis, model, group string) []refScaleRow {
	var out []refScaleRow
	nScales := len(a.ReferenceScales)
	for i, rs := range slices.Concat(a.ReferenceScales, a.ReferenceOverall) {
		if rs.Model != model || rs.Group != group {
			continue
		}
		iv := rs.AlphaOmega
		row := refScaleRow{Key: rs.Model + "/" + rs.Group + "/" + rs.Scale, Scale: rs.Scale,
			Name: rs.ScaleName, Personas: rs.Personas, ItemsUsed: rs.ItemsUsed, Humans: rs.Humans,
			HumanItemsUsed: rs.HumanItemsUsed,
			ModelAlpha:     withCI(rs.ModelAlpha, iv[results.IntervalModelAlpha]),
			HumanAlpha:     withCI(rs.HumanAlpha, iv[results.IntervalHumanAlpha]),
			ModelOmega:     withCI(rs.ModelOmega, iv[results.IntervalModelOmega]),
			HumanOmega:     withCI(rs.HumanOmega, iv[results.IntervalHumanOmega]),
			HasH:           rs.HumanAlpha != nil || rs.HumanOmega != nil || rs.Humans > 0,
			NegAlpha:       rs.ModelAlpha != nil && *rs.ModelAlpha < 0,
			ItemsCompared:  rs.ItemsCompared, Vals: scaleVals(&rs)}
		if i >= nScales {
			// The line over every item: its α and ω are per scale, which its note says and the table's legend.
			row.Overall, row.Name, row.HasH = true, "every item", false
			out = append(out, row)
			continue
		}
		if (rs.ModelAlpha == nil || rs.ModelOmega == nil) && rs.Note != "" {
			row.Notes = append(row.Notes, modelNote(rs.Note))
		}
		if !row.HasH {
			row.Notes = append(row.Notes, "The humans: the reference carries no α or ω for this scale and group.")
		} else if rs.HumanAlpha == nil || rs.HumanOmega == nil {
			row.Notes = append(row.Notes, "The humans: R psych gives no figure here (too few respondents or items with variance for it).")
		}
		out = append(out, row)
	}
	return out
}

// modelNote says reference_scales.csv's note (psychometrics.Reliability.Note: "alpha and omega: reason" or
// "omega: reason") as a sentence about the model's figures.
func modelNote(note string) string {
	if r, ok := strings.CutPrefix(note, "alpha and omega: "); ok {
		return "The model's α and ω: none, " + r + "."
	}
	if r, ok := strings.CutPrefix(note, "omega: "); ok {
		return "The model's ω: none, " + r + "."
	}
	return "The model: " + note + "."
}

// keyedFigure is a figure with the data-key its text carries (template "fig").
type keyedFigure struct {
	figure
	Key string
}

// HasCI reports whether some figure of the table has an interval (its legend then says what the brackets are).
func (g groupTable) HasCI() bool {
	for _, r := range g.Rows {
		for _, v := range r.Vals {
			for _, f := range []figure{v.Model, v.Uniform, v.Split, v.Perfect} {
				if f.Lo != nil && f.Hi != nil {
					return true
				}
			}
		}
	}
	return false
}

// HasScaleCI reports whether some α or ω of the table's scales has an interval.
func (g groupTable) HasScaleCI() bool {
	for _, r := range g.Scales {
		for _, f := range []figure{r.ModelAlpha, r.HumanAlpha, r.ModelOmega, r.HumanOmega} {
			if f.Lo != nil && f.Hi != nil {
				return true
			}
		}
	}
	return false
}

// ScaleNoteSpan is the number of columns a scale's note spans: every column of the scale table but the first.
func (g groupTable) ScaleNoteSpan() int {
	n := 4 + 3 // α and ω, model and humans; respondents, personas, items used
	for _, c := range g.ScaleCols {
		n += c.Span()
	}
	if len(g.ScaleCols) > 0 {
		n++ // items compared
	}
	return n
}
