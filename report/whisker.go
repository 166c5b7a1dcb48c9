package report

import "math"

// whiskerWidth is the width in pixels of a figure's whisker (template "fig"); the template's svg has it.
const whiskerWidth = 72

// whisker is a figure's 95 % interval drawn on the axis of its column: X1 to X2 the interval, X the figure,
// Base and Split (nil for none) the row's uniform baseline and humans' split-half distance on the same axis. Positions are
// pixels in [whiskerPad, whiskerWidth − whiskerPad]. An infinite bound is drawn to the edge without its cap
// (Open1, Open2).
type whisker struct {
	X1, X2, X    float64
	Open1, Open2 bool
	Base, Split  *float64
}

// whiskerPad keeps a whisker's end caps and dot inside its svg.
const whiskerPad = 3

// axis is the range of the figures of one table column (or of columns compared with each other, such as the
// model's and the humans' mean): every whisker placed on it shares the scale, so a reader can compare the rows'
// intervals by eye as well as by their numbers.
type axis struct {
	lo, hi float64
	seen   bool
}

// add widens the axis to every finite value of vs.
func (a *axis) add(vs ...*float64) {
	for _, v := range vs {
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
			continue
		}
		if !a.seen || *v < a.lo {
			a.lo = *v
		}
		if !a.seen || *v > a.hi {
			a.hi = *v
		}
		a.seen = true
	}
}

// addFigure widens the axis to f's value and interval.
func (a *axis) addFigure(f figure) { a.add(f.V, f.Lo, f.Hi) }

// x is v's position on the axis.
func (a *axis) x(v float64) float64 {
	switch {
	case math.IsInf(v, -1):
		return 0
	case math.IsInf(v, 1):
		return whiskerWidth
	}
	span := a.hi - a.lo
	if span <= 0 {
		return whiskerWidth / 2
	}
	return whiskerPad + (v-a.lo)/span*(whiskerWidth-2*whiskerPad)
}

// place sets f's whisker when f has a value and both bounds; base and split (nil for none) are marked on it.
// Every value placed must have been added.
func (a *axis) place(f *figure, base, split *float64) {
	if f.V == nil || f.Lo == nil || f.Hi == nil || !a.seen {
		return
	}
	if math.IsNaN(*f.Lo) || math.IsNaN(*f.Hi) || math.IsInf(*f.V, 0) || math.IsNaN(*f.V) {
		return
	}
	w := &whisker{X1: a.x(*f.Lo), X2: a.x(*f.Hi), X: a.x(*f.V), Open1: math.IsInf(*f.Lo, 0), Open2: math.IsInf(*f.Hi, 0)}
	for _, m := range []struct {
		v   *float64
		dst **float64
	}{{base, &w.Base}, {split, &w.Split}} {
		if m.v != nil && !math.IsNaN(*m.v) {
			x := a.x(*m.v)
			*m.dst = &x
		}
	}
	f.W = w
}

// placeOnOneAxis places the whiskers of figs on one axis spanning them all, without baseline or split halves.
func placeOnOneAxis(figs []*figure) {
	var a axis
	for _, f := range figs {
		a.addFigure(*f)
	}
	for _, f := range figs {
		a.place(f, nil, nil)
	}
}
