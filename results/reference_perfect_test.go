package results

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
)

// exportReference exports recs of spec s with the given bootstrap and returns reference.csv's and
// reference_scales.csv's lines as maps from column to cell.
func exportReference(t *testing.T, s *experiment.Spec, recs []store.Record, samples int, seed int64) (rows, scales []map[string]string) {
	t.Helper()
	s.Analysis.Bootstrap = experiment.BootstrapSettings{Samples: &samples, Seed: &seed}
	dir := t.TempDir()
	if _, err := Export(context.Background(), sliceSource{recs: recs}, s, "r", dir, 0); err != nil {
		t.Fatal(err)
	}
	lines := func(name string) []map[string]string {
		col, recs := readOutput(t, dir, name)
		var out []map[string]string
		for _, r := range recs {
			m := map[string]string{}
			for c, i := range col {
				m[c] = r[i]
			}
			out = append(out, m)
		}
		return out
	}
	return lines(ReferenceFile), lines(ReferenceScalesFile)
}

// lineOf is the line of lines whose cells equal want's.
func lineOf(t *testing.T, lines []map[string]string, want map[string]string) map[string]string {
	t.Helper()
	for _, l := range lines {
		match := true
		for c, v := range want {
			if l[c] != v {
				match = false
			}
		}
		if match {
			return l
		}
	}
	t.Fatalf("no line %v", want)
	return nil
}

// cell reads a numeric cell; ok is false when it is empty or missing.
func cell(l map[string]string, c string) (float64, bool) {
	v, err := strconv.ParseFloat(l[c], 64)
	return v, err == nil
}

// truth is the exact expectation of each figure of the perfect model: the mean over every way m answers can
// fall on the options (multinomial probabilities from q) of the figure computed here by its definition, over
// the outcomes that define it. scored says which options are scored.
func truth(q []float64, scored []bool, m int) map[string]float64 {
	sq, total := scoredOf(q, scored)
	for k := range sq {
		sq[k] /= total
	}
	K := len(sq)
	sum, mass := map[string]float64{}, map[string]float64{}
	var rec func(k, left int, counts []int)
	rec = func(k, left int, counts []int) {
		if k == len(q)-1 {
			counts[k] = left
			prob := math.Gamma(float64(m) + 1)
			for i, c := range counts {
				prob *= math.Pow(q[i], float64(c)) / math.Gamma(float64(c)+1)
			}
			if prob == 0 {
				return
			}
			p := make([]float64, len(q))
			for i, c := range counts {
				p[i] = float64(c) / float64(m)
			}
			add := func(name string, v float64) { sum[name] += prob * v; mass[name] += prob }
			var jsd float64
			for i := range p {
				mid := (p[i] + q[i]) / 2
				if p[i] > 0 {
					jsd += p[i] * math.Log2(p[i]/mid) / 2
				}
				if q[i] > 0 {
					jsd += q[i] * math.Log2(q[i]/mid) / 2
				}
			}
			add("jsd", jsd)
			sp, smass := scoredOf(p, scored)
			if smass == 0 {
				return // no scored answer: no ordinal figure
			}
			var w1, fp, fq, tvd, tvdU float64
			for i := range sp {
				sp[i] /= smass
				tvd += math.Abs(sp[i]-sq[i]) / 2
				tvdU += math.Abs(1/float64(K)-sq[i]) / 2
				if i < K-1 {
					fp += sp[i]
					fq += sq[i]
					w1 += math.Abs(fp - fq)
				}
			}
			add("w1", w1)
			add("alignment", 1-w1/float64(K-1))
			add("tvd", tvd)
			if tvdU > 0 {
				add("simbench", 100*(1-tvd/tvdU))
			}
			return
		}
		for c := 0; c <= left; c++ {
			counts[k] = c
			rec(k+1, left-c, counts)
		}
	}
	rec(0, m, make([]int, len(q)))
	out := map[string]float64{}
	for name, s := range sum {
		out[name] = s / mass[name]
	}
	return out
}

// scoredOf is p's entries at the scored options, and their sum.
func scoredOf(p []float64, scored []bool) (out []float64, mass float64) {
	for k, v := range p {
		if scored[k] {
			out = append(out, v)
			mass += v
		}
	}
	return out, mass
}

// numberedPersonas are n personas p0 … p(n−1) without attributes.
func numberedPersonas(n int) []experiment.Persona {
	out := make([]experiment.Persona, n)
	for i := range out {
		out[i] = experiment.Persona{ID: "p" + strconv.Itoa(i)}
	}
	return out
}

// TestPerfectModelFloor: the perfect model of a reference.csv line answers as many times as the line's model
// distribution pools cells, each answer drawn from the humans' distribution; its figures' means over 20,000
// draws are the exact expectations worked out here by enumerating every outcome (within 5 standard errors),
// with an interval around them. referenceSpec's q1 (everyone: 3 cells, humans 2, 1, 1) and q3 (2 cells, humans
// y 1, n 1, don't know 2, which is not scored: two "don't know" answers leave the ordinal figures undefined,
// and the humans answer y and n evenly, so SimBench has no floor). A group whose humans all give one answer has
// a floor of 0 exactly; a model without cells has none. reference_scales.csv's floors are the items' means.
func TestPerfectModelFloor(t *testing.T) {
	const draws = 20000
	rows, scales := exportReference(t, referenceSpec(t), referenceRecords(), draws, 3)
	for _, c := range []struct {
		item, group string
		q           []float64
		scored      []bool
		m           int
	}{
		{"q1", "all", []float64{0.5, 0.25, 0.25}, []bool{true, true, true}, 3},
		{"q3", "all", []float64{0.25, 0.25, 0.5}, []bool{true, true, false}, 2},
	} {
		l := lineOf(t, rows, map[string]string{"model": "m1", "item_id": c.item, "group": c.group})
		if l["n_cells"] != strconv.Itoa(c.m) {
			t.Fatalf("%s %s: n_cells %s, want %d", c.item, c.group, l["n_cells"], c.m)
		}
		want := truth(c.q, c.scored, c.m)
		for _, f := range []string{"w1", "alignment", "tvd", "simbench", "jsd"} {
			got, ok := cell(l, "perfect_"+f)
			w, defined := want[f]
			if !defined {
				if ok || l["perfect_"+f+"_lo"] != "" {
					t.Errorf("%s %s: perfect_%s %q, want empty (undefined on every outcome)", c.item, c.group, f, l["perfect_"+f])
				}
				continue
			}
			lo, okLo := cell(l, "perfect_"+f+"_lo")
			hi, okHi := cell(l, "perfect_"+f+"_hi")
			// A figure's spread over the outcomes is at most its range; 5 standard errors of the mean of 20,000.
			tol := 5 * map[string]float64{"w1": 2, "alignment": 1, "tvd": 1, "simbench": 200, "jsd": 1}[f] / math.Sqrt(draws)
			if !ok || math.Abs(got-w) > tol || !okLo || !okHi || lo > got || got > hi || lo == hi {
				t.Errorf("%s %s: perfect_%s %s [%s, %s], want the exact expectation %.6f ± %.4f inside a proper interval",
					c.item, c.group, f, l["perfect_"+f], l["perfect_"+f+"_lo"], l["perfect_"+f+"_hi"], w, tol)
			}
		}
	}
	// sex=f: the humans all answer 1 and every draw is theirs.
	l := lineOf(t, rows, map[string]string{"model": "m1", "item_id": "q1", "group": "sex=f"})
	for f, want := range map[string]string{"w1": "0", "alignment": "1", "tvd": "0", "simbench": "100", "jsd": "0"} {
		for _, c := range []string{"perfect_" + f, "perfect_" + f + "_lo", "perfect_" + f + "_hi"} {
			if l[c] != want {
				t.Errorf("q1 sex=f: %s %q, want %s", c, l[c], want)
			}
		}
	}
	if l := lineOf(t, rows, map[string]string{"model": "m2", "item_id": "q1", "group": "all"}); l["perfect_w1"] != "" || l["perfect_jsd_lo"] != "" {
		t.Errorf("m2 has no cells, yet a floor: %v", l)
	}
	// The line over every item averages the items' floors (q1 and q3; q2 has no humans).
	all := lineOf(t, scales, map[string]string{"model": "m1", "scale": ScaleOverall, "group": "all"})
	for _, f := range []string{"w1", "alignment", "tvd"} {
		q1, _ := cell(lineOf(t, rows, map[string]string{"model": "m1", "item_id": "q1", "group": "all"}), "perfect_"+f)
		q3, _ := cell(lineOf(t, rows, map[string]string{"model": "m1", "item_id": "q3", "group": "all"}), "perfect_"+f)
		got, ok := cell(all, "perfect_"+f)
		lo, okLo := cell(all, "perfect_"+f+"_lo")
		hi, okHi := cell(all, "perfect_"+f+"_hi")
		if !ok || math.Abs(got-(q1+q3)/2) > 1e-12 || !okLo || !okHi || lo > got || got > hi {
			t.Errorf("all items: perfect_%s %s [%s, %s], want the mean of q1's and q3's, %v, inside its interval", f,
				all["perfect_"+f], all["perfect_"+f+"_lo"], all["perfect_"+f+"_hi"], (q1+q3)/2)
		}
	}
	if v := lineOf(t, scales, map[string]string{"model": "m1", "scale": "E", "group": "all"})["perfect_simbench"]; v == "" {
		t.Error("scale E (q1): no SimBench floor")
	}
}

// TestPerfectModelCoverage is the floor's known truth: a model whose written answers are drawn from the
// humans' own distribution (20 personas × 2 seeds = 40 answers to an item, the humans' counts 30, 50, 20) lands
// inside the floor's interval on each figure in most of 60 replications (seeded: the same replications on every
// run; 95 % expected), and its W1 averaged over the replications is the floor's mean within sampling error.
// The split-half distance of 100 humans (halves of 50) is not such a bound: it is printed for the record.
func TestPerfectModelCoverage(t *testing.T) {
	s := testSpec()
	s.Models = s.Models[:1]
	s.Personas = numberedPersonas(20)
	s.Reference = &experiment.Reference{Form: experiment.ReferenceCountsForm,
		Counts: []experiment.ReferenceCounts{{Item: "q1", Group: "all", Counts: []int{30, 50, 20}}}}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	q := []float64{0.3, 0.5, 0.2}
	const reps = 60
	inside := map[string]int{}
	var modelW1, floorW1, split float64
	for rep := range reps {
		r := rand.New(rand.NewPCG(uint64(rep), 99))
		var recs []store.Record
		for sd := range s.Seeds {
			for p := range s.Personas {
				u, k := r.Float64(), 0
				for c := q[0]; u >= c && k < 2; c += q[k] {
					k++
				}
				recs = append(recs, ok(s.CellIndex(0, sd, 0, p, 0), s.Questionnaire.Options.Options[k].ID))
			}
		}
		rows, _ := exportReference(t, s, recs, 400, int64(rep)+1)
		l := lineOf(t, rows, map[string]string{"item_id": "q1", "group": "all"})
		if l["n_cells"] != "40" {
			t.Fatalf("n_cells %s, want 40", l["n_cells"])
		}
		for _, f := range []string{"w1", "alignment", "tvd", "simbench", "jsd"} {
			v, _ := cell(l, f)
			lo, ok1 := cell(l, "perfect_"+f+"_lo")
			hi, ok2 := cell(l, "perfect_"+f+"_hi")
			if ok1 && ok2 && lo <= v && v <= hi {
				inside[f]++
			}
		}
		w, _ := cell(l, "w1")
		fw, _ := cell(l, "perfect_w1")
		sh, _ := cell(l, "split_half_w1")
		modelW1, floorW1, split = modelW1+w/reps, floorW1+fw/reps, split+sh/reps
	}
	for _, f := range []string{"w1", "alignment", "tvd", "simbench", "jsd"} {
		if inside[f] < reps*85/100 {
			t.Errorf("%s: the model drawn from the humans' distribution is inside the floor's interval in %d of %d replications, want most (95 %% expected)",
				f, inside[f], reps)
		}
	}
	// The W1 of 40 answers drawn from q has an SD of about 0.12: the mean of 60 within 0.06 (4 standard errors).
	if math.Abs(modelW1-floorW1) > 0.06 {
		t.Errorf("mean W1 of the drawn model %.4f, of the floor %.4f: the floor is not the drawn model's expectation", modelW1, floorW1)
	}
	t.Logf("mean W1: model drawn from the humans %.4f, perfect-model floor %.4f, split halves of the 100 humans %.4f", modelW1, floorW1, split)
}
