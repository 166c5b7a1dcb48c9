package report

import (
	"strings"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
)

// validityTable is one model's lines of validity.csv, a section per statistic in validityChecks' order.
type validityTable struct {
	Model string
	// Open: the first model's checks show unfolded (print unfolds them all).
	Open     bool
	Sections []validitySection
}

// validityCheck says what one statistic of validity.csv is, how its table is laid out and what it guards
// against (the sentences of docs/architecture.md's validity section).
type validityCheck struct {
	Statistic string
	Title     string
	// What says what the figure is; Guards what a bad value of it would reveal.
	What, Guards string
	// Attribute and Level: the lines are per group attribute (r2, difference) and per level (difference).
	Attribute, Level bool
	// Sides: the lines have the model's and the humans' figure (all but congruence), SideHead their
	// heading; ValueHead the heading of the figure comparing them ("" for none).
	Sides     bool
	SideHead  string
	ValueHead string
	// Agree: the lines say whether the two sides' signs agree (difference).
	Agree bool
}

// validityChecks are the statistics of validity.csv in the order the report shows them.
var validityChecks = []validityCheck{
	{Statistic: results.ValiditySDRatio, Title: "Spread: SD of scores, model over humans", Sides: true, SideHead: "SD",
		ValueHead: "SD ratio",
		What:      "The SD of the scale score (of an item's score, in the lines beneath) over the model's personas and over the humans, and their ratio: 1 is the humans' spread, below 1 compressed.",
		Guards:    "It guards against compressed spread, the best-documented failure of silicon samples: personas that answer like one average person."},
	{Statistic: results.ValidityR2, Title: "Variance explained by a group attribute (R²)", Attribute: true, Sides: true, SideHead: "R²",
		What:   "The share of the scale-score variance the attribute explains, among the model's personas and among the humans.",
		Guards: "It guards against persona effects smaller or larger than group effects: personas that differ by an attribute far more than people do caricature it, personas that do not differ ignore it."},
	{Statistic: results.ValidityDifference, Title: "Group differences in scale means", Attribute: true, Level: true, Sides: true,
		SideHead: "difference", Agree: true,
		What:   "The mean scale score of a level minus that of the attribute's first level, on each side, and whether the two have the same sign.",
		Guards: "It guards against a gap that does not replicate: a model can match the humans' spread and still put one group above another where people put it below."},
	{Statistic: results.ValidityAcquiescence, Title: "Acquiescence", Sides: true, SideHead: "index",
		What:   "Half the sum of the mean raw answer minus the midpoint over the positively keyed items and the same over the negatively keyed ones: near 0 for answers by content, above 0 for agreeing with everything.",
		Guards: "It guards against yes-saying, which reversing the negative items hides in the scale score."},
	{Statistic: results.ValidityContradiction, Title: "Contradictions of reverse-keyed pairs", Sides: true, SideHead: "share",
		What:   "The share of (positive, negative) item pairs of a scale answered on the agreeing side both times, such as agreeing with both “is talkative” and “is quiet”.",
		Guards: "It guards against yes-saying that an average hides."},
	{Statistic: results.ValidityCongruence, Title: "Factor congruence with the humans (Tucker)", ValueHead: "congruence",
		What:   "Tucker's congruence of the scale's one-factor loadings among the personas with those among the humans: 1 is the same pattern; 0.95 and above is commonly read as equal, below 0.85 as different.",
		Guards: "It guards against a factor structure that is not the humans': items that hang together in people but not in the model measure something else there, whatever the means."},
}

// validitySection is one statistic's lines of one model: the scale lines, and for sd_ratio the item lines
// folded beneath.
type validitySection struct {
	validityCheck
	Rows, ItemRows []validityRow
}

// validityRow is one line of validity.csv as the report shows it. Key is model/statistic/scale/attribute/
// level/item, for data-key.
type validityRow struct {
	Key                                     string
	Scale, Attribute, Level, Baseline, Item string
	NModel, NHuman                          int
	Model, Human, Value                     figure
	// Agree is "yes" or "no" for a difference whose sides both have a value, "" otherwise.
	Agree string
	Note  string
}

// validityTables has a table per model of the analysis' validity.csv, in spec order; none when it has no
// lines (no reference, or a run without scales).
func validityTables(a *results.Analysis) []validityTable {
	if len(a.Validity) == 0 {
		return nil
	}
	byModel := map[string][]results.Validity{}
	for _, v := range a.Validity {
		byModel[v.Model] = append(byModel[v.Model], v)
	}
	var out []validityTable
	for _, m := range a.Spec.Models {
		lines := byModel[m.ID]
		if len(lines) == 0 {
			continue
		}
		t := validityTable{Model: m.ID, Open: len(out) == 0}
		for _, c := range validityChecks {
			sec := validitySection{validityCheck: c}
			for _, v := range lines {
				if v.Statistic != c.Statistic {
					continue
				}
				row := validityRowOf(v)
				if v.ItemID != "" {
					sec.ItemRows = append(sec.ItemRows, row)
				} else {
					sec.Rows = append(sec.Rows, row)
				}
			}
			if len(sec.Rows)+len(sec.ItemRows) == 0 {
				continue
			}
			drawValidityWhiskers(sec.Rows)
			drawValidityWhiskers(sec.ItemRows)
			t.Sections = append(t.Sections, sec)
		}
		out = append(out, t)
	}
	return out
}

func validityRowOf(v results.Validity) validityRow {
	row := validityRow{
		Key:   strings.Join([]string{v.Model, v.Statistic, v.Scale, v.Attribute, v.Level, v.ItemID}, "/"),
		Scale: v.Scale, Attribute: v.Attribute, Level: v.Level, Baseline: v.Baseline, Item: v.ItemID,
		NModel: v.NModel, NHuman: v.NHuman, Note: v.Note,
		Model: figure{V: v.ModelValue, Lo: v.ModelLo, Hi: v.ModelHi},
		Human: figure{V: v.HumanValue, Lo: v.HumanLo, Hi: v.HumanHi},
		Value: figure{V: v.Value, Lo: v.ValueLo, Hi: v.ValueHi},
	}
	if v.Attribute == experiment.GroupAll {
		row.Attribute = ""
	}
	if v.Agree != nil {
		row.Agree = "no"
		if *v.Agree {
			row.Agree = "yes"
		}
	}
	return row
}

// drawValidityWhiskers places the rows' whiskers: the model's and the humans' figures on one axis, the
// comparing value on another.
func drawValidityWhiskers(rows []validityRow) {
	var sides, value []*figure
	for i := range rows {
		r := &rows[i]
		sides = append(sides, &r.Model, &r.Human)
		value = append(value, &r.Value)
	}
	placeOnOneAxis(sides)
	placeOnOneAxis(value)
}

// validityView is what template "validity" draws: one statistic's rows, its scale lines or its item lines
// (Items, with an item column).
type validityView struct {
	Check validityCheck
	Items bool
	Rows  []validityRow
}
