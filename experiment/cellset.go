package experiment

import (
	"encoding/json"
	"fmt"
	"iter"
)

// Span is the cell indexes from Start up to, not including, End.
type Span struct {
	Start, End int
}

// MarshalJSON writes a span as [start, end]: a plan of a million cells is a few spans, and each is a few bytes of
// workflow history.
func (s Span) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]int{s.Start, s.End})
}

// UnmarshalJSON reads a span written by MarshalJSON.
func (s *Span) UnmarshalJSON(b []byte) error {
	var v []int
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("cell span: %w", err)
	}
	if len(v) != 2 {
		return fmt.Errorf("cell span %s: want [start, end]", b)
	}
	if v[0] > v[1] || v[0] < 0 {
		return fmt.Errorf("cell span [%d, %d]: want 0 <= start <= end", v[0], v[1])
	}
	s.Start, s.End = v[0], v[1]
	return nil
}

// CellSet is a set of cell indexes written as their runs of consecutive indexes, in order: ascending, disjoint
// and not touching (so each set has one form). The cells a batch of a fresh run asks for are one span; cells
// the cache answered or earlier rounds recorded leave holes, and the set is never longer than the list of its
// indexes would be. Build one with CellsOf or a CellSetBuilder.
type CellSet []Span

// CellsOf returns the set of the given indexes, which must be ascending (duplicates are kept once).
func CellsOf(indexes ...int) CellSet {
	var b CellSetBuilder
	for _, i := range indexes {
		b.Add(i)
	}
	return b.Set()
}

// Len is the number of cells in the set.
func (c CellSet) Len() int {
	n := 0
	for _, s := range c {
		n += s.End - s.Start
	}
	return n
}

// All yields the set's indexes in ascending order.
func (c CellSet) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for _, s := range c {
			for i := s.Start; i < s.End; i++ {
				if !yield(i) {
					return
				}
			}
		}
	}
}

// Indexes returns the set's indexes in ascending order.
func (c CellSet) Indexes() []int {
	out := make([]int, 0, c.Len())
	for i := range c.All() {
		out = append(out, i)
	}
	return out
}

// Check reports a set that is not in its one form (spans ascending, disjoint, not touching, not empty).
func (c CellSet) Check() error {
	for i, s := range c {
		if s.Start >= s.End || s.Start < 0 {
			return fmt.Errorf("cell span %d [%d, %d]: want 0 <= start < end", i, s.Start, s.End)
		}
		if i > 0 && s.Start <= c[i-1].End {
			return fmt.Errorf("cell span %d [%d, %d] starts at or before the end %d of the one before", i, s.Start, s.End, c[i-1].End)
		}
	}
	return nil
}

// CellSetBuilder builds a CellSet from ascending indexes. The zero value is an empty builder.
type CellSetBuilder struct {
	set CellSet
}

// Add adds index i, which must not be less than the last one added; adding the last one again does nothing.
// It panics on a smaller index, a bug of the caller that would make a set of other cells.
func (b *CellSetBuilder) Add(i int) {
	n := len(b.set)
	switch {
	case n > 0 && i < b.set[n-1].End-1:
		panic(fmt.Sprintf("experiment: cell %d added after %d", i, b.set[n-1].End-1))
	case n > 0 && i < b.set[n-1].End:
		// the last index again
	case n > 0 && i == b.set[n-1].End:
		b.set[n-1].End++
	default:
		b.set = append(b.set, Span{i, i + 1})
	}
}

// Set returns the set built so far.
func (b *CellSetBuilder) Set() CellSet { return b.set }
