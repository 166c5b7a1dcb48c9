package activities

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestCallGroupRunsEveryCallAndReusesGoroutines: every call runs once and Wait waits for all of them; calls
// started after others ended run on the goroutines those left idle, so no more goroutines run than calls were
// in flight at once; after Wait none is left, and the group works again.
func TestCallGroupRunsEveryCallAndReusesGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g callGroup
		var ran atomic.Int64
		release := make(chan struct{})
		var started sync.WaitGroup
		// Four calls in flight at once.
		for range 4 {
			started.Add(1)
			g.Go(func() { started.Done(); <-release; ran.Add(1) })
		}
		started.Wait()
		close(release)
		synctest.Wait() // the four are idle now
		g.mu.Lock()
		idle := g.idle
		g.mu.Unlock()
		if idle != 4 {
			t.Fatalf("%d idle goroutines after 4 calls ended, want 4", idle)
		}
		// One at a time: each reuses an idle goroutine, none is started.
		for range 100 {
			g.Go(func() { ran.Add(1) })
			synctest.Wait()
		}
		g.mu.Lock()
		idle = g.idle
		g.mu.Unlock()
		if idle != 4 {
			t.Errorf("%d idle goroutines after 100 calls one at a time, want the same 4", idle)
		}
		g.Wait()
		if ran.Load() != 104 {
			t.Errorf("%d calls ran, want 104", ran.Load())
		}
		synctest.Wait() // every goroutine of the group has ended, or the bubble reports it
		g.Go(func() { ran.Add(1) })
		g.Wait()
		if ran.Load() != 105 {
			t.Errorf("%d calls ran after reuse, want 105", ran.Load())
		}
	})
}
