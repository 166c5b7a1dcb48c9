package report

import (
	"math"
	"testing"
)

// TestWhiskersFollowTheirNumbers: on the bfi analysis every figure with an interval has a whisker in its box,
// and within one column the whiskers are placed on one linear axis: each position is
// the same affine function of the value it draws, for every row.
func TestWhiskersFollowTheirNumbers(t *testing.T) {
	spec, recs := bfiRun(t)
	r, err := Analyze(t.Context(), recs, spec, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	v := build(r)
	checked := 0
	// check holds the figures of one axis, with their rows' baselines and split halves, to one increasing affine map
	// x = a + b·value inside the whisker's padding.
	check := func(what string, figs []marked) {
		t.Helper()
		var pts [][2]float64 // (value, x)
		for _, f := range figs {
			if f.Lo == nil || f.Hi == nil || f.V == nil {
				if f.W != nil {
					t.Errorf("%s: a whisker without an interval", what)
				}
				continue
			}
			if f.W == nil {
				t.Errorf("%s: interval [%g, %g] without a whisker", what, *f.Lo, *f.Hi)
				continue
			}
			w := f.W
			// A percentile interval need not hold its estimate (ω's can lie beside it), so the dot may lie
			// outside the ends; all three lie in the box.
			if w.X1 > w.X2+1e-9 || min(w.X1, w.X) < 0 || max(w.X2, w.X) > whiskerWidth {
				t.Errorf("%s: whisker %+v of %g [%g, %g] out of order or out of its box", what, *w, *f.V, *f.Lo, *f.Hi)
			}
			pairs := [][2]float64{{*f.Lo, w.X1}, {*f.V, w.X}, {*f.Hi, w.X2}}
			for _, m := range []struct{ v, x *float64 }{{f.base, w.Base}, {f.split, w.Split}} {
				if (m.v == nil) != (m.x == nil) {
					t.Errorf("%s: a baseline or split-half tick without its value, or the other way round", what)
				} else if m.v != nil {
					pairs = append(pairs, [2]float64{*m.v, *m.x})
				}
			}
			for _, p := range pairs {
				if !math.IsInf(p[0], 0) {
					pts = append(pts, p)
				}
			}
			checked++
		}
		if len(pts) < 2 {
			return
		}
		lo, hi := pts[0], pts[0]
		for _, p := range pts {
			if p[0] < lo[0] {
				lo = p
			}
			if p[0] > hi[0] {
				hi = p
			}
		}
		if hi[0] == lo[0] {
			return
		}
		b := (hi[1] - lo[1]) / (hi[0] - lo[0])
		if b <= 0 {
			t.Errorf("%s: the axis runs %g px per unit, want an increasing one", what, b)
		}
		for _, p := range pts {
			if p[1] < whiskerPad-1e-9 || p[1] > whiskerWidth-whiskerPad+1e-9 {
				t.Errorf("%s: %g drawn at %.3f, outside the padding", what, p[0], p[1])
			}
			if want := lo[1] + b*(p[0]-lo[0]); math.Abs(p[1]-want) > 1e-9 {
				t.Errorf("%s: %g drawn at %.6f, the axis puts it at %.6f", what, p[0], p[1], want)
			}
		}
	}
	for _, d := range v.Dists {
		for _, g := range d.Groups {
			byAxis := map[string][]marked{}
			for _, row := range g.Rows {
				for c, val := range row.Vals {
					col := g.Cols[c]
					k := col.Axis
					if k == "" {
						k = col.Key
					}
					byAxis[k] = append(byAxis[k], marked{val.Model, val.Uniform.V, val.Split.V}, marked{figure: val.Perfect})
				}
			}
			for k, figs := range byAxis {
				check(g.Key+" "+k, figs)
			}
			scaleAxis := map[string][]marked{}
			for _, sc := range g.Scales {
				for c, val := range sc.Vals {
					scaleAxis[g.ScaleCols[c].Key] = append(scaleAxis[g.ScaleCols[c].Key], marked{val.Model, val.Uniform.V, val.Split.V},
						marked{figure: val.Perfect})
				}
			}
			for k, figs := range scaleAxis {
				check(g.Key+" scales "+k, figs)
			}
			var alpha, omega []marked
			for _, s := range g.Scales {
				alpha = append(alpha, marked{figure: s.ModelAlpha}, marked{figure: s.HumanAlpha})
				omega = append(omega, marked{figure: s.ModelOmega}, marked{figure: s.HumanOmega})
			}
			check(g.Key+" α", alpha)
			check(g.Key+" ω", omega)
		}
	}
	for _, vt := range v.Validity {
		for _, sec := range vt.Sections {
			for _, rows := range [][]validityRow{sec.Rows, sec.ItemRows} {
				var sides, value []marked
				for _, r := range rows {
					sides = append(sides, marked{figure: r.Model}, marked{figure: r.Human})
					value = append(value, marked{figure: r.Value})
				}
				check(sec.Statistic+" sides", sides)
				check(sec.Statistic+" value", value)
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d whiskers checked", checked)
	}
}

// marked is a figure with the baseline and split halves its whisker marks (nil for none).
type marked struct {
	figure
	base, split *float64
}
