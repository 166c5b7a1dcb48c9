package experiment

import "testing"

// TestCallSeedOff: without the setting (a spec saved before it existed) and with false, every cell of a pass
// is sent the pass's seed value, as before.
func TestCallSeedOff(t *testing.T) {
	off := false
	for _, perCell := range []*bool{nil, &off} {
		s := gridSpec(2, 3, 4, 5)
		s.Run.SeedPerCell = perCell
		for i := range s.NumCells() {
			c := s.Cell(i)
			if got, want := s.CallSeed(c), s.Seeds[c.Seed]; got != want {
				t.Fatalf("seed_per_cell %v: CallSeed(%s) = %d, want the spec's seed %d", perCell, s.CellID(c), got, want)
			}
		}
	}
}

// TestCallSeedPerCell pins the derivation (values computed outside Go: Python's hashlib, the first 8 bytes
// big-endian masked to 31 bits), and checks that it is a pure function of (seed value, cell id): the same cell
// gets the same seed from a fresh copy of the spec, the cells of one pass get distinct seeds, and every seed
// fits Gemini's 32-bit signed seed without being negative.
func TestCallSeedPerCell(t *testing.T) {
	on := true
	s := gridSpec(2, 3, 4, 5)
	s.Run.SeedPerCell = &on
	pinned := map[string]int64{"m0/100/i0/p0": 1413271095, "m1/101/i3/p4": 1604172200}
	seen := map[int64]string{}
	for i := range s.NumCells() {
		c := s.Cell(i)
		id, got := s.CellID(c), s.CallSeed(c)
		if want, ok := pinned[id]; ok && got != want {
			t.Errorf("CallSeed(%s) = %d, want %d", id, got, want)
		}
		if got < 0 || got > 1<<31-1 {
			t.Errorf("CallSeed(%s) = %d, outside [0, 2^31-1]", id, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("cells %s and %s share seed %d", other, id, got)
		}
		seen[got] = id
		again := gridSpec(2, 3, 4, 5)
		again.Run.SeedPerCell = &on
		if g2 := again.CallSeed(again.Cell(i)); g2 != got || s.CallSeed(c) != got {
			t.Errorf("CallSeed(%s) is not stable: %d, then %d", id, got, g2)
		}
	}
}
