package ppi

import (
	"fmt"
	"math"
)

// Costs are the prices of the mixed subjects design: Human per person asked (recruiting, paying, the
// survey's own costs) and Model per model answer. A labeled person costs Human + Model (their twin's answer is
// paid too), an unlabeled persona Model.
type Costs struct {
	Human, Model float64
}

// Design is one pair of sample sizes and what it costs and buys.
type Design struct {
	// Labeled is n, the people asked (each with a twin, except in the humans-alone design); Unlabeled is N,
	// the extra model answers.
	Labeled, Unlabeled int
	// Cost is Human·n + Model·(n + N), or Human·n for humans alone.
	Cost float64
	// HalfWidth is the predicted half-width of the 95 % interval, Z·√V(n, N) (see Plan).
	HalfWidth float64
}

// Plan compares the humans-alone design with the best mixed design for one target.
type Plan struct {
	// Humans asks people only: no model answers.
	Humans Design
	// Mixed is the best mixed design: the cheapest for a target half-width, the narrowest for a budget.
	Mixed Design
	// MixingPays says whether Mixed beats Humans on integer sample sizes: cheaper for the half-width, or
	// narrower for the budget.
	MixingPays bool
	// Threshold is 2√γ/(1 + γ), γ = Model/Human: with continuous sample sizes mixing beats humans alone
	// exactly when ρ exceeds it (Broska, Howes & van Loon 2025). At the threshold MixingPays can go either way
	// by a rounding of n or N.
	Threshold float64
}

// The power analysis of the mixed subjects design.
//
// For a mean with human variance σ² and PPI correlation ρ (taken as max(ρ, 0): the tuned λ is never
// negative), the variance of the PPI++ estimate with the optimal λ is
//
//	V(n, N) = σ²/n · (1 − ρ²·N/(n + N)) = a/n + b/m,   a = σ²(1 − ρ²), b = σ²ρ², m = n + N,
//
// since σ²/n − σ²ρ²(m − n)/(nm) = σ²(1 − ρ²)/n + σ²ρ²/m. The design pays C(n, m) = c_h·n + c_f·m, and m ≥ n.
// For a target variance v = (h/Z)², h the half-width, minimise C subject to a/n + b/m = v: the Lagrange
// conditions c_h = μa/n², c_f = μb/m² give n ∝ √(a/c_h), m ∝ √(b/c_f), and the constraint fixes the scale:
//
//	n* = √(a/c_h)·S/v,   m* = √(b/c_f)·S/v,   C* = S²/v,   S = √(a·c_h) + √(b·c_f).
//
// For a budget B the same conditions with c_h·n + c_f·m = B give n* = B·√(a/c_h)/S, m* = B·√(b/c_f)/S and
// V* = S²/B. Humans alone cost c_h·σ²/v; the mixed design is cheaper exactly when S² < c_h·σ², that is
// √(1 − ρ²) + ρ√γ < 1 with γ = c_f/c_h; writing ρ = sin θ this is √γ < tan(θ/2), i.e. ρ > 2√γ/(1 + γ). At
// and below that threshold m* < n* is infeasible and the best is N = 0: ask people only.
//
// Sample sizes are whole numbers, so the plans search integer n around n*: for each n the smallest m that
// reaches v (⌈b/(v − a/n)⌉, at least n), or the largest m the budget leaves (⌊(B − c_h·n)/c_f⌋, which must be
// at least n). The cost (variance) on integers is at least its continuous value, which is convex in n, so the
// search walks outward from n* and stops on each side once the continuous value passes the best integer
// design found: the result is the exact integer optimum. Ties go to the smaller variance (cost), then the
// smaller n. A mixed design asks at least MinLabeled people (the formulas are asymptotic, and fewer are
// flagged FewLabeled). With ρ = 0 model answers buy nothing, and the mixed design has N = 0 (its twins are paid
// for nothing, so it costs more than humans alone).

// ForHalfWidth returns the cheapest designs whose predicted 95 % half-width is at most halfWidth, for human
// variance sigma2 and PPI correlation rho. The mixed design asks at least MinLabeled people, even where fewer
// would reach the target.
func ForHalfWidth(sigma2, rho float64, c Costs, halfWidth float64) (Plan, error) {
	if err := checkPlan(sigma2, rho, c); err != nil {
		return Plan{}, err
	}
	if !(halfWidth > 0) || math.IsInf(halfWidth, 0) {
		return Plan{}, fmt.Errorf("ppi: the target half-width must be a positive number, not %v", halfWidth)
	}
	v := (halfWidth / Z) * (halfWidth / Z)
	a, b := split(sigma2, rho)
	p := Plan{Threshold: threshold(c)}
	nh := int(math.Ceil(sigma2 / v))
	p.Humans = Design{Labeled: nh, Cost: c.Human * float64(nh), HalfWidth: Z * math.Sqrt(sigma2/float64(nh))}

	// m(n) is the smallest m ≥ n with a/n + b/m ≤ v; feasible for n ≥ lo. A mixed design asks at least
	// MinLabeled people: below that its interval is not to be trusted (see FewLabeled).
	lo := max(1, int(math.Ceil(a/v)))
	if b > 0 && a/float64(lo) >= v {
		lo++
	}
	lo = max(lo, MinLabeled)
	m := func(n int) int {
		if b == 0 {
			return n
		}
		return max(n, int(math.Ceil(b/(v-a/float64(n)))))
	}
	design := func(n int) Design {
		mn := m(n)
		return Design{Labeled: n, Unlabeled: mn - n, Cost: c.Human*float64(n) + c.Model*float64(mn),
			HalfWidth: Z * math.Sqrt(a/float64(n)+b/float64(mn))}
	}
	// The continuous cost for n < nh, where the constraint binds (at nh, m = n already reaches v).
	bound := func(n int) float64 {
		if b == 0 || n >= nh {
			return c.Human*float64(n) + c.Model*float64(n)
		}
		return c.Human*float64(n) + c.Model*b/(v-a/float64(n))
	}
	s := math.Sqrt(a*c.Human) + math.Sqrt(b*c.Model)
	start := math.Sqrt(a/c.Human) * s / v
	p.Mixed = search(start, lo, max(lo, nh), design, func(n int, best Design) bool { return bound(n) > best.Cost },
		prefer(cost, width))
	p.MixingPays = p.Mixed.Cost < p.Humans.Cost
	return p, nil
}

// ForBudget returns the designs with the narrowest predicted 95 % interval that cost at most budget, for human
// variance sigma2 and PPI correlation rho. A budget that buys fewer than MinLabeled people with a twin is an
// error.
func ForBudget(sigma2, rho float64, c Costs, budget float64) (Plan, error) {
	if err := checkPlan(sigma2, rho, c); err != nil {
		return Plan{}, err
	}
	hi := int(math.Floor(budget / (c.Human + c.Model)))
	if math.IsNaN(budget) || math.IsInf(budget, 0) || hi < MinLabeled {
		return Plan{}, fmt.Errorf("ppi: a budget of %v buys fewer than %d people with a twin at %v + %v each",
			budget, MinLabeled, c.Human, c.Model)
	}
	a, b := split(sigma2, rho)
	p := Plan{Threshold: threshold(c)}
	nh := int(math.Floor(budget / c.Human))
	p.Humans = Design{Labeled: nh, Cost: c.Human * float64(nh), HalfWidth: Z * math.Sqrt(sigma2/float64(nh))}

	// m(n) is the largest m the budget leaves, ≥ n for n ≤ hi; with ρ = 0 extra answers buy nothing.
	m := func(n int) int {
		if b == 0 {
			return n
		}
		// At least n: for n ≤ hi it is, but for rounding of the division.
		return max(n, int(math.Floor((budget-c.Human*float64(n))/c.Model)))
	}
	variance := func(n int) float64 { return a/float64(n) + b/float64(m(n)) }
	design := func(n int) Design {
		mn := m(n)
		return Design{Labeled: n, Unlabeled: mn - n, Cost: c.Human*float64(n) + c.Model*float64(mn),
			HalfWidth: Z * math.Sqrt(variance(n))}
	}
	bound := func(n int) float64 {
		if b == 0 {
			return a / float64(n)
		}
		return a/float64(n) + b*c.Model/(budget-c.Human*float64(n))
	}
	s := math.Sqrt(a*c.Human) + math.Sqrt(b*c.Model)
	start := budget * math.Sqrt(a/c.Human) / s
	p.Mixed = search(start, MinLabeled, hi, design, func(n int, best Design) bool {
		return Z*math.Sqrt(bound(n)) > best.HalfWidth
	}, prefer(width, cost))
	p.MixingPays = p.Mixed.HalfWidth < p.Humans.HalfWidth
	return p, nil
}

// search returns the best design(n) over the integers lo … hi, walking outward from start (clamped to the
// range): on each side it stops at the first n whose continuous bound is past the best design so far, which is
// exact when the bound is convex with its minimum at start and never above the integer figure.
func search(start float64, lo, hi int, design func(int) Design, past func(int, Design) bool, better func(x, y Design) bool) Design {
	n0 := lo
	if !math.IsNaN(start) {
		n0 = int(math.Round(min(max(start, float64(lo)), float64(hi))))
	}
	best := design(n0)
	for n := n0 - 1; n >= lo && !past(n, best); n-- {
		if d := design(n); better(d, best) {
			best = d
		}
	}
	for n := n0 + 1; n <= hi && !past(n, best); n++ {
		if d := design(n); better(d, best) {
			best = d
		}
	}
	return best
}

func cost(d Design) float64  { return d.Cost }
func width(d Design) float64 { return d.HalfWidth }

// prefer orders designs by first, then by second, then by the smaller n: whether x is better than y.
func prefer(first, second func(Design) float64) func(x, y Design) bool {
	return func(x, y Design) bool {
		if first(x) != first(y) {
			return first(x) < first(y)
		}
		if second(x) != second(y) {
			return second(x) < second(y)
		}
		return x.Labeled < y.Labeled
	}
}

// split returns a = σ²(1 − ρ₊²) and b = σ²ρ₊².
func split(sigma2, rho float64) (a, b float64) {
	r2 := max(rho, 0) * max(rho, 0)
	return sigma2 * (1 - r2), sigma2 * r2
}

// threshold is 2√γ/(1 + γ), γ = c_f/c_h.
func threshold(c Costs) float64 {
	g := c.Model / c.Human
	return 2 * math.Sqrt(g) / (1 + g)
}

func checkPlan(sigma2, rho float64, c Costs) error {
	switch {
	case !(sigma2 > 0) || math.IsInf(sigma2, 0):
		return fmt.Errorf("ppi: the humans' variance must be a positive number, not %v", sigma2)
	case !(rho >= -1 && rho <= 1):
		return fmt.Errorf("ppi: the PPI correlation must be between −1 and 1, not %v", rho)
	case !(c.Human > 0) || !(c.Model > 0) || math.IsInf(c.Human, 0) || math.IsInf(c.Model, 0):
		return fmt.Errorf("ppi: the cost per person (%v) and per model answer (%v) must be positive numbers", c.Human, c.Model)
	}
	return nil
}
