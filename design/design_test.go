package design

import (
	"bytes"
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

var update = flag.Bool("update", false, "rewrite testdata/observations.csv and testdata/resamples.csv (then run testdata/make_design.R)")

// Test data: the bootstrap of the R check.
const (
	testSamples = 200
	testSeed    = 7
)

// synthetic draws the observations of the R check. Model m1 is a complete crossing (balanced); model m2 has a
// shuffled order, prompt variants, probabilities, its B items' last option pinned and a tenth of its cells
// missing (unbalanced); model m3 words each item in one variant only, so variant is aliased with item (df 0, as
// R drops it); model m4 shows its options as written only, where no first-position effect is defined. Answers
// lean to the first shown position with probability beta; otherwise they follow a persona × item distribution.
// Scale A's options weigh 1…k; scale B's descend, 10, 8, …, so that weights and scores differ in more than keying.
func synthetic() []Observation {
	r := rand.New(rand.NewPCG(20261203, 1))
	items := []struct {
		id, scale string
		k         int
		reversed  bool
	}{{"a1", "A", 5, false}, {"a2", "A", 5, true}, {"a3", "A", 5, false}, {"b1", "B", 4, false}, {"b2", "B", 4, true}}
	var obs []Observation
	for _, model := range []string{"m1", "m2", "m3", "m4"} {
		orders := []string{string(experiment.OrderAsWritten), string(experiment.OrderReversed)}
		pvs := []string{""}
		switch model {
		case "m2":
			orders = append(orders, string(experiment.OrderShuffled))
			pvs = []string{"pv1", "pv2"}
		case "m4":
			orders = orders[:1]
		}
		for p := 1; p <= 10; p++ {
			persona := fmt.Sprintf("p%02d", p)
			lean := r.Float64()
			for _, it := range items {
				centre := lean*float64(it.k-1) + r.NormFloat64()*0.5
				weights := make([]float64, it.k)
				for c := range weights {
					weights[c] = float64(c + 1)
					if it.scale == "B" {
						weights[c] = float64(10 - 2*c)
					}
				}
				pin := -1
				if model == "m2" && it.scale == "B" {
					pin = it.k - 1
				}
				for _, variant := range []string{"v1", "v2"} {
					if model == "m3" && (variant == "v1") != (it.id == "a1" || it.id == "b1") {
						continue
					}
					for _, pv := range pvs {
						for _, order := range orders {
							for _, seed := range []int64{1, 2} {
								if model != "m1" && r.Float64() < 0.1 {
									continue
								}
								c := cell{model: model, scale: it.scale, item: it.id, persona: persona, seed: seed,
									order: order, variant: variant, pv: pv, weights: weights, pin: pin,
									reversed: it.reversed, probs: model == "m2"}
								obs = append(obs, c.draw(r, centre, 0.25))
							}
						}
					}
				}
			}
		}
	}
	return obs
}

// cell is one cell of synthetic: where it is, its options' weights (questionnaire order), the option pinned at
// its place (-1: none), and whether it has probabilities.
type cell struct {
	model, scale, item, persona string
	seed                        int64
	order, variant, pv          string
	weights                     []float64
	pin                         int
	reversed, probs             bool
}

// draw makes the cell's observation: with probability beta the answer is the option shown first, otherwise an
// option drawn around centre (canonical index). With probs it adds a pmf centred on the answer and its
// expected weight.
func (cl cell) draw(r *rand.Rand, centre, beta float64) Observation {
	k := len(cl.weights)
	var free []int
	for i := range k {
		if i != cl.pin {
			free = append(free, i)
		}
	}
	moved := slices.Clone(free)
	switch cl.order {
	case string(experiment.OrderReversed):
		slices.Reverse(moved)
	case string(experiment.OrderShuffled):
		r.Shuffle(len(moved), func(i, j int) { moved[i], moved[j] = moved[j], moved[i] })
	}
	shown := make([]int, k) // shown[pos] = canonical index
	for i := range shown {
		shown[i] = i
	}
	for i, pos := range free {
		shown[pos] = moved[i]
	}
	var c int
	if r.Float64() < beta {
		c = shown[0]
	} else {
		c = min(k-1, max(0, int(math.Round(centre+r.NormFloat64()))))
	}
	lo, hi := slices.Min(cl.weights), slices.Max(cl.weights)
	score := cl.weights[c]
	if cl.reversed {
		score = lo + hi - score
	}
	o := Observation{Model: cl.model, Scale: cl.scale, Item: cl.item, Persona: cl.persona, Seed: cl.seed,
		Order: cl.order, Variant: cl.variant, PromptVariant: cl.pv, Position: slices.Index(shown, c) + 1, K: k,
		Answer: c, First: shown[0], Score: score, Weight: cl.weights[c]}
	if cl.probs {
		w := make([]float64, k)
		s := 0.5 + r.Float64()
		var sum, e float64
		for j := range w {
			w[j] = math.Exp(-math.Abs(float64(j-c)) / s)
			sum += w[j]
		}
		for j := range w {
			e += w[j] / sum * cl.weights[j]
		}
		o.ExpectedWeight = &e
	}
	return o
}

var obsHeader = []string{"model", "scale", "item", "persona", "seed", "order", "variant", "prompt_variant",
	"position", "k", "answer", "first", "score", "weight", "expected_weight"}

func writeObservations(t *testing.T, path string, obs []Observation) {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	cw.Write(obsHeader)
	for _, o := range obs {
		cw.Write([]string{o.Model, o.Scale, o.Item, o.Persona, strconv.FormatInt(o.Seed, 10), o.Order, o.Variant,
			o.PromptVariant, strconv.Itoa(o.Position), strconv.Itoa(o.K), strconv.Itoa(o.Answer), strconv.Itoa(o.First),
			num(o.Score), num(o.Weight), Num(o.ExpectedWeight)})
	}
	cw.Flush()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readCSV(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs[0], recs[1:]
}

func parseF(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func readObservations(t *testing.T, path string) []Observation {
	t.Helper()
	_, recs := readCSV(t, path)
	obs := make([]Observation, len(recs))
	for i, r := range recs {
		seed, _ := strconv.ParseInt(r[4], 10, 64)
		pos, _ := strconv.Atoi(r[8])
		k, _ := strconv.Atoi(r[9])
		answer, _ := strconv.Atoi(r[10])
		first, _ := strconv.Atoi(r[11])
		o := Observation{Model: r[0], Scale: r[1], Item: r[2], Persona: r[3], Seed: seed, Order: r[5], Variant: r[6],
			PromptVariant: r[7], Position: pos, K: k, Answer: answer, First: first, Score: parseF(t, r[12]),
			Weight: parseF(t, r[13])}
		if r[14] != "" {
			o.ExpectedWeight = ptr(parseF(t, r[14]))
		}
		obs[i] = o
	}
	return obs
}

// groups lists the order-bias groups of obs as model, item pairs (AllItems included).
func groups(obs []Observation) map[groupKey]int {
	personas := map[groupKey]map[string]bool{}
	for _, o := range obs {
		for _, k := range []groupKey{{o.Model, o.Item}, {o.Model, AllItems}} {
			if personas[k] == nil {
				personas[k] = map[string]bool{}
			}
			personas[k][o.Persona] = true
		}
	}
	out := map[groupKey]int{}
	for k, p := range personas {
		out[k] = len(p)
	}
	return out
}

func writeResamples(t *testing.T, path string, obs []Observation) {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	cw.Write([]string{"model", "item", "b", "indices"})
	keys := make([]groupKey, 0)
	g := groups(obs)
	for k := range g {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y groupKey) int { return strings.Compare(x.model+"\x00"+x.item, y.model+"\x00"+y.item) })
	for _, k := range keys {
		for bi, idx := range ResampleIndices(testSeed, k.model, k.item, g[k], testSamples) {
			s := make([]string, len(idx))
			for i, v := range idx {
				s[i] = strconv.Itoa(v)
			}
			cw.Write([]string{k.model, k.item, strconv.Itoa(bi + 1), strings.Join(s, ";")})
		}
	}
	cw.Flush()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteInputs writes the R check's inputs with -update; otherwise it checks that the committed resample
// indices are still the ones ResampleIndices draws (so R replays exactly the resamples Go takes).
func TestWriteInputs(t *testing.T) {
	if *update {
		obs := synthetic()
		writeObservations(t, "testdata/observations.csv", obs)
		writeResamples(t, "testdata/resamples.csv", obs)
		return
	}
	obs := readObservations(t, "testdata/observations.csv")
	dir := t.TempDir()
	writeResamples(t, filepath.Join(dir, "resamples.csv"), obs)
	got, _ := os.ReadFile(filepath.Join(dir, "resamples.csv"))
	want, err := os.ReadFile("testdata/resamples.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("ResampleIndices no longer draws the resamples in testdata/resamples.csv; the bootstrap is not reproducible")
	}
}

func analyse(t *testing.T, obs []Observation, boot Bootstrap) *Accumulator {
	t.Helper()
	a := New(boot)
	for _, o := range obs {
		if err := a.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// refValues reads a reference CSV of model, group, stat, value lines into a map keyed "model/group/stat".
func refValues(t *testing.T, path string) map[string]string {
	t.Helper()
	_, recs := readCSV(t, path)
	out := map[string]string{}
	for _, r := range recs {
		out[r[0]+"/"+r[1]+"/"+r[2]] = r[3]
	}
	return out
}

// goOrderBias flattens the order-bias rows into the reference's form: "" for an undefined value.
func goOrderBias(rows []OrderBiasRow) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		key := r.Model + "/" + r.Item + "/"
		for k, s := range r.PositionShares {
			out[key+"share_"+strconv.Itoa(k+1)] = num(s)
		}
		for j, o := range []string{string(experiment.OrderAsWritten), string(experiment.OrderReversed), string(experiment.OrderShuffled)} {
			out[key+"weight_"+o] = Num(r.WeightOrder[j])
			out[key+"expected_weight_"+o] = Num(r.ExpectedWeightOrder[j])
		}
		for name, iv := range map[string]Interval{"weight_diff": r.WeightDiff, "primacy_recency": r.PrimacyRecency,
			"first_effect": r.FirstEffect, "expected_weight_diff": r.ExpectedWeightDiff} {
			out[key+name], out[key+name+"_lo"], out[key+name+"_hi"] = Num(iv.Value), Num(iv.Lo), Num(iv.Hi)
		}
	}
	return out
}

// goVariance flattens the variance rows as the reference has them: df and ss per term, Residuals included;
// terms with df 0 (one level, or aliased with earlier terms) are absent, as R's anova drops them.
func goVariance(rows []VarianceRow) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		key := r.Model + "/" + r.Scale + "/"
		for t, ts := range r.Terms {
			if ts.DF == 0 {
				continue
			}
			out[key+Terms()[t]+"_df"], out[key+Terms()[t]+"_ss"] = strconv.Itoa(ts.DF), num(ts.SS)
		}
		out[key+"Residuals_df"], out[key+"Residuals_ss"] = strconv.Itoa(r.Residual.DF), num(r.Residual.SS)
		out[key+"total_ss"] = num(r.TotalSS)
	}
	return out
}

// compare holds got to want: the same keys, the same empty values, numbers within tol·max(1, |want|).
func compare(t *testing.T, what string, got, want map[string]string, tol float64) {
	t.Helper()
	worst := 0.0
	defer func() { t.Logf("%s: %d values, largest difference %.3g", what, len(want), worst) }()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s %s: missing in Go's output (R: %s)", what, k, w)
			continue
		}
		if (g == "") != (w == "") {
			t.Errorf("%s %s: Go %q, R %q", what, k, g, w)
			continue
		}
		if g == "" {
			continue
		}
		gv, wv := parseF(t, g), parseF(t, w)
		worst = math.Max(worst, math.Abs(gv-wv)/math.Max(1, math.Abs(wv)))
		if math.Abs(gv-wv) > tol*math.Max(1, math.Abs(wv)) {
			t.Errorf("%s %s: Go %s, R %s", what, k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s %s: not in R's reference", what, k)
		}
	}
}

func checkAgainst(t *testing.T, dir string) {
	obs := readObservations(t, "testdata/observations.csv")
	a := analyse(t, obs, Bootstrap{Samples: testSamples, Seed: testSeed})
	compare(t, "order bias", goOrderBias(a.OrderBias()), refValues(t, filepath.Join(dir, "order_bias_ref.csv")), 1e-9)
	vr, err := a.Variance()
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "variance", goVariance(vr), refValues(t, filepath.Join(dir, "variance_ref.csv")), 1e-9)
	bal := map[string]bool{}
	for _, r := range vr {
		bal[r.Model] = bal[r.Model] || r.Balanced
		if r.Model == "m3" && (r.Terms[2].Levels != 2 || r.Terms[2].DF != 0 || r.Terms[2].SS != 0) {
			t.Errorf("m3/%s variant: %+v; want 2 levels aliased with item: df 0, ss 0", r.Scale, r.Terms[2])
		}
	}
	if !bal["m1"] || bal["m2"] || bal["m3"] {
		t.Errorf("balanced: m1 %v, m2 %v, m3 %v; want m1 (complete crossing) true, m2 and m3 false", bal["m1"], bal["m2"], bal["m3"])
	}
}

// TestAgainstR compares every order-bias statistic (bootstrap intervals from the same resamples) and every
// sequential sum of squares with R's, committed in testdata by make_design.R, to 1e-9.
func TestAgainstR(t *testing.T) { checkAgainst(t, "testdata") }

// TestAgainstRLive runs make_design.R afresh and compares Go with what it writes.
func TestAgainstRLive(t *testing.T) {
	if _, err := exec.LookPath("Rscript"); err != nil {
		t.Skip("Rscript not installed; TestAgainstR compares with the committed reference")
	}
	dir := t.TempDir()
	cmd := exec.Command("Rscript", "testdata/make_design.R", "testdata", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make_design.R: %v\n%s", err, out)
	}
	checkAgainst(t, dir)
}
