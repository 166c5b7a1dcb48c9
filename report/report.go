// Package report renders a run (its results.Analysis, see Analyze) as one self-contained HTML page: the spec in
// brief, cost, tokens and time, parse rates, scale score distributions, item × persona answer heatmaps, the
// answer distributions per item beside a human reference's, option order bias (runs that varied the order),
// reliability (the humans' too), seed agreement, and latency and attempt histograms.
//
// The page has no scripts and loads nothing: its style is inlined and every chart is SVG written by
// html/template from positions computed here. That is deliberate. The page must open offline and in
// air-gapped labs, so a charting library would have to embed its JavaScript runtime (a megabyte for ECharts,
// as go-echarts uses) into every report; static SVG needs none, prints, stays readable with scripts disabled,
// escapes every label through html/template, and puts each number in the markup where a test can read it.
package report

import (
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// FileName is the name of the report in an output directory.
const FileName = "report.html"

// LowReliability is the threshold below which a reliability value is marked: 0.7, the usual lower bound for
// an acceptable scale.
const LowReliability = 0.7

//go:embed report.html.tmpl
var templates embed.FS

// funcs are the helpers of the report's template and of every page built on it (Page).
var funcs = template.FuncMap{
	"stat": fmtStat,
	"int":  thousands,
	"pct":  func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" },
	"pctp": func(v *float64) string {
		if v == nil {
			return "—"
		}
		return strconv.FormatFloat(100**v, 'f', 1, 64) + "%"
	},
	"f1":      func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"low":     isLow,
	"source":  sourceText,
	"add":     func(a, b float64) float64 { return a + b },
	"half":    func(v float64) float64 { return v / 2 },
	"list":    func(h ...histogram) []histogram { return h },
	"iv":      interval,
	"group":   groupName,
	"fig":     func(f figure, key string) keyedFigure { return keyedFigure{f, key} },
	"valhead": func(cols []valCol, unit string) valHead { return valHead{cols, unit} },
	"valcells": func(cols []valCol, vals []val, key string) valCells {
		return valCells{Cols: cols, Vals: vals, Key: key}
	},
	"vsec": func(s validitySection, rows []validityRow) validityView {
		return validityView{Check: s.validityCheck, Items: len(rows) > 0 && rows[0].Item != "", Rows: rows}
	},
	"lowMark": func() string {
		return strconv.FormatFloat(LowReliability, 'g', -1, 64)
	},
}

var page = parsePage()

// parsePage parses the report's template. Page parses its own copy for other pages: html/template cannot clone
// a template once it has been executed, and the report's may have been.
func parsePage() *template.Template {
	return template.Must(template.New("report.html.tmpl").Funcs(funcs).ParseFS(templates, "report.html.tmpl"))
}

// Write renders the report of r to w.
func Write(w io.Writer, r *Run) error {
	if err := page.Execute(w, build(r)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// view is what the template shows.
type view struct {
	Title       string
	RunID       string
	Summary     string
	Description string
	Models      []modelInfo
	Seeds       string
	Facts       []fact
	Batch       []batchRow
	Parse       []parseRow
	// Probs: some cell had option probabilities (the parse table shows coverage and agreement); Cut: some
	// answer was cut at max_tokens or content-filtered (it shows their counts).
	Probs, Cut bool
	// Dists has a section per model when the run has probabilities or a human reference, none otherwise;
	// HasRef says there is a reference.
	Dists  []distTable
	HasRef bool
	// Validity has a table per model of validity.csv's checks of the model's personas against the humans beyond
	// the distributions, when the analysis has them; the section shows nothing without.
	Validity []validityTable
	// Order has a table per model when the run varied option order (order_bias.csv), none otherwise.
	Order       []orderTable
	Scales      []scaleChart
	Heatmaps    []heatmap
	Reliability []relRow
	Items       []itemRow
	Agreement   []agreeTable
	Latency     histogram
	Attempts    histogram
	Errors      []string
	// Warnings are the summary's (a model answered by two served models, several seeds at temperature 0).
	Warnings []string
	Low      float64
	// Embed is set for a kind: embed run: its cells are vectors, so the page has the overview, the vectors per
	// model and the latencies, and says which files hold the vectors; EmbedTexts names where the texts came from.
	Embed      bool
	EmbedTexts string
}

// modelInfo is a row of the models table; Served lists the served models and fingerprints that answered the
// model's cells, with their counts (see servedText).
type modelInfo struct{ ID, Name, Provider, Params, Served string }

// servedText writes a model's served models and fingerprints as the report shows them: "name · fingerprint
// (cells)" each, most cells first, as summary.json lists them; "—" when the provider named none.
func servedText(served []wire.Served) string {
	if len(served) == 0 {
		return "—"
	}
	parts := make([]string, len(served))
	for i, s := range served {
		name := cmp.Or(s.ServedModel, "?")
		if s.SystemFingerprint != "" {
			name += " · " + s.SystemFingerprint
		}
		parts[i] = name + " (" + thousands(s.Cells) + ")"
	}
	return strings.Join(parts, ", ")
}

// fact is one headline number; Key names it for tests (data-key).
type fact struct{ Label, Value, Key string }

func build(r *Run) view {
	a := r.Analysis
	s := a.Spec
	v := view{
		Title: s.Name, RunID: a.RunID, Summary: s.Summary(), Description: s.Description,
		Errors: a.Summary.Errors, Low: LowReliability, Warnings: a.Summary.Warnings,
	}
	seeds := make([]string, len(s.Seeds))
	for i, sd := range s.Seeds {
		seeds[i] = strconv.FormatInt(sd, 10)
	}
	v.Seeds = strings.Join(seeds, ", ")
	for i, m := range s.Models {
		var params []string
		p := m.Params
		if p.Temperature != nil {
			params = append(params, "temperature "+strconv.FormatFloat(*p.Temperature, 'g', -1, 64))
		}
		if p.TopP != nil {
			params = append(params, "top_p "+strconv.FormatFloat(*p.TopP, 'g', -1, 64))
		}
		if p.MaxTokens > 0 {
			params = append(params, "max_tokens "+strconv.Itoa(p.MaxTokens))
		}
		provider := m.Provider
		if provider == "" {
			provider = "openai"
		}
		mi := modelInfo{ID: m.ID, Name: m.Name, Provider: provider, Params: strings.Join(params, ", "), Served: "—"}
		if i < len(a.Summary.Models) {
			mi.Served = servedText(a.Summary.Models[i].Served)
		}
		v.Models = append(v.Models, mi)
	}
	v.Batch = batchRows(a)
	v.Facts = facts(a, len(v.Batch) > 0)
	v.Parse = parseRows(r)
	v.Latency, v.Attempts = histograms(a)
	if s.IsEmbed() {
		v.Embed, v.EmbedTexts = true, s.Embed.Texts
		// An embedding is parsed by nothing and completes no tokens.
		v.Facts = slices.DeleteFunc(v.Facts, func(f fact) bool { return f.Key == "unparsed" || f.Key == "completion_tokens" })
		for i := range v.Facts {
			if v.Facts[i].Key == "ok" {
				v.Facts[i].Label = "Vectors"
			}
		}
		return v
	}
	v.Probs = r.cells.any()
	v.Cut = a.Summary.Length > 0 || a.Summary.ContentFiltered > 0
	if showDistributions(r) {
		v.Dists = distTables(r)
		v.HasRef = s.Reference != nil
	}
	v.Validity = validityTables(a)
	v.Order = orderTables(r.OrderBias)
	v.Scales = scaleCharts(a)
	v.Heatmaps = heatmaps(a)
	v.Reliability, v.Items = relRows(a)
	v.Agreement = agreeTables(a)
	return v
}

// facts are the overview's headline numbers; batch adds what the models in batch mode saved.
func facts(a *results.Analysis, batch bool) []fact {
	sum := a.Summary
	latSum, ran := a.Latency.SumMS, a.Latency.Ran
	elapsed := "—"
	if sum.ElapsedSeconds > 0 {
		elapsed = formatSeconds(sum.ElapsedSeconds)
	}
	meanLat := "—"
	if ran > 0 {
		meanLat = strconv.FormatFloat(latSum/float64(ran), 'f', 0, 64) + " ms"
	}
	out := []fact{
		{"Cells", thousands(sum.Cells), "cells"},
		{"Parsed", thousands(sum.OK), "ok"},
		{"Unparsed", thousands(sum.Unparsed), "unparsed"},
		{"Failed", thousands(sum.Failed), "failed"},
		{"Prompt tokens", thousands(sum.PromptTokens), "prompt_tokens"},
		{"Completion tokens", thousands(sum.CompletionTokens), "completion_tokens"},
		{"Cost", usd(sum.CostUSD), "cost_usd"},
	}
	if batch {
		out = append(out, fact{"Saved by batch pricing", usd(sum.BatchSavedUSD), "batch_saved_usd"})
	}
	return append(out, fact{"Wall time", elapsed, "elapsed"}, fact{"Mean call latency", meanLat, "mean_latency"})
}

// usd writes an amount of dollars as the report shows money: every digit, as in summary.json and results.csv.
func usd(v usage.USD) string { return v.Display() }

// batchRow is what one model in batch mode cost and what it saved against synchronous calls. Sync, Saved and
// SavedPct are "—" when no price is known for the model (its cost is then unknown too).
type batchRow struct {
	Model string
	Cells int
	// Price is the batch price, input / output per million tokens.
	Price                       string
	Cost, Sync, Saved, SavedPct string
}

// batchRows has a row per model in batch mode, in spec order; none when the run has no such model.
func batchRows(a *results.Analysis) []batchRow {
	s := a.Spec
	var out []batchRow
	for i, m := range s.Models {
		if !s.Batched(m) || i >= len(a.Summary.Models) {
			continue
		}
		ms := a.Summary.Models[i]
		r := batchRow{Model: m.ID, Cells: ms.Cells, Price: "—", Cost: usd(ms.CostUSD), Sync: "—", Saved: "—", SavedPct: "—"}
		if p, ok := llm.BatchPriceFor(m); ok {
			r.Price = "$" + strconv.FormatFloat(p.InputPerMTok, 'f', -1, 64) + " / $" + strconv.FormatFloat(p.OutputPerMTok, 'f', -1, 64)
		}
		if _, ok := llm.PriceFor(m); ok {
			sync := ms.CostUSD + ms.BatchSavedUSD
			r.Sync, r.Saved = usd(sync), usd(ms.BatchSavedUSD)
			if sync > 0 {
				r.SavedPct = strconv.FormatFloat(100*ms.BatchSavedUSD.Float()/sync.Float(), 'f', 1, 64) + "%"
			}
		}
		out = append(out, r)
	}
	return out
}

// parseRow is one model's parse rate with its stacked bar (widths in percent of the bar), its answers cut at
// max_tokens (finish_reason length) and content-filtered, and over its cells with option probabilities the mean
// coverage and the share whose most likely option is the written answer (nil without such cells).
type parseRow struct {
	Model                  string
	Cells, OK, Unp, Failed int
	Rate                   float64
	WOK, WUnp, WFailed     float64
	Length, Filtered       int
	Coverage, Agree        *float64
	Agreed, AgreeCells     int
}

func parseRows(run *Run) []parseRow {
	a := run.Analysis
	var out []parseRow
	for i, m := range a.Summary.Models {
		r := parseRow{Model: m.Model, Cells: m.Cells, OK: m.OK, Unp: m.Unparsed, Failed: m.Failed,
			Length: m.Length, Filtered: m.ContentFiltered}
		ps := run.cells.model(i)
		r.Coverage, r.Agree, r.Agreed, r.AgreeCells = ps.meanCoverage(), ps.agreeShare(), ps.agree, ps.nAgree
		if m.Cells > 0 {
			n := float64(m.Cells)
			r.Rate = float64(m.OK) / n
			r.WOK, r.WUnp, r.WFailed = 100*float64(m.OK)/n, 100*float64(m.Unparsed)/n, 100*float64(m.Failed)/n
		}
		out = append(out, r)
	}
	return out
}

// relRow is one line of the reliability table.
type relRow struct {
	Key string // model/seed/scale
	results.Reliability
}

type itemRow struct {
	Key string // model/seed/scale/item
	results.ItemStat
}

func relRows(a *results.Analysis) ([]relRow, []itemRow) {
	rel := make([]relRow, len(a.Reliability))
	for i, r := range a.Reliability {
		rel[i] = relRow{Key: r.Model + "/" + strconv.FormatInt(r.Seed, 10) + "/" + r.Scale, Reliability: r}
	}
	items := make([]itemRow, len(a.Items))
	for i, it := range a.Items {
		items[i] = itemRow{Key: it.Model + "/" + strconv.FormatInt(it.Seed, 10) + "/" + it.Scale + "/" + it.ItemID, ItemStat: it}
	}
	return rel, items
}

// agreeTable is the seed agreement of one model: personas × scales.
type agreeTable struct {
	Model  string
	Seeds  int
	Scales []string
	Rows   []agreeRow
}

type agreeRow struct {
	Persona string
	Cells   []agreeCell
}

type agreeCell struct {
	Key  string // model/persona/scale
	Agr  results.Agreement
	Fill string
}

func agreeTables(a *results.Analysis) []agreeTable {
	s := a.Spec
	nk := len(a.ScaleIDs)
	if nk == 0 {
		return nil
	}
	lo, hi := scoreRange(a)
	var out []agreeTable
	for m := range s.Models {
		t := agreeTable{Model: s.Models[m].ID, Seeds: len(s.Seeds), Scales: a.ScaleIDs}
		for p := range s.Personas {
			row := agreeRow{Persona: s.Personas[p].ID}
			for k := range a.ScaleIDs {
				ag := a.AgreementOf(m, p, k)
				fill := "#ffffff"
				if r := ag.Range(); r != nil && hi > lo {
					// White for no movement, deepening orange as the range nears half the scale.
					fill = ramp(math.Min(1, *r/((hi-lo)/2)), orange)
				}
				row.Cells = append(row.Cells, agreeCell{Key: t.Model + "/" + row.Persona + "/" + a.ScaleIDs[k], Agr: ag, Fill: fill})
			}
			t.Rows = append(t.Rows, row)
		}
		out = append(out, t)
	}
	return out
}

// scoreRange is the lowest and highest score an item of a scale can get, over all scale items.
func scoreRange(a *results.Analysis) (lo, hi float64) {
	first := true
	for it, k := range a.ItemScale {
		if k < 0 {
			continue
		}
		for _, o := range a.Spec.OptionsFor(it).Options {
			if o.IgnoredForScale {
				continue
			}
			w := float64(o.Weight)
			if first || w < lo {
				lo = w
			}
			if first || w > hi {
				hi = w
			}
			first = false
		}
	}
	return lo, hi
}

func isLow(v *float64) bool { return v != nil && *v < LowReliability }

// fmtStat writes a statistic with 3 decimals, "—" when undefined.
func fmtStat(v *float64) string {
	switch {
	case v == nil:
		return "—"
	case math.IsInf(*v, -1):
		// A bootstrap bound can be infinite: α of a resample whose total score does not vary.
		return "−∞"
	case math.IsInf(*v, 1):
		return "∞"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

func formatSeconds(s float64) string {
	switch {
	case s < 60:
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	case s < 3600:
		return fmt.Sprintf("%dm %02ds", int(s)/60, int(s)%60)
	default:
		return fmt.Sprintf("%dh %02dm", int(s)/3600, int(s)%3600/60)
	}
}

// thousands writes n with comma separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
