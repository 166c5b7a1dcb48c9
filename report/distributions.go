package report

import (
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

// distTable is one model's mean answer distribution per item over all its cells, beside the humans' (group
// "all") when the spec has a reference.
type distTable struct {
	Model string
	// Open is true for the first model: its table shows unfolded, the others fold so a run of many models
	// and items stays a page one can scroll.
	Open bool
	// Source is results.SourceProbs, SourceAnswers or SourceMixed over all the model's cells.
	Source string
	// MeanW1 and MeanJSD average the items with both distributions; Coverage is over the cells with
	// probabilities.
	MeanW1, MeanJSD, Coverage *float64
	Rows                      []distRow
}

// distRow is one item of a distTable. The statistics are nil where undefined (no human side, no cell with
// probabilities).
type distRow struct {
	Key                 string // model/item
	Item, Text, Scale   string
	Reversed            bool
	Source              string
	Cells, Humans       int
	Bars                []optBar
	ModelH, HumanH      *float64 // entropy of the mean distribution, of the humans' (bits)
	W1, JSD             *float64
	JSDFill             string
	CellH, Coverage     *float64 // mean over the cells with probabilities
	Agree               *float64 // share of cells whose most likely option is their written answer
	HasModel, HasHumans bool
}

// optBar is one option of an item: its model and human probability as bar heights (pixels, see pmfHeight) and as text (data-p
// and data-h, 6 decimals as reference.csv writes them; "" without that side).
type optBar struct {
	Label, Title   string
	Model, Human   string
	HModel, HHuman float64
}

// refScaleRow is one model × scale of reference_scales.csv, group "all".
type refScaleRow struct {
	Key                    string // model/scale
	Model, Scale, Name     string
	Personas, ItemsUsed    int
	Humans, HumanItemsUsed int
	ModelAlpha, HumanAlpha *float64
	ModelOmega, HumanOmega *float64
	HasH                   bool
}

// showDistributions says whether the report has the distributions section: when some cell had option
// probabilities or the spec has a human reference. Without either every item's distribution is the share of
// written answers, which the heatmap and items.csv already show.
func showDistributions(r *Run) bool { return r.Spec.Reference != nil || r.cells.any() }

// distTables has one table per model, in spec order.
func distTables(r *Run) []distTable {
	s := r.Spec
	ref := map[[2]string]*results.ReferenceRow{}
	for i := range r.Reference {
		if row := &r.Reference[i]; row.Group == experiment.GroupAll {
			ref[[2]string{row.Model, row.ItemID}] = row
		}
	}
	out := make([]distTable, 0, len(s.Models))
	for m, model := range s.Models {
		t := distTable{Model: model.ID, Open: m == 0}
		var w1, jsd float64
		nw, nj, cells, fromProbs := 0, 0, 0, 0
		for it, item := range s.Questionnaire.Items {
			pmf := r.GroupPMF(m, it, experiment.GroupAll)
			cells += pmf.Cells
			fromProbs += pmf.FromProbs
			row := distRow{Key: model.ID + "/" + item.ID, Item: item.ID, Text: item.Text, Scale: item.Scale,
				Reversed: item.Reversed, Source: pmf.Source(), Cells: pmf.Cells, HasModel: pmf.P != nil}
			if pmf.P != nil {
				row.ModelH = entropy(pmf.P)
			}
			var human []float64
			if rr := ref[[2]string{model.ID, item.ID}]; rr != nil {
				human, row.Humans, row.HasHumans = rr.Human, rr.Humans, rr.Human != nil
				row.HumanH, row.W1, row.JSD = rr.HumanEntropy, rr.W1, rr.JSD
				if rr.ModelEntropy != nil {
					row.ModelH = rr.ModelEntropy
				}
			}
			if row.W1 != nil {
				w1 += *row.W1
				nw++
			}
			if row.JSD != nil {
				jsd += *row.JSD
				nj++
				// JSD in bits lies in [0, 1]: white for equal distributions, deep orange for disjoint ones.
				row.JSDFill = ramp(*row.JSD, orange)
			}
			ps := r.cells.item(m, it)
			row.CellH, row.Coverage, row.Agree = ps.meanEntropy(), ps.meanCoverage(), ps.agreeShare()
			row.Bars = optBars(s.OptionsFor(it).Options, pmf.P, human)
			t.Rows = append(t.Rows, row)
		}
		t.Source = results.PMF{Cells: cells, FromProbs: fromProbs}.Source()
		t.MeanW1, t.MeanJSD = ratio(w1, nw), ratio(jsd, nj)
		t.Coverage = r.cells.model(m).meanCoverage()
		out = append(out, t)
	}
	return out
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
			b.Model, b.HModel = prob(model[k]), scale*model[k]
			parts = append(parts, "model "+strconv.FormatFloat(model[k], 'f', 3, 64))
		}
		if human != nil {
			b.Human, b.HHuman = prob(human[k]), scale*human[k]
			parts = append(parts, "humans "+strconv.FormatFloat(human[k], 'f', 3, 64))
		}
		if len(parts) > 0 {
			b.Title += ": " + strings.Join(parts, ", ")
		}
		out[k] = b
	}
	return out
}

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

// refScaleRows are reference_scales.csv's lines of group "all", in its order (model, scale).
func refScaleRows(a *results.Analysis) []refScaleRow {
	var out []refScaleRow
	for _, rs := range a.ReferenceScales {
		if rs.Group != experiment.GroupAll {
			continue
		}
		out = append(out, refScaleRow{Key: rs.Model + "/" + rs.Scale, Model: rs.Model, Scale: rs.Scale,
			Name: rs.ScaleName, Personas: rs.Personas, ItemsUsed: rs.ItemsUsed, Humans: rs.Humans,
			HumanItemsUsed: rs.HumanItemsUsed, ModelAlpha: rs.ModelAlpha, HumanAlpha: rs.HumanAlpha,
			ModelOmega: rs.ModelOmega, HumanOmega: rs.HumanOmega,
			HasH: rs.HumanAlpha != nil || rs.HumanOmega != nil || rs.Humans > 0})
	}
	return out
}
