package experiment

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestCellSet(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, "null"},
		{[]int{4}, "[[4,5]]"},
		{[]int{0, 1, 2, 3}, "[[0,4]]"},
		{[]int{0, 1, 1, 3, 4, 9}, "[[0,2],[3,5],[9,10]]"},
	} {
		c := CellsOf(tc.in...)
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("CellsOf(%v) = %s, want %s", tc.in, b, tc.want)
		}
		if err := c.Check(); err != nil {
			t.Errorf("CellsOf(%v).Check: %v", tc.in, err)
		}
		var back CellSet
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		want := slices.Compact(slices.Clone(tc.in))
		if got := back.Indexes(); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("%s read back as %v, want %v", b, got, want)
		}
		if back.Len() != len(want) {
			t.Errorf("%s: Len %d, want %d", b, back.Len(), len(want))
		}
	}
}

func TestCellSetRefusesOtherForms(t *testing.T) {
	for _, s := range []string{`[[3,1]]`, `[[-1,2]]`, `[[1,2,3]]`, `[5]`} {
		var c CellSet
		if err := json.Unmarshal([]byte(s), &c); err == nil {
			if err := c.Check(); err == nil {
				t.Errorf("%s read as %v without an error", s, c)
			}
		}
	}
	for _, c := range []CellSet{{{0, 2}, {2, 4}}, {{3, 4}, {0, 1}}, {{2, 2}}} {
		if err := c.Check(); err == nil {
			t.Errorf("%v: Check passed, want an error", c)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("adding a smaller index did not panic")
		}
	}()
	var b CellSetBuilder
	b.Add(5)
	b.Add(3)
}
