package activities

import (
	"sync"

	"github.com/silicolab/silico/experiment"
)

// SpecCache holds decoded run specs by run id, so that a process decodes each run's spec once. A process that
// saves a spec and runs a worker (the starter in embedded mode) shares one with its worker: the spec it decoded
// to save is the one the worker's activities use, instead of a second copy decoded from the saved bytes (a spec
// of 100,000 items is about 100 MB decoded). The zero value is ready to use.
type SpecCache struct {
	mu sync.Mutex
	m  map[string]*experiment.Spec
}

// Get returns the spec of run, if one was put.
func (c *SpecCache) Get(run string) (*experiment.Spec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[run]
	return s, ok
}

// Put records s as the spec of run. s must be the decoding of the spec saved under run: what SaveSpec returns, or
// the canonical copy whose JSON SaveCanonical saved (experiment.Spec.Canonical), validated.
func (c *SpecCache) Put(run string, s *experiment.Spec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*experiment.Spec)
	}
	c.m[run] = s
}
