package workflows

// batchBudget is a batch pass's share of budget_usd: what its submitted batches may cost at most (reserved) and
// what its collected ones cost (spent). Its chunks run in coroutines of one workflow, so no lock is needed.
type batchBudget struct {
	on                     bool
	limit, reserved, spent float64
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
	return b.reserved > 0
}

// freed says a reservation was settled since reserved was held and settles was seen.
func (b *batchBudget) freed(held float64, seen int) bool {
	if b.ownShare {
		return b.settles > seen
	}
	return b.reserved < held
}

// left is what the pass's share has left.
func (b *batchBudget) left() float64 { return max(0, b.limit-b.reserved-b.spent) }

// settle ends a reservation of cost, of which spent was paid.
func (b *batchBudget) settle(cost, spent float64) {
	if !b.on {
		return // nothing was reserved
	}
	b.reserved -= cost
	b.spent += spent
	b.holds--
	b.settles++
}
