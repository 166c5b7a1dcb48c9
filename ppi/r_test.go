package ppi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/silicolab/silico/bootstrap"
	"github.com/silicolab/silico/rcheck"
)

// pair draws n people's (human, twin) answers whose latent values correlate by rho: the human's is
// 3.5 + 1.2·z₁, the twin's bias + scale·(rho·z₁ + √(1 − rho²)·z₂). With likert they are rounded to the options
// 1 … 6 (ties, as real items have), otherwise kept as continuous scale scores.
func pair(r *rand.Rand, n int, rho, bias, scale float64, likert bool) (y, f []float64) {
	y, f = make([]float64, n), make([]float64, n)
	for i := range n {
		z1, z2 := r.NormFloat64(), r.NormFloat64()
		y[i] = 3.5 + 1.2*z1
		f[i] = bias + scale*(rho*z1+math.Sqrt(1-rho*rho)*z2)
		if likert {
			y[i], f[i] = option(y[i]), option(f[i])
		}
	}
	return y, f
}

// option rounds a latent value to the nearest of 1 … 6.
func option(x float64) float64 { return min(max(math.Round(x), 1), 6) }

// meanCase is one mean to estimate: n labeled people and N unlabeled model answers.
type meanCase struct {
	name  string
	y, f  []float64
	fu    []float64
	share int // > 0: y, f and fu are option indices of an item with this many options
}

// rCases are the inputs of the R check: several n, N and ρ from 0 to 0.9, Likert answers with ties and
// continuous scores, a model that answers against the people (λ clipped at 0), a model with too little spread
// (λ clipped at 1), a constant model, constant humans, a group of three people, and option shares with an
// option nobody chose.
func rCases() []meanCase {
	r := rand.New(rand.NewPCG(39, 1))
	var out []meanCase
	add := func(name string, n, nu int, rho, bias, scale float64, likert bool) {
		y, f := pair(r, n+nu, rho, bias, scale, likert)
		out = append(out, meanCase{name: name, y: y[:n], f: f[:n], fu: f[n:]})
	}
	for _, n := range []int{5, 12, 40, 300} {
		for _, nu := range []int{3, 50, 2000} {
			for _, rho := range []float64{0, 0.3, 0.6, 0.9} {
				add(fmt.Sprintf("likert_n%d_N%d_r%g", n, nu, rho), n, nu, rho, 3.9, 1.1, true)
			}
		}
	}
	add("scale_n80_N400_r0.75", 80, 400, 0.75, 3.2, 0.8, false)
	add("against_n60_N200", 60, 200, -0.6, 3.5, 1.2, true)
	add("narrow_n100_N300", 100, 300, 0.95, 3.5, 0.25, false)
	add("group_of_three", 3, 2, 0.5, 3.5, 1.2, true)
	y, _ := pair(r, 30, 0, 0, 1, true)
	out = append(out, meanCase{name: "constant_model", y: y, f: fill(30, 4), fu: fill(90, 4)})
	_, f := pair(r, 120, 0.5, 3.5, 1.2, true)
	out = append(out, meanCase{name: "constant_humans", y: fill(30, 5), f: f[:30], fu: f[30:]})
	_, f = pair(r, 120, 0.5, 3.5, 1.2, true)
	out = append(out, meanCase{name: "constant_twins", y: y, f: fill(30, 2), fu: f[30:]})

	// Option shares of a five-option item: option 4 (index) is chosen by no labeled person, option 0 by
	// nobody at all.
	for _, c := range []struct {
		name   string
		n, nu  int
		rho    float64
		shares int
	}{{"shares_n50_N500", 50, 500, 0.7, 5}, {"shares_n15_N40", 15, 40, 0.3, 5}} {
		y, f := pair(r, c.n+c.nu, c.rho, 3.5, 1.2, true)
		idx := func(x []float64) []float64 {
			out := make([]float64, len(x))
			for i, v := range x {
				out[i] = min(max(v-2, 1), 3) // options 1 … 3 of 0 … 4
			}
			return out
		}
		yi, fi := idx(y), idx(f)
		fi[c.n] = 4 // one unlabeled persona chose option 4, which no labeled person did
		out = append(out, meanCase{name: c.name, y: yi[:c.n], f: fi[:c.n], fu: fi[c.n:], share: c.shares})
	}
	return out
}

func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func ints(x []float64) []int {
	out := make([]int, len(x))
	for i, v := range x {
		out[i] = int(v)
	}
	return out
}

func flag(f, bit Flags) float64 {
	if f&bit != 0 {
		return 1
	}
	return 0
}

// figures are one case's figures under the names check_ppi.R gives them.
type figures [][2]string

func (fs *figures) add(name string, x float64) { *fs = append(*fs, [2]string{name, rcheck.Num(x)}) }

// adds adds the figures named by the space-separated names, in order, with values.
func (fs *figures) adds(names string, values ...float64) {
	for i, name := range strings.Fields(names) {
		fs.add(name, values[i])
	}
}

func (fs *figures) interval(prefix string, iv Interval) {
	fs.add(prefix+"_est", iv.Estimate)
	fs.add(prefix+"_var", iv.Variance)
	fs.add(prefix+"_lo", iv.Lo)
	fs.add(prefix+"_hi", iv.Hi)
}

func estimateFigures(e Estimate) figures {
	var fs figures
	fs.adds("n N", float64(e.Labeled), float64(e.Unlabeled))
	fs.interval("humans", e.Humans)
	fs.interval("ppi", e.PPI)
	fs.interval("classical", e.Classical)
	fs.adds("model_only lambda lambda_raw rho n_eff", e.ModelOnly, e.Lambda, e.LambdaRaw, e.Rho, e.NEff)
	fs.adds("flag_few flag_weak flag_const_humans flag_const_model flag_clipped", flag(e.Flags, FewLabeled),
		flag(e.Flags, WeakCorrelation), flag(e.Flags, ConstantHumans), flag(e.Flags, ConstantModel),
		flag(e.Flags, LambdaClipped))
	return fs
}

// planCase is one power analysis: a target half-width or a budget.
type planCase struct {
	name, kind         string
	sigma2, rho        float64
	human, model, goal float64
}

// rPlans cover ρ from below 0 to 0.99, cheap and dear model answers (γ = 0.002 … 0.5), a correlation below
// the threshold (mixing does not pay), and costs in cents whose sums round.
func rPlans() []planCase {
	var out []planCase
	for _, c := range []struct {
		rho, human, model float64
	}{{0.9, 5, 0.01}, {0.6, 5, 0.01}, {0.3, 2.5, 0.05}, {0, 5, 0.01}, {-0.4, 5, 0.01}, {0.99, 12, 0.03},
		{0.5, 1, 0.5}, {0.75, 0.3, 0.1}} {
		for _, hw := range []float64{0.05, 0.12} {
			out = append(out, planCase{fmt.Sprintf("hw%g_r%g_ch%g_cf%g", hw, c.rho, c.human, c.model), "halfwidth",
				1.7, c.rho, c.human, c.model, hw})
		}
		for _, budget := range []float64{150, 2500.5} {
			out = append(out, planCase{fmt.Sprintf("budget%g_r%g_ch%g_cf%g", budget, c.rho, c.human, c.model), "budget",
				0.23, c.rho, c.human, c.model, budget})
		}
	}
	return out
}

func planFigures(p Plan) figures {
	var fs figures
	for _, d := range []struct {
		prefix string
		d      Design
	}{{"humans", p.Humans}, {"mixed", p.Mixed}} {
		fs.add(d.prefix+"_n", float64(d.d.Labeled))
		fs.add(d.prefix+"_N", float64(d.d.Unlabeled))
		fs.add(d.prefix+"_cost", d.d.Cost)
		fs.add(d.prefix+"_hw", d.d.HalfWidth)
	}
	pays := 0.0
	if p.MixingPays {
		pays = 1
	}
	fs.add("pays", pays)
	fs.add("threshold", p.Threshold)
	return fs
}

// selfCase is one self-check population.
type selfCase struct {
	name      string
	y, f      []float64
	n, draws  int
	seed      int64
	seedLabel string
}

func rSelfChecks() []selfCase {
	r := rand.New(rand.NewPCG(39, 2))
	var out []selfCase
	for _, c := range []struct {
		name  string
		m, n  int
		rho   float64
		draws int
	}{{"self_m300_n60_r0.8", 300, 60, 0.8, 40}, {"self_m200_n150_r0.2", 200, 150, 0.2, 25}, {"self_m40_n12_r0.5", 40, 12, 0.5, 30}} {
		y, f := pair(r, c.m, c.rho, 3.9, 1.1, true)
		out = append(out, selfCase{name: c.name, y: y, f: f, n: c.n, draws: c.draws, seed: 7, seedLabel: c.name})
	}
	return out
}

// writeRInputs writes the inputs of check_ppi.R and Go's figures into dir.
func writeRInputs(t *testing.T, dir string) {
	t.Helper()
	files := rcheck.NewFiles(t, dir)
	defer files.Close()
	means := files.Create("means.csv", "case", "set", "y", "f")
	shares := files.Create("shares.csv", "case", "k", "set", "y", "f")
	diffs := files.Create("diffs.csv", "diff", "a", "b")
	plans := files.Create("plans.csv", "case", "kind", "sigma2", "rho", "ch", "cf", "target")
	self := files.Create("selfcheck.csv", "case", "y", "f")
	goOut := files.Create("go.csv", "case", "figure", "value")
	emit := func(c string, fs figures) {
		for _, f := range fs {
			goOut.Row(c, f[0], f[1])
		}
	}

	est := map[string]Estimate{}
	for _, c := range rCases() {
		if c.share > 0 {
			k := strconv.Itoa(c.share)
			for i := range c.y {
				shares.Row(c.name, k, "labeled", rcheck.Num(c.y[i]), rcheck.Num(c.f[i]))
			}
			for _, v := range c.fu {
				shares.Row(c.name, k, "unlabeled", "", rcheck.Num(v))
			}
			es, err := Shares(ints(c.y), ints(c.f), ints(c.fu), c.share)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for opt, e := range es {
				emit(fmt.Sprintf("%s/%d", c.name, opt), estimateFigures(e))
			}
			continue
		}
		for i := range c.y {
			means.Row(c.name, "labeled", rcheck.Num(c.y[i]), rcheck.Num(c.f[i]))
		}
		for _, v := range c.fu {
			means.Row(c.name, "unlabeled", "", rcheck.Num(v))
		}
		e, err := Mean(c.y, c.f, c.fu)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		est[c.name] = e
		emit(c.name, estimateFigures(e))
	}

	for _, d := range [][2]string{{"likert_n40_N50_r0.6", "likert_n300_N2000_r0.3"}, {"scale_n80_N400_r0.75", "against_n60_N200"},
		{"group_of_three", "likert_n12_N3_r0.9"}} {
		name := "diff_" + d[0] + "_" + d[1]
		diffs.Row(name, d[0], d[1])
		df := Diff(est[d[0]], est[d[1]])
		var fs figures
		fs.add("model_only", df.ModelOnly)
		fs.interval("humans", df.Humans)
		fs.interval("ppi", df.PPI)
		fs.interval("classical", df.Classical)
		emit(name, fs)
	}

	for _, c := range rPlans() {
		plans.Row(c.name, c.kind, rcheck.Num(c.sigma2), rcheck.Num(c.rho), rcheck.Num(c.human), rcheck.Num(c.model), rcheck.Num(c.goal))
		plan := ForHalfWidth
		if c.kind == "budget" {
			plan = ForBudget
		}
		p, err := plan(c.sigma2, c.rho, Costs{Human: c.human, Model: c.model}, c.goal)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		emit(c.name, planFigures(p))
	}

	sub := files.Raw("subsets.csv", bootstrap.IndicesHeader)
	for _, c := range rSelfChecks() {
		for i := range c.y {
			self.Row(c.name, rcheck.Num(c.y[i]), rcheck.Num(c.f[i]))
		}
		draws := Labeled(c.seed, c.seedLabel, len(c.y), c.n, c.draws)
		// The rows R replays are bootstrap's own record of the stream Labeled draws from.
		if err := bootstrap.WriteSubsets(sub, c.name, c.seed, c.seedLabel, len(c.y), c.n, c.draws); err != nil {
			t.Fatal(err)
		}
		chk, err := SelfCheck(c.y, c.f, draws)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var fs figures
		fs.adds("people truth ppi_coverage humans_coverage ppi_width humans_width ppi_bias model_only_bias mean_neff",
			float64(chk.People), chk.Truth, chk.PPICoverage, chk.HumansCoverage, chk.PPIWidth, chk.HumansWidth,
			chk.PPIBias, chk.ModelOnlyBias, chk.MeanNEff)
		emit(c.name, fs)
		for b, d := range chk.Draws {
			var fs figures
			fs.adds("ppi_lo ppi_hi humans_lo humans_hi ppi_est lambda rho", d.PPI.Lo, d.PPI.Hi, d.Humans.Lo,
				d.Humans.Hi, d.Estimate.PPI.Estimate, d.Estimate.Lambda, d.Estimate.Rho)
			emit(fmt.Sprintf("%s/%d", c.name, b+1), fs)
		}
	}
}

// TestAgainstR has check_ppi.R, an implementation in base R written from the papers' formulas, recompute every
// figure of every case (means, option shares, group differences, power analyses, self-checks and their draws)
// from the inputs Go wrote at full precision and compare with Go's to 1e-9; then moves single figures of Go's
// by 1e-8 (relative) — an estimate, a λ, a power analysis's n, a self-check's coverage, a share's bound — and
// flips a flag, and requires the script to name every one of them (and nothing else).
func TestAgainstR(t *testing.T) {
	rcheck.Check(t, "testdata/check_ppi.R", writeRInputs, []rcheck.Move{
		{Case: "likert_n300_N2000_r0.6", Figure: "ppi_est"},
		{Case: "scale_n80_N400_r0.75", Figure: "lambda"},
		{Case: "budget2500.5_r0.6_ch5_cf0.01", Figure: "mixed_n"},
		{Case: "self_m300_n60_r0.8", Figure: "ppi_coverage"},
		{Case: "group_of_three", Figure: "flag_weak", Flip: true},
		{Case: "shares_n50_N500/4", Figure: "ppi_hi"},
	})
}
