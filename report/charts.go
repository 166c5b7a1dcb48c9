package report

import (
	"math"
	"slices"
	"strconv"

	"github.com/silicolab/silico/results"
)

// Colour ramps: a few stops, interpolated linearly in RGB.
var (
	// viridis runs from dark purple (low scores) through teal to yellow (high scores); it stays readable in
	// grey and for the common colour-vision deficiencies.
	viridis = [][3]float64{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}
	// orange stops at a mid tone so the numbers on it stay readable.
	orange = [][3]float64{{255, 255, 255}, {253, 208, 162}, {253, 141, 60}}
)

// ramp returns the colour at t in [0, 1] along stops, as #rrggbb.
func ramp(t float64, stops [][3]float64) string {
	if math.IsNaN(t) {
		t = 0
	}
	t = math.Max(0, math.Min(1, t))
	pos := t * float64(len(stops)-1)
	i := int(pos)
	if i >= len(stops)-1 {
		i = len(stops) - 2
	}
	f := pos - float64(i)
	var c [3]int
	for k := range 3 {
		c[k] = int(math.Round(stops[i][k] + f*(stops[i+1][k]-stops[i][k])))
	}
	return "#" + hex2(c[0]) + hex2(c[1]) + hex2(c[2])
}

func hex2(v int) string {
	s := strconv.FormatInt(int64(v), 16)
	if len(s) < 2 {
		s = "0" + s
	}
	return s
}

// Layout of the scale score chart: one panel per scale, personas as rows.
const (
	scaleRowH   = 18.0
	scalePanelW = 170.0
	scaleGap    = 18.0
	scaleLabelW = 90.0
	scaleTop    = 34.0
)

// scaleChart shows, for one model, every persona's score on every scale: one dot per seed and a bar from the
// lowest to the highest seed.
type scaleChart struct {
	Model         string
	Width, Height float64
	Panels        []scalePanel
	Personas      []label
	Seeds         []seedLegend
}

type label struct {
	X, Y float64
	Text string
}

type scalePanel struct {
	Title  string
	X      float64
	Ticks  []tick
	Rows   []scaleRow
	Bottom float64
}

type tick struct {
	X    float64
	Text string
}

type scaleRow struct {
	Y, X1, X2 float64
	Dots      []dot
}

type dot struct {
	X     float64
	Fill  string
	Title string
}

// seedColours tell seeds apart in the scale chart (cycled past eight seeds).
var seedColours = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// seedLegend is one seed's colour.
type seedLegend struct {
	Seed string
	Fill string
}

func scaleCharts(a *results.Analysis) []scaleChart {
	s := a.Spec
	nk := len(a.ScaleIDs)
	if nk == 0 {
		return nil
	}
	lo, hi := scoreRange(a)
	if hi <= lo {
		hi = lo + 1
	}
	xOf := func(panelX, v float64) float64 { return panelX + 8 + (v-lo)/(hi-lo)*(scalePanelW-16) }
	var out []scaleChart
	for m := range s.Models {
		c := scaleChart{Model: s.Models[m].ID}
		for sd, seed := range s.Seeds {
			c.Seeds = append(c.Seeds, seedLegend{Seed: strconv.FormatInt(seed, 10), Fill: seedColours[sd%len(seedColours)]})
		}
		bottom := scaleTop + float64(len(s.Personas))*scaleRowH
		c.Width = scaleLabelW + float64(nk)*(scalePanelW+scaleGap)
		c.Height = bottom + 26
		for p, pe := range s.Personas {
			c.Personas = append(c.Personas, label{X: scaleLabelW - 8, Y: scaleTop + float64(p)*scaleRowH + scaleRowH/2 + 4, Text: pe.ID})
		}
		for k := range a.ScaleIDs {
			px := scaleLabelW + float64(k)*(scalePanelW+scaleGap)
			title := a.ScaleIDs[k]
			if a.ScaleNames[k] != "" {
				title = a.ScaleNames[k]
			}
			panel := scalePanel{Title: title, X: px, Bottom: bottom}
			for v := math.Ceil(lo); v <= hi; v++ {
				panel.Ticks = append(panel.Ticks, tick{X: xOf(px, v), Text: strconv.FormatFloat(v, 'g', -1, 64)})
			}
			for p := range s.Personas {
				row := scaleRow{Y: scaleTop + float64(p)*scaleRowH + scaleRowH/2}
				first := true
				for sd := range s.Seeds {
					sc := a.ScaleScore(m, p, sd, k)
					if sc.Mean == nil {
						continue
					}
					x := xOf(px, *sc.Mean)
					row.Dots = append(row.Dots, dot{X: x, Fill: seedColours[sd%len(seedColours)], Title: s.Personas[p].ID + " · " + title + " · seed " +
						strconv.FormatInt(s.Seeds[sd], 10) + ": " + strconv.FormatFloat(*sc.Mean, 'f', 2, 64)})
					if first || x < row.X1 {
						row.X1 = x
					}
					if first || x > row.X2 {
						row.X2 = x
					}
					first = false
				}
				panel.Rows = append(panel.Rows, row)
			}
			c.Panels = append(c.Panels, panel)
		}
		out = append(out, c)
	}
	return out
}

// Layout of the heatmap.
const (
	heatCell   = 15.0
	heatLeft   = 64.0
	heatTop    = 78.0
	heatLegend = 190.0
)

// heatmap shows, for one model, each persona's score on each item (reverse-keyed items reversed), averaged over
// seeds; items are grouped by scale.
type heatmap struct {
	Model         string
	Width, Height float64
	Cells         []heatCellView
	Columns       []label
	Rows          []label
	Groups        []heatGroup
	Legend        []heatLegendStop
	LegendX       float64
	LegendLo      string
	LegendHi      string
}

type heatCellView struct {
	X, Y    float64
	Fill    string
	Missing bool
	Title   string
}

type heatGroup struct {
	Y1, Y2, X float64
	Text      string
}

type heatLegendStop struct {
	Y    float64
	Fill string
}

func heatmaps(a *results.Analysis) []heatmap {
	s := a.Spec
	lo, hi := scoreRange(a)
	if hi <= lo {
		hi = lo + 1
	}
	// Items in scale order, then items without a scale.
	var order []int
	for k := range a.ScaleIDs {
		order = append(order, a.ScaleItems(k)...)
	}
	for it, k := range a.ItemScale {
		if k < 0 {
			order = append(order, it)
		}
	}
	np := len(s.Personas)
	var out []heatmap
	for m := range s.Models {
		h := heatmap{Model: s.Models[m].ID, LegendLo: strconv.FormatFloat(lo, 'g', -1, 64), LegendHi: strconv.FormatFloat(hi, 'g', -1, 64)}
		gridW := float64(np) * heatCell
		h.Width = heatLeft + gridW + heatLegend
		h.Height = heatTop + float64(len(order))*heatCell + 10
		for p, pe := range s.Personas {
			h.Columns = append(h.Columns, label{X: heatLeft + float64(p)*heatCell + heatCell/2 + 4, Y: heatTop - 6, Text: pe.ID})
		}
		groupStart, groupScale := 0, -2
		closeGroup := func(end int) {
			if groupScale == -2 || end == groupStart {
				return
			}
			text := "(no scale)"
			if groupScale >= 0 {
				text = a.ScaleIDs[groupScale]
			}
			h.Groups = append(h.Groups, heatGroup{Y1: heatTop + float64(groupStart)*heatCell + 1,
				Y2: heatTop + float64(end)*heatCell - 1, X: heatLeft - 44, Text: text})
		}
		for row, it := range order {
			if k := a.ItemScale[it]; k != groupScale {
				closeGroup(row)
				groupStart, groupScale = row, k
			}
			item := s.Questionnaire.Items[it]
			y := heatTop + float64(row)*heatCell
			h.Rows = append(h.Rows, label{X: heatLeft - 4, Y: y + heatCell - 4, Text: item.ID})
			for p := range s.Personas {
				mean, n := a.HeatMean(m, it, p)
				cell := heatCellView{X: heatLeft + float64(p)*heatCell, Y: y}
				rev := ""
				if item.Reversed {
					rev = " (reverse-keyed)"
				}
				if n == 0 {
					cell.Missing = true
					cell.Title = item.ID + rev + " · " + s.Personas[p].ID + ": no score"
				} else {
					cell.Fill = ramp((mean-lo)/(hi-lo), viridis)
					cell.Title = item.ID + rev + " · " + s.Personas[p].ID + ": " + strconv.FormatFloat(mean, 'f', 2, 64) +
						" (" + strconv.Itoa(n) + " of " + strconv.Itoa(len(s.Seeds)) + " seeds) · " + item.Text
				}
				h.Cells = append(h.Cells, cell)
			}
		}
		closeGroup(len(order))
		h.LegendX = heatLeft + gridW + 24
		for i := range 20 {
			t := 1 - float64(i)/19
			h.Legend = append(h.Legend, heatLegendStop{Y: heatTop + float64(i)*8, Fill: ramp(t, viridis)})
		}
		out = append(out, h)
	}
	return out
}

// Layout of histograms.
const (
	histW      = 520.0
	histH      = 180.0
	histLeft   = 48.0
	histBottom = 34.0
	histTop    = 22.0
)

// histogram is a bar chart of counts per bin.
type histogram struct {
	Title         string
	XLabel        string
	Width, Height float64
	Bars          []bar
	XTicks        []tick
	YTicks        []ytick
	AxisY         float64
	Empty         bool
}

type bar struct {
	X, Y, W, H float64
	Title      string
	Count      int
	Key        string
	// Label is the count written above the bar, when bars are few enough to have room.
	Label string
}

type ytick struct {
	Y    float64
	Text string
}

func histograms(a *results.Analysis) (latency, attempts histogram) {
	lat := a.Latency
	latency = histogram{Title: "Call latency", XLabel: "latency (ms)"}
	attempts = histogram{Title: "Attempts per cell", XLabel: "requests sent for the cell, over all executions (1 = answered at once)"}
	if lat.Ran == 0 {
		latency.Empty, attempts.Empty = true, true
		return latency, attempts
	}
	top := lat.MaxMS
	width := niceStep(top / 20)
	nb := int(top/width) + 1
	counts := lat.Bins(width, nb)
	labels := make([]string, nb)
	for i := range nb {
		labels[i] = strconv.FormatFloat(float64(i)*width, 'g', -1, 64) + "–" + strconv.FormatFloat(float64(i+1)*width, 'g', -1, 64) + " ms"
	}
	latency = bars(latency, counts, labels, func(i int) string { return strconv.FormatFloat(float64(i)*width, 'g', -1, 64) }, "latency")
	maxAtt := len(lat.Attempts)
	acounts := slices.Clone(lat.Attempts)
	alabels := make([]string, maxAtt)
	for i := range maxAtt {
		alabels[i] = strconv.Itoa(i+1) + " attempt"
		if i > 0 {
			alabels[i] += "s"
		}
	}
	attempts = bars(attempts, acounts, alabels, func(i int) string { return strconv.Itoa(i + 1) }, "attempts")
	return latency, attempts
}

// bars lays out counts as bars; tickAt labels the left edge of bin i (attempts label the bar's middle).
func bars(h histogram, counts []int, labels []string, tickAt func(int) string, key string) histogram {
	h.Width, h.Height = histW, histH
	h.AxisY = histH - histBottom
	plotW := histW - histLeft - 10
	plotH := h.AxisY - histTop
	top := 0
	for _, c := range counts {
		top = max(top, c)
	}
	yMax := niceStep(float64(top)/4) * 4
	if yMax < float64(top) {
		yMax = float64(top)
	}
	if yMax == 0 {
		yMax = 1
	}
	bw := plotW / float64(len(counts))
	for i, c := range counts {
		bh := float64(c) / yMax * plotH
		h.Bars = append(h.Bars, bar{X: histLeft + float64(i)*bw + 1, Y: h.AxisY - bh, W: math.Max(bw-2, 1), H: bh,
			Title: labels[i] + ": " + thousands(c), Count: c, Key: key + "/" + strconv.Itoa(i)})
		if len(counts) <= 12 {
			h.Bars[i].Label = thousands(c)
		}
	}
	every := max(1, len(counts)/10)
	for i := 0; i < len(counts); i += every {
		x := histLeft + float64(i)*bw
		if key == "attempts" {
			x += bw / 2
		}
		h.XTicks = append(h.XTicks, tick{X: x, Text: tickAt(i)})
	}
	for i := 0; i <= 4; i++ {
		v := yMax * float64(i) / 4
		h.YTicks = append(h.YTicks, ytick{Y: h.AxisY - v/yMax*plotH, Text: thousands(int(math.Round(v)))})
	}
	return h
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceStep(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
