package activities

import (
	"sync"

	"github.com/silicolab/silico/experiment"
)

// memory holds, in cumulative mode, each persona's earlier questions and answers, which its next prompt carries.
// A pass without cumulative mode has a nil *memory, which remembers nothing.
type memory struct {
	mu    sync.Mutex
	turns [][]experiment.Turn // by persona index
}

func newMemory(cumulative bool, personas int) *memory {
	if !cumulative {
		return nil
	}
	return &memory{turns: make([][]experiment.Turn, personas)}
}

// of returns persona's turns so far. The slice is only ever appended to, so the caller may keep it.
func (m *memory) of(persona int) []experiment.Turn {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turns[persona]
}

// add appends one answered turn of persona.
func (m *memory) add(persona int, t experiment.Turn) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.turns[persona] = append(m.turns[persona], t)
	m.mu.Unlock()
}
