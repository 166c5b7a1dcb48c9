package workflows

import (
	"math/bits"

	"github.com/silicolab/silico/usage"
)

// batchBudget is a batch pass's share of budget_usd: what its submitted batches may cost at most (reserved) and
// what its collected ones cost (spent). Its chunks run in coroutines of one workflow, so no lock is needed.
//
// Since wire.ChangeBatchBudgetUSD (exact) it counts whole picodollars: a submission fits when its worst case is
// at most limit − reserved − spent, exactly. Runs recorded before compared float64 sums, and replay so: every
// amount is a money, which carries both.
type batchBudget struct {
	on                     bool
	exact                  bool
	limit, reserved, spent money
	// holds counts the reservations not yet settled and settles the settlements so far. A chunk waits on them,
	// not on reserved: the float sum of reservations made and settled need not come back to exactly 0, and a
	// chunk that waited for a residue above 0 to fall waited forever. Runs recorded before
	// wire.ChangeBatchBudgetPerPass (ownShare false) keep waiting on reserved, as they did.
	holds, settles int
	// spentOut says a submission of the pass did not fit its share: the pass submits nothing more.
	spentOut bool
	// ownShare says a budget stop halts only the passes whose share is spent (wire.ChangeBatchBudgetPerPass);
	// false, in runs recorded before, any stop of the run halts every batch pass.
	ownShare bool
}

// holding says another chunk of the pass holds a reservation, whose settlement may leave room.
func (b *batchBudget) holding() bool {
	if b.ownShare {
		return b.holds > 0
	}
	return b.reserved.f > 0
}

// freed says a reservation was settled since reserved was held and settles was seen.
func (b *batchBudget) freed(held money, seen int) bool {
	if b.ownShare {
		return b.settles > seen
	}
	return b.reserved.f < held.f
}

// left is what the pass's share has left.
func (b *batchBudget) left() money {
	return money{usd: max(0, b.limit.usd-b.reserved.usd-b.spent.usd), f: max(0, b.limit.f-b.reserved.f-b.spent.f)}
}

// fits says cost fits what the share has left.
func (b *batchBudget) fits(cost money) bool {
	left := b.left()
	if b.exact {
		return cost.usd <= left.usd
	}
	return cost.f <= left.f
}

// grow raises the share to limit when limit is larger: a share never shrinks.
func (b *batchBudget) grow(limit money) {
	b.limit = money{usd: max(b.limit.usd, limit.usd), f: max(b.limit.f, limit.f)}
}

// take reserves cost.
func (b *batchBudget) take(cost money) {
	b.reserved = b.reserved.plus(cost)
	b.holds++
}

// settle ends a reservation of cost, of which spent was paid.
func (b *batchBudget) settle(cost, spent money) {
	if !b.on {
		return // nothing was reserved
	}
	b.reserved = b.reserved.minus(cost)
	b.spent = b.spent.plus(spent)
	b.holds--
	b.settles++
}

// money is an amount a batch pass's budget counts: usd, exact, and f, the float64 that runs recorded before
// wire.ChangeBatchBudgetUSD computed for the same amount, which their replays compare as they did. An amount
// read from a payload has f = usd.Float(), the float64 those runs read (see Money in package wire).
type money struct {
	usd usage.USD
	f   float64
}

// moneyOf is d as both.
func moneyOf(d usage.USD) money { return money{usd: d, f: d.Float()} }

func (m money) plus(o money) money { return money{usd: m.usd + o.usd, f: m.f + o.f} }

func (m money) minus(o money) money { return money{usd: m.usd - o.usd, f: m.f - o.f} }

// split is m in two parts, for k of n cells and for the rest: exactly, the first rounded down and the second what
// is left, so that they add up to m; in float64, each m·cells/n as runs recorded before computed it. m is not
// negative and 0 ≤ k ≤ n, n > 0.
func (m money) split(k, n int) (money, money) {
	hi, lo := bits.Mul64(uint64(m.usd), uint64(k))
	q, _ := bits.Div64(hi, lo, uint64(n)) // hi < n, as m·k/n ≤ m
	first := usage.USD(q)
	return money{usd: first, f: m.f * float64(k) / float64(n)},
		money{usd: m.usd - first, f: m.f * float64(n-k) / float64(n)}
}
