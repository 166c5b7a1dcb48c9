package results

import (
	"bytes"
	"math"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
)

// TestCompareModes holds modes.csv's numbers on a hand-computed example (model m1, two personas):
//
//	item q1 (options 1, 2, 3, all scored)
//	  p1: text (0, 1, 0), logprobs (.2, .5, .3), verbalized (.5, .5, 0)
//	  p2: text (1, 0, 0), logprobs (.1, .1, .8), no verbalized distribution
//	text–logprobs: W1 p1 |0−.2|+|1−.7| = .5, p2 |1−.1|+|1−.2| = 1.7, mean 1.1; JSD p1 .3112781, p2 .7582766,
//	  mean .5347774; most likely 2 = 2 for p1, 1 ≠ 3 for p2: 1 of 2 agree.
//	text–verbalized (p1 only): W1 .5, JSD .3112781; verbalized's top is a tie, so no persona compares tops.
//	logprobs–verbalized (p1 only): W1 .3+.3 = .6, JSD .1979078.
//	item q3 (options y, n, dk; dk ignored for scale)
//	  p1: text (1, 0, 0), verbalized (.5, 0, .5): W1 over y, n renormalised is 0; JSD over all three .3112781.
func TestCompareModes(t *testing.T) {
	s := testSpec()
	T, L, V := experiment.AnswerText, experiment.AnswerLogprobs, experiment.AnswerVerbalized
	dists := []ModeDist{
		{0, 0, 0, T, []float64{0, 1, 0}}, {0, 0, 0, L, []float64{.2, .5, .3}}, {0, 0, 0, V, []float64{.5, .5, 0}},
		{0, 0, 1, T, []float64{1, 0, 0}}, {0, 0, 1, L, []float64{.1, .1, .8}}, {0, 0, 1, V, nil},
		{0, 2, 0, V, []float64{.5, 0, .5}}, {0, 2, 0, T, []float64{1, 0, 0}},
	}
	rows := CompareModes(s, dists)
	type want struct {
		item    string
		a, b    experiment.AnswerMode
		n       int
		w1, jsd float64
		top     int
		agree   float64 // NaN: nil
	}
	nan := math.NaN()
	wants := []want{
		{"q1", T, L, 2, 1.1, 0.5347773908261503, 2, 0.5},
		{"q1", T, V, 1, 0.5, 0.31127812445913283, 0, nan},
		{"q1", L, V, 1, 0.6, 0.19790780100167915, 0, nan},
		{"q3", T, V, 1, 0, 0.31127812445913283, 0, nan},
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d rows %+v, want %d", len(rows), rows, len(wants))
	}
	near := func(p *float64, w float64) bool {
		if math.IsNaN(w) {
			return p == nil
		}
		return p != nil && math.Abs(*p-w) < 1e-12
	}
	for i, w := range wants {
		r := rows[i]
		if r.Model != "m1" || r.ItemID != w.item || r.ModeA != w.a || r.ModeB != w.b || r.Personas != w.n ||
			!near(r.W1, w.w1) || !near(r.JSD, w.jsd) || r.TopCompared != w.top || !near(r.TopAgree, w.agree) {
			t.Errorf("row %d = %+v (w1 %v jsd %v agree %v); want %+v", i, r, deref(r.W1), deref(r.JSD), deref(r.TopAgree), w)
		}
	}
	var b bytes.Buffer
	if err := WriteModes(&b, "run", rows[:1]); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "run_id,model,item_id,scale,mode_a,mode_b,n_personas,w1,jsd,n_top_compared,top_agree\n"+
		"run,m1,q1,E,text,logprobs,2,"+Stat(rows[0].W1)+","+Stat(rows[0].JSD)+",2,0.5\n"; got != want {
		t.Errorf("modes.csv\n%s\nwant\n%s", got, want)
	}
}

// TestModeSums holds the gathering of the modes' distributions from rows: text the share of the written
// answers over the cells, logprobs the mean of the cells' probabilities, an unparsed cell or one whose
// probabilities come from another source left out.
func TestModeSums(t *testing.T) {
	s := testSpec()
	ms := NewModeSums(s)
	c := experiment.Cell{Model: 0, Item: 0, Persona: 0}
	both := []experiment.AnswerMode{experiment.AnswerText, experiment.AnswerLogprobs}
	ms.Add(c, &Row{Status: store.StatusOK, OptionID: "2", ProbsSource: "logprobs", Probs: []float64{.2, .5, .3}}, both)
	ms.Add(c, &Row{Status: store.StatusOK, OptionID: "3", ProbsSource: "logprobs", Probs: []float64{.4, .5, .1}}, both)
	ms.Add(c, &Row{Status: store.StatusUnparsed}, both)
	ms.Add(c, &Row{Status: store.StatusOK, OptionID: "1", ProbsSource: "verbalized", Probs: []float64{1, 0, 0}},
		[]experiment.AnswerMode{experiment.AnswerLogprobs})
	got := ms.Dists()
	if len(got) != 2 || got[0].Mode != experiment.AnswerText || got[1].Mode != experiment.AnswerLogprobs {
		t.Fatalf("dists %+v; want text then logprobs", got)
	}
	for i, want := range [][]float64{{0, .5, .5}, {.3, .5, .2}} {
		for k := range want {
			if math.Abs(got[i].P[k]-want[k]) > 1e-12 {
				t.Errorf("%s: %v, want %v", got[i].Mode, got[i].P, want)
				break
			}
		}
	}
}
