package activities

import "sync"

// callGroup runs a pass's calls, each on a goroutine of its own as sync.WaitGroup.Go does, but hands a call to a
// goroutine whose call has ended when one is idle. A call's goroutine grows its stack to tens of kilobytes (HTTP,
// JSON); a new goroutine per call paid that growth every time (runtime.copystack: a tenth of a pass's CPU
// against a zero-latency server). At most as many goroutines run as calls were ever in flight at once.
//
// Go must not be called concurrently with Wait, as with a WaitGroup; after Wait the idle goroutines have ended
// and the group can be used again.
type callGroup struct {
	wg sync.WaitGroup
	mu sync.Mutex
	// work carries calls to idle goroutines, idle of which wait on it; Wait closes it.
	work chan func()
	idle int
}

// Go runs f on an idle goroutine of the group, or a new one.
func (g *callGroup) Go(f func()) {
	g.wg.Add(1)
	g.mu.Lock()
	if g.work == nil {
		g.work = make(chan func())
	}
	work := g.work
	if g.idle > 0 {
		g.idle--
		g.mu.Unlock()
		// The goroutine counted idle is about to receive, or receiving: Wait cannot close work first, since
		// it waits for f.
		work <- f
		return
	}
	g.mu.Unlock()
	go g.run(f, work)
}

// run runs f, then the calls work hands it, until Wait closes work.
func (g *callGroup) run(f func(), work chan func()) {
	for {
		f()
		g.mu.Lock()
		if g.work != work {
			g.mu.Unlock()
			g.wg.Done()
			return
		}
		g.idle++
		g.mu.Unlock()
		// Done after counting itself idle: once Wait returns, every goroutine is idle or gone, so closing
		// work ends them all.
		g.wg.Done()
		var ok bool
		if f, ok = <-work; !ok {
			return
		}
	}
}

// Wait waits for every call and ends the idle goroutines.
func (g *callGroup) Wait() {
	g.wg.Wait()
	g.mu.Lock()
	if g.work != nil {
		close(g.work)
		g.work, g.idle = nil, 0
	}
	g.mu.Unlock()
}
