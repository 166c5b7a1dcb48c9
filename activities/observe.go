package activities

import (
	"time"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

// Observer hears what passes do, for metrics. Model is the model name sent to the provider. Every method must be
// safe for concurrent use and return at once.
type Observer interface {
	// Call is one request that came back after latency: outcome "ok", or the failure's class.
	Call(model, outcome string, latency time.Duration)
	// Used is what an answered call cost, or (SavedUSD) what a cell answered from the cache would have cost.
	Used(model string, u usage.Usage)
	// Retried is a failed request of a cell that will be tried again.
	Retried(model string)
	// Queued changes by delta the cells of running passes that wait for the model's limits (neither finished
	// nor in flight).
	Queued(model string, delta int)
	// Looked counts cache lookups of cells that finished.
	Looked(model string, t store.CacheTally)
	// Breaker is the state of the model endpoint's circuit breaker, reported by every running pass of the model
	// about once a second.
	Breaker(model string, st breaker.State)
}

// nopObserver is the Observer of a worker without metrics.
type nopObserver struct{}

func (nopObserver) Call(string, string, time.Duration) {}
func (nopObserver) Used(string, usage.Usage)           {}
func (nopObserver) Retried(string)                     {}
func (nopObserver) Queued(string, int)                 {}
func (nopObserver) Looked(string, store.CacheTally)    {}
func (nopObserver) Breaker(string, breaker.State)      {}

func (a *Activities) observer() Observer {
	if a.Observe == nil {
		return nopObserver{}
	}
	return a.Observe
}
