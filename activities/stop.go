package activities

import (
	"context"
	"sync"

	"github.com/silicolab/silico/llm"
)

// stopReason says why a pass stopped dispatching before its cells ran out. The first reason wins.
type stopReason int

const (
	running         stopReason = iota
	stopFatal                  // Auth or QuotaExhausted: no call of the model can succeed
	stopUnreachable            // the endpoint never answered
	stopStalled                // nothing finished for run.stall_timeout
	stopBudget                 // the next call could exceed the pass's share of the budget
	stopRaise                  // on_error=raise and a cell failed
	stopCancelled              // the attempt's context ended (workflow cancelled, heartbeat lost, timed out)
	stopWorker                 // the worker is stopping
)

// stopper ends a pass's dispatch once, for the first reason given: it cancels the dispatch context, so that the
// dispatcher and everything waiting on a gate returns, while the calls in flight (on another context) land.
type stopper struct {
	halt context.CancelFunc

	mu     sync.Mutex
	reason stopReason
	fatal  *llm.Error
}

func newStopper(halt context.CancelFunc) *stopper { return &stopper{halt: halt} }

// stop ends the dispatch for reason, unless an earlier reason already did.
func (s *stopper) stop(reason stopReason) {
	s.mu.Lock()
	if s.reason == running {
		s.reason = reason
	}
	s.mu.Unlock()
	s.halt()
}

// fail ends the dispatch because no call of the model can succeed (e: Auth or QuotaExhausted).
func (s *stopper) fail(e *llm.Error) {
	s.mu.Lock()
	if s.fatal == nil {
		s.fatal = e
	}
	s.mu.Unlock()
	s.stop(stopFatal)
}

func (s *stopper) why() stopReason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

func (s *stopper) fatalError() *llm.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}
