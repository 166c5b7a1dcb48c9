package twins

import (
	"math"
	"math/rand/v2"
	"testing"
)

const eps = 1e-12

func near(a, b float64) bool { return math.Abs(a-b) <= eps || (math.IsNaN(a) && math.IsNaN(b)) }

// TestHandExample checks one small item by hand: ties among the modes are credited evenly, the baselines learn
// from a respondent without a twin, and persons without a twin are not scored.
func TestHandExample(t *testing.T) {
	// Five persons in group a answer 0, 0, 1, 1, 2 (modes 0 and 1, tied); person 5 (group b) answers 3 and has
	// no twin; person 6 (group b) answers 3, and their twin 2.
	it := Item{
		Scores: []float64{1, 2, 3, 4},
		Human:  []int{0, 0, 1, 1, 2, 3, 3},
		Twin:   []int{0, 1, 1, 3, 2, Missing, 2},
	}
	attrs := [][]string{{"a"}, {"a"}, {"a"}, {"a"}, {"a"}, {"b"}, {"b"}}
	res, err := ItemAccuracy(it, attrs, Bootstrap{Seed: 1, Key: "hand", Samples: 50})
	if err != nil {
		t.Fatal(err)
	}
	if res.Persons != 6 {
		t.Fatalf("%d persons scored, want 6", res.Persons)
	}
	// Twin: agreements at persons 0, 2, 4 of 6; within one everywhere but person 3 (1 vs 3).
	// MAE: |0|, |1|, 0, |2|, 0, |1| over 6 = 4/6.
	check := func(what string, got, want float64) {
		t.Helper()
		if !near(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("twin exact", res.Twin.Exact.Value, 3.0/6)
	check("twin within", res.Twin.WithinOne.Value, 5.0/6)
	check("twin MAE", res.Twin.MAE.Value, 4.0/6)
	// Group a's modes 0 and 1: answers 0 and 1 get ½ exact and 1 within; 2 gets 0 and ½. Group b's mode 3
	// (from persons 5 and 6, one without a twin): person 6 gets 1 and 1.
	check("group exact", res.Group.Exact.Value, (4*0.5+0+1)/6)
	check("group within", res.Group.WithinOne.Value, (4*1+0.5+1)/6)
	// Group means: a 1 + (0+0+1+1+2)/5 = 1.8, b 4; MAE over the six: (0.8+0.8+0.2+0.2+1.2+0)/6.
	check("group MAE", res.Group.MAE.Value, (0.8+0.8+0.2+0.2+1.2+0)/6)
	// Population: answers 0,0,1,1,2,3,3 → modes 0, 1 and 3 tie (2 each); mean score 1 + 10/7.
	check("population exact", res.Population.Exact.Value, (4*(1.0/3)+0+1.0/3)/6)
	// Within one: 0, 1 and 2 are near two of the three modes, 3 only to itself.
	check("population within", res.Population.WithinOne.Value, (5*(2.0/3)+1.0/3)/6)
	if !math.IsNaN(res.Population.Corr.Value) || !math.IsNaN(res.Population.Corr.Lo) {
		t.Errorf("the population's correlation is %v, want undefined", res.Population.Corr)
	}
	if res.Retest != nil {
		t.Errorf("a retest without retest answers")
	}
	for _, f := range []Figure{res.Twin.Exact, res.Group.MAE} {
		if !(f.Lo <= f.Value && f.Value <= f.Hi) {
			t.Errorf("interval %v does not hold its value", f)
		}
	}
}

// TestPerfectTwin: a twin that answers as its person scores 1, 1, 0 and 1 with zero-width intervals, and is
// normalised by the retest to 1 / the retest's agreement; a twin that answers as the retest does is
// normalised to exactly 1.
func TestPerfectTwin(t *testing.T) {
	p := draw(rand.New(rand.NewPCG(4, 1)), 200, []int{6, 5, 6, 4}, 1, 0.05, true)
	it := p.item(0)
	it.Twin = it.Human
	res, err := ItemAccuracy(it, p.attrs, Bootstrap{Seed: 2, Key: "perfect", Samples: 100})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]Figure{"exact": res.Twin.Exact, "within": res.Twin.WithinOne, "corr": res.Twin.Corr} {
		if f.Value != 1 || f.Lo != 1 || f.Hi != 1 {
			t.Errorf("perfect twin %s = %v", name, f)
		}
	}
	if res.Twin.MAE.Value != 0 || res.Twin.MAE.Hi != 0 {
		t.Errorf("perfect twin MAE = %v", res.Twin.MAE)
	}
	if rt := res.Retest; rt == nil || !near(rt.NormExact.Value, 1/rt.Retest.Exact.Value) || rt.NormExact.Value <= 1 {
		t.Errorf("perfect twin against an imperfect retest: %+v", rt)
	}

	it = p.item(1)
	it.Twin = it.Retest
	if res, err = ItemAccuracy(it, p.attrs, Bootstrap{Seed: 2, Key: "as-retest", Samples: 100}); err != nil {
		t.Fatal(err)
	}
	if rt := res.Retest; rt.NormExact.Value != 1 || rt.NormWithinOne.Value != 1 || rt.NormCorr.Value != 1 || rt.NormExact.Hi != 1 {
		t.Errorf("a twin that answers as the retest: %+v", rt)
	}

	sc := p.scale()
	for j := range sc.Items {
		sc.Items[j].Twin = sc.Items[j].Retest
	}
	sc.Twin = sc.Retest
	if res, err = ScaleAccuracy(sc, p.attrs, Bootstrap{Seed: 2, Key: "scale", Samples: 100}); err != nil {
		t.Fatal(err)
	}
	if rt := res.Retest; !near(rt.NormExact.Value, 1) || !near(rt.NormCorr.Value, 1) || rt.Normalizable == 0 || rt.Normalizable > rt.Persons {
		t.Errorf("a scale twin that answers as the retest: %+v", rt)
	}
}

// TestBaselinesSeparate: when the answers depend on the group only, the group baseline beats the population's
// and a twin that knows only the group scores what the group baseline scores; a twin that knows the person
// beats both.
func TestBaselinesSeparate(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	const n = 3000
	attrs := make([][]string, n)
	it := Item{Scores: []float64{1, 2, 3, 4, 5}, Human: make([]int, n), Twin: make([]int, n)}
	knows := Item{Scores: it.Scores, Human: it.Human, Twin: make([]int, n)}
	for i := range n {
		g := r.IntN(3)
		attrs[i] = []string{[]string{"young", "middle", "old"}[g]}
		it.Human[i] = min(max(g+1+int(math.Round(0.6*r.NormFloat64())), 0), 4)
		it.Twin[i] = g + 1 // the group's mode
		knows.Twin[i] = it.Human[i]
		if r.Float64() < 0.2 {
			knows.Twin[i] = min(it.Human[i]+1, 4)
		}
	}
	b := Bootstrap{Seed: 3, Key: "groups", Samples: 200}
	res, err := ItemAccuracy(it, attrs, b)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.Group.Exact.Lo > res.Population.Exact.Hi) || !(res.Group.MAE.Hi < res.Population.MAE.Lo) {
		t.Errorf("the group baseline does not beat the population's: %+v vs %+v", res.Group, res.Population)
	}
	if !near(res.Twin.Exact.Value, res.Group.Exact.Value) {
		t.Errorf("a twin that answers the group's mode: exact %v, the group baseline %v", res.Twin.Exact, res.Group.Exact)
	}
	res, err = ItemAccuracy(knows, attrs, b)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.Twin.Exact.Lo > res.Group.Exact.Hi) || !(res.Twin.Corr.Lo > res.Group.Corr.Hi) {
		t.Errorf("a twin that knows the person does not beat the group: %+v vs %+v", res.Twin, res.Group)
	}
}

// TestResamplesArePure: the intervals are a function of the seed and the key.
func TestResamplesArePure(t *testing.T) {
	p := draw(rand.New(rand.NewPCG(4, 3)), 150, []int{6}, 1, 0, false)
	get := func(seed int64, key string) Result {
		res, err := ItemAccuracy(p.item(0), p.attrs, Bootstrap{Seed: seed, Key: key, Samples: 100})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := get(1, "x"), get(1, "x"), get(1, "y")
	if a.Twin.Exact != b.Twin.Exact || a.Group.Corr != b.Group.Corr {
		t.Errorf("one seed and key, two intervals: %v %v", a.Twin.Exact, b.Twin.Exact)
	}
	if a.Twin.Exact.Lo == c.Twin.Exact.Lo && a.Twin.Exact.Hi == c.Twin.Exact.Hi && a.Twin.Corr.Lo == c.Twin.Corr.Lo {
		t.Errorf("another key drew the same intervals")
	}
	if res, err := ItemAccuracy(p.item(0), p.attrs, Bootstrap{}); err != nil || !math.IsNaN(res.Twin.Exact.Lo) || math.IsNaN(res.Twin.Exact.Value) {
		t.Errorf("no resamples: %v, %v", res.Twin.Exact, err)
	}
}

func TestErrors(t *testing.T) {
	ok := Item{Scores: []float64{1, 2}, Human: []int{0, 1}, Twin: []int{1, 1}}
	for name, err := range map[string]error{
		"position": second(ItemAccuracy(Item{Scores: []float64{1, 2}, Human: []int{0, 2}, Twin: []int{0, 0}}, nil, Bootstrap{})),
		"lengths":  second(ItemAccuracy(Item{Scores: []float64{1, 2}, Human: []int{0, 1}, Twin: []int{0}}, nil, Bootstrap{})),
		"attrs":    second(ItemAccuracy(ok, [][]string{{"a"}}, Bootstrap{})),
		"nobody":   second(ItemAccuracy(Item{Scores: []float64{1}, Human: []int{0}, Twin: []int{Missing}}, nil, Bootstrap{})),
		"options":  second(ItemAccuracy(Item{Human: []int{}, Twin: []int{}}, nil, Bootstrap{})),
		"scale":    second(ScaleAccuracy(Scale{Items: []Item{ok}, Human: []float64{1, 2}, Twin: []float64{1}}, nil, Bootstrap{})),
		"retest": second(ScaleAccuracy(Scale{Items: []Item{ok}, Human: []float64{1, 2}, Twin: []float64{1, 2},
			Retest: []float64{1, 2}}, nil, Bootstrap{})),
		"no items": second(ScaleAccuracy(Scale{Human: []float64{1}, Twin: []float64{1}}, nil, Bootstrap{})),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func second[T any](_ T, err error) error { return err }
