package ppi

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestZ(t *testing.T) {
	if q := distuv.UnitNormal.Quantile(0.975); math.Abs(q-Z) > 1e-15 {
		t.Fatalf("Z = %.17g, the 97.5 %% normal quantile is %.17g", Z, q)
	}
}

// TestPerfectTwin: a twin that answers exactly as its person (f = Y, and the unlabeled answers are the held-out
// people's own) has ρ = 1 and n_eff = n + N; classical PPI (λ = 1) is then exactly the unlabeled people's mean,
// and PPI++ weighs the two sets as one sample of n + N people: its estimate is close to their pooled mean and
// its interval about as wide as n + N people asked directly.
func TestPerfectTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct{ n, nu int }{{20, 200}, {100, 100}, {300, 3000}} {
		y, _ := pair(r, c.n+c.nu, 0, 0, 1, true)
		e, err := Mean(y[:c.n], y[:c.n], y[c.n:])
		if err != nil {
			t.Fatal(err)
		}
		all := float64(c.n + c.nu)
		if math.Abs(e.Rho-1) > 1e-12 || math.Abs(e.NEff-all) > 1e-9*all {
			t.Errorf("n=%d N=%d: ρ = %v, n_eff = %v; want 1 and %v", c.n, c.nu, e.Rho, e.NEff, all)
		}
		if u := stat.Mean(y[c.n:], nil); math.Abs(e.Classical.Estimate-u) > 1e-12 {
			t.Errorf("n=%d N=%d: classical PPI %v, the unlabeled mean is %v", c.n, c.nu, e.Classical.Estimate, u)
		}
		pooled := stat.Mean(y, nil)
		sd := math.Sqrt(stat.Variance(y, nil))
		if d := math.Abs(e.PPI.Estimate - pooled); d > 0.05*sd/math.Sqrt(float64(c.n)) {
			t.Errorf("n=%d N=%d: PPI++ %v is %v from the pooled mean %v", c.n, c.nu, e.PPI.Estimate, d, pooled)
		}
		want := 2 * Z * sd / math.Sqrt(all)
		if ratio := e.PPI.Width() / want; ratio < 0.95 || ratio > 1.05 {
			t.Errorf("n=%d N=%d: PPI++ width %v, %v times that of n + N people", c.n, c.nu, e.PPI.Width(), ratio)
		}
		if e.Humans.Width() <= e.PPI.Width() {
			t.Errorf("n=%d N=%d: a perfect twin does not narrow the interval", c.n, c.nu)
		}
	}
}

// TestIndependentTwin: a twin whose answers have nothing to do with its person's gets λ̂ → 0 as n grows, and
// the PPI++ interval is never narrower than the humans' beyond the noise of a sample correlation (ρ̂² ≈ 1/n).
func TestIndependentTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	y, f := pair(r, 40000, 0, 3, 1.5, true)
	e, err := Mean(y[:20000], f[:20000], f[20000:])
	if err != nil {
		t.Fatal(err)
	}
	if e.Lambda > 0.03 || math.Abs(e.Rho) > 0.03 {
		t.Errorf("n = N = 20000, independent twins: λ̂ = %v, ρ = %v, want both near 0", e.Lambda, e.Rho)
	}
	const n, nu, runs = 200, 2000, 50
	var ratios float64
	for range runs {
		y, f := pair(r, n+nu, 0, 3, 1.5, true)
		e, err := Mean(y[:n], f[:n], f[n:])
		if err != nil {
			t.Fatal(err)
		}
		ratio := e.PPI.Width() / e.Humans.Width()
		ratios += ratio
		if ratio < math.Sqrt(1-12.0/n) { // ρ̂² beyond 12/n: a 3.5 σ sample correlation
			t.Errorf("independent twins narrowed the interval to %v of the humans'", ratio)
		}
	}
	if mean := ratios / runs; mean < 0.99 {
		t.Errorf("independent twins narrowed the interval to %v of the humans' on average", mean)
	}
}

// TestCoverage draws fresh labeled and unlabeled samples from a population with a known mean and counts how
// often the 95 % intervals cover it: PPI++, classical PPI and humans alone, for a good twin and a useless one.
// Seeded, so the counts are fixed; the bounds allow 3.5 standard errors of a share of 2000.
func TestCoverage(t *testing.T) {
	const n, nu, runs = 150, 1500, 2000
	for _, rho := range []float64{0, 0.5, 0.9} {
		r := rand.New(rand.NewPCG(2, uint64(rho*10)))
		// The latent human answer is 3.5 + 1.2 z; continuous, so its mean is exactly 3.5.
		var ppi, classical, humans int
		for range runs {
			y, f := pair(r, n+nu, rho, 4.2, 0.9, false)
			e, err := Mean(y[:n], f[:n], f[n:])
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				iv  Interval
				cnt *int
			}{{e.PPI, &ppi}, {e.Classical, &classical}, {e.Humans, &humans}} {
				if c.iv.Covers(3.5) {
					*c.cnt++
				}
			}
		}
		for name, c := range map[string]int{"PPI++": ppi, "classical PPI": classical, "humans": humans} {
			if share := float64(c) / runs; share < 0.93 || share > 0.97 {
				t.Errorf("ρ = %v: %s covers the mean in %.3f of the samples", rho, name, share)
			}
		}
	}
}

// TestSelfCheck plays the design out on a synthetic population: the corrected intervals cover the full sample's
// mean in about 95 % of the draws, PPI++ and humans alike, and PPI++ is narrower by √(1 − ρ²) (what the
// correction leaves of the n_eff gain: both variances lose s²/M). Without the correction (the draws' iid
// intervals) the coverage is far above 95 % when n is half of M.
func TestSelfCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	for _, c := range []struct {
		m, n int
		rho  float64
	}{{2000, 200, 0.8}, {2000, 1000, 0.8}, {1500, 300, 0.3}} {
		y, f := pair(r, c.m, c.rho, 4.1, 1.3, false)
		chk, err := SelfCheck(y, f, Labeled(11, "selfcheck", c.m, c.n, 1000))
		if err != nil {
			t.Fatal(err)
		}
		if chk.PPICoverage < 0.93 || chk.PPICoverage > 0.97 || chk.HumansCoverage < 0.93 || chk.HumansCoverage > 0.97 {
			t.Errorf("M=%d n=%d ρ=%v: coverage PPI++ %.3f, humans %.3f, want both near 0.95", c.m, c.n, c.rho,
				chk.PPICoverage, chk.HumansCoverage)
		}
		rho := stat.Correlation(y, f, nil)
		if want, got := math.Sqrt(1-rho*rho), chk.PPIWidth/chk.HumansWidth; math.Abs(got/want-1) > 0.1 {
			t.Errorf("M=%d n=%d ρ=%v: PPI++ is %.3f as wide as humans alone, √(1 − ρ²) = %.3f", c.m, c.n, c.rho, got, want)
		}
		if want := stat.Mean(f, nil) - stat.Mean(y, nil); math.Abs(chk.ModelOnlyBias-want) > 1e-12 || math.Abs(want) < 0.3 {
			t.Errorf("model-only bias %v, want %v (the twins are biased by construction)", chk.ModelOnlyBias, want)
		}
		if math.Abs(chk.PPIBias) > 0.01 {
			t.Errorf("M=%d n=%d ρ=%v: PPI++ bias %v over the draws", c.m, c.n, c.rho, chk.PPIBias)
		}
		var iid int
		for _, d := range chk.Draws {
			if d.Estimate.PPI.Covers(chk.Truth) {
				iid++
			}
		}
		if share := float64(iid) / float64(len(chk.Draws)); c.n == 1000 && share < 0.99 {
			t.Errorf("M=%d n=%d: the uncorrected intervals cover in %.3f of the draws; the correction would not matter",
				c.m, c.n, share)
		}
	}
}

// TestPlan: mixing pays exactly when ρ is above 2√γ/(1 + γ) (away from the threshold, where rounding decides);
// the integer designs are close to the continuous optimum; a plan's design reaches its target and the budget
// plan for the cost of the cheapest design reaches at least its half-width.
func TestPlan(t *testing.T) {
	c := Costs{Human: 4, Model: 0.25} // γ = 1/16, threshold 2·(1/4)/(17/16) = 8/17
	th := 8.0 / 17
	for _, rho := range []float64{-0.5, 0, 0.2, th - 0.03, th + 0.03, 0.7, 0.95, 1} {
		p, err := ForHalfWidth(1.4, rho, c, 0.04)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.Threshold-th) > 1e-15 {
			t.Fatalf("threshold %v, want %v", p.Threshold, th)
		}
		if p.MixingPays != (rho > th) {
			t.Errorf("ρ = %v: mixing pays %v, threshold %v", rho, p.MixingPays, th)
		}
		if p.Mixed.HalfWidth > 0.04 || p.Humans.HalfWidth > 0.04 {
			t.Errorf("ρ = %v: designs miss the target: %+v", rho, p)
		}
		if rho > th {
			// The continuous optimum's cost S²/v.
			r := min(rho, 1)
			v := (0.04 / Z) * (0.04 / Z)
			s := math.Sqrt(1.4*(1-r*r)*c.Human) + math.Sqrt(1.4*r*r*c.Model)
			// Rounding n and m up costs at most one of each; with ρ = 1 the optimum n is 0, and the plan
			// asks MinLabeled people.
			cont, extra := s*s/v, c.Human+2*c.Model
			if rho == 1 {
				extra += MinLabeled * c.Human
			}
			if p.Mixed.Cost < cont || p.Mixed.Cost > cont+extra {
				t.Errorf("ρ = %v: integer cost %v, continuous %v", rho, p.Mixed.Cost, cont)
			}
			b, err := ForBudget(1.4, rho, c, p.Mixed.Cost)
			if err != nil {
				t.Fatal(err)
			}
			if b.Mixed.HalfWidth > p.Mixed.HalfWidth || b.Mixed.Cost > p.Mixed.Cost {
				t.Errorf("ρ = %v: the budget %v buys %+v, worse than %+v", rho, p.Mixed.Cost, b.Mixed, p.Mixed)
			}
		}
		if rho <= 0 && p.Mixed.Unlabeled != 0 {
			t.Errorf("ρ = %v: a useless model gets %d answers", rho, p.Mixed.Unlabeled)
		}
	}
}

func TestErrors(t *testing.T) {
	ok := []float64{1, 2, 3}
	for name, err := range map[string]error{
		"lengths":   second(Mean(ok, ok[:2], ok)),
		"nan":       second(Mean([]float64{1, math.NaN(), 3}, ok, ok)),
		"inf":       second(Mean(ok, ok, []float64{1, math.Inf(1)})),
		"shares":    second(Shares([]int{0, 1, 3}, []int{0, 1, 2}, []int{0, 1}, 3)),
		"sigma":     second(ForHalfWidth(0, 0.5, Costs{1, 0.1}, 0.1)),
		"rho":       second(ForHalfWidth(1, 1.5, Costs{1, 0.1}, 0.1)),
		"free":      second(ForHalfWidth(1, 0.5, Costs{1, 0}, 0.1)),
		"halfwidth": second(ForHalfWidth(1, 0.5, Costs{1, 0.1}, -1)),
		"budget":    second(ForBudget(1, 0.5, Costs{1, 0.1}, 10)),
		"selfcheck": second(SelfCheck(ok, ok, [][]int{{0, 0}})),
		"no draws":  second(SelfCheck(ok, ok, nil)),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Mean([]float64{1}, []float64{1}, ok); !errors.Is(err, ErrTooFew) {
		t.Errorf("one labeled person: %v, want ErrTooFew", err)
	}
	if _, err := Mean(ok, ok, []float64{1}); !errors.Is(err, ErrTooFew) {
		t.Errorf("one unlabeled persona: %v, want ErrTooFew", err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestNotes: every flag has words, in the order declared.
func TestNotes(t *testing.T) {
	all := FewLabeled | WeakCorrelation | ConstantHumans | ConstantModel | LambdaClipped
	if n := len(all.Notes()); n != 5 {
		t.Fatalf("%d notes for 5 flags", n)
	}
	if n := len(Flags(0).Notes()); n != 0 {
		t.Fatalf("%d notes without flags", n)
	}
	if got := ConstantHumans.Notes(); len(got) != 1 || got[0] != all.Notes()[2] {
		t.Fatalf("ConstantHumans: %q", got)
	}
}

// TestShares: an option nobody of the labeled people chose is flagged and its intervals have zero width, even
// when the model chose it; the humans' shares sum to 1; each option's λ is its own.
func TestShares(t *testing.T) {
	y := []int{0, 1, 1, 2, 2, 2, 1, 0, 2, 1, 1, 2}
	f := []int{0, 1, 2, 2, 2, 1, 1, 0, 2, 1, 3, 2}
	fu := []int{0, 1, 2, 3, 2, 1, 1, 3, 2, 2, 0, 1, 2, 2, 1}
	es, err := Shares(y, f, fu, 4)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, e := range es {
		sum += e.Humans.Estimate
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("the humans' shares sum to %v", sum)
	}
	nobody := es[3]
	if nobody.Flags&ConstantHumans == 0 || nobody.PPI.Width() != 0 || nobody.Humans.Width() != 0 || nobody.PPI.Estimate != 0 {
		t.Errorf("option nobody chose: %+v", nobody)
	}
	if es[0].Flags&ConstantHumans != 0 || es[0].Lambda == es[1].Lambda {
		t.Errorf("options 0 and 1 share λ %v or are flagged: %v", es[0].Lambda, es[0].Flags.Notes())
	}
}
