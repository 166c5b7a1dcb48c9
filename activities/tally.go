package activities

import (
	"sync"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// tally counts what a pass finished: its PassResult and the PassProgress its heartbeats report. It is safe for
// concurrent use.
type tally struct {
	mu       sync.Mutex
	start    int
	finished []bool // by cell index - start
	res      wire.PassResult
	prog     wire.PassProgress
}

// init starts the counts of pass p from zero.
func (t *tally) init(p experiment.Pass) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = p.Start
	t.finished = make([]bool, p.Len())
	t.res = wire.PassResult{Pass: p.Index, Cells: p.Len(), FirstFailure: -1}
	t.prog = wire.PassProgress{Pass: p.Index, Cells: p.Len()}
}

// count adds a finished record. A cell is counted once, whatever records it gets.
func (t *tally) count(r store.Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := r.Index - t.start
	if t.finished[i] {
		return
	}
	t.finished[i] = true
	t.res.Done++
	t.prog.Done++
	switch r.Status {
	case store.StatusOK:
		t.res.OK++
	case store.StatusUnparsed:
		t.res.Unparsed++
	default:
		t.res.Failed++
		t.prog.Failed++
		if t.res.FirstFailure < 0 || r.Index < t.res.FirstFailure {
			t.res.FirstFailure = r.Index
			t.res.FirstError = r.ErrorClass + ": " + r.ErrorMessage
		}
	}
	if r.Cached {
		t.prog.Cached++
		t.res.Cached++
	}
	t.res.Add(r.Usage())
	t.prog.Add(r.Usage())
}

func (t *tally) isFinished(idx int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.finished[idx-t.start]
}

// unfinished counts the cells without a result.
func (t *tally) unfinished() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.finished) - t.res.Done
}

func (t *tally) called() {
	t.mu.Lock()
	t.res.Called++
	t.mu.Unlock()
}

func (t *tally) retried(n int) {
	t.mu.Lock()
	t.prog.Retried += n
	t.res.Retried = t.prog.Retried
	t.mu.Unlock()
}

func (t *tally) result() wire.PassResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.res
}

func (t *tally) progress() wire.PassProgress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.prog
}
