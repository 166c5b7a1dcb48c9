package experiment

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// cellSeedVersion names the derivation of CallSeed. It is part of the digested string, so a future derivation
// (a new version string) can never give a cell the seed another derivation gave it by accident.
const cellSeedVersion = "silico-cell-seed-v1"

// cellSeedMask keeps the low 31 bits of a derived seed: a non-negative number that fits a 32-bit signed integer
// (Gemini's seed), OpenAI's integer seed and llama.cpp's unsigned 32-bit one, and is never -1 or 2³²-1, which
// llama.cpp reads as "pick a random seed".
const cellSeedMask = 1<<31 - 1

// SeedPerCell reports whether each cell is sent a seed of its own (see CallSeed). A spec whose run settings do
// not say (a spec saved, or sent as a workflow input, before the setting existed) keeps the old behaviour: every
// cell of a pass is sent the pass's seed. A spec file that does not say gets true (specfile.Parse fills it in).
func (s *Spec) SeedPerCell() bool { return s.Run.SeedPerCell != nil && *s.Run.SeedPerCell }

// CallSeed is the seed sent with cell c's model call. With run.seed_per_cell false (or unset: see SeedPerCell)
// it is the spec's seed value of the cell, the same for every cell of a pass. With true it is derived from that
// seed value and the cell's id: the first 8 bytes of SHA-256("silico-cell-seed-v1\x00" + seed in decimal +
// "\x00" + CellID(c)), read big-endian, masked to their low 31 bits. Servers that seed their sampler with the
// request's seed (llama.cpp, vLLM) start every request of one seed at the same draw, so the same seed on every
// cell makes the written answers one correlated draw; a seed per cell makes them independent draws, and still
// reproducible. CallSeed is a pure function of the spec and the cell.
func (s *Spec) CallSeed(c Cell) int64 {
	seed := s.Seeds[c.Seed]
	if !s.SeedPerCell() {
		return seed
	}
	return cellSeed(seed, s.CellID(c))
}

// cellSeed is the seed per cell of CallSeed for the spec's seed value seed and the cell id cellID.
func cellSeed(seed int64, cellID string) int64 {
	sum := sha256.Sum256([]byte(cellSeedVersion + "\x00" + strconv.FormatInt(seed, 10) + "\x00" + cellID))
	return int64(binary.BigEndian.Uint64(sum[:8]) & cellSeedMask)
}
