package activities

import (
	"fmt"
	"sync"

	"github.com/silicolab/silico/usage"
)

// budget is a pass's share of the run's budget_usd: spent (cells finished, over all attempts) plus reserved (the
// worst case of the calls in flight) never exceeds limit, to the picodollar. A pass without a budget has a nil
// *budget, whose methods admit everything.
type budget struct {
	mu       sync.Mutex
	limit    usage.USD
	spent    usage.USD
	reserved usage.USD
}

// reserve reserves cost if it fits; it reports whether it did.
func (b *budget) reserve(cost usage.USD) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent+b.reserved+cost > b.limit {
		return false
	}
	b.reserved += cost
	return true
}

// settle ends a reservation; spent is what the call turned out to cost.
func (b *budget) settle(reserved, spent usage.USD) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.reserved -= reserved
	b.spent += spent
	b.mu.Unlock()
}

// grow raises the limit to l when l is larger (a share never shrinks); it reports whether it grew.
func (b *budget) grow(l usage.USD) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if l <= b.limit {
		return false
	}
	b.limit = l
	return true
}

func (b *budget) message() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("not run: the next call could exceed this pass's share of budget_usd (%s of %s spent)",
		b.spent.Display(), b.limit.Display())
}
