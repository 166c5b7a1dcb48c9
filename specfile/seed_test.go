package specfile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
)

// seedSpec is a small spec file; run is the body of its run section ("" for none).
func seedSpec(run string) string {
	s := `name: seeds
seeds: [7]
models: [{id: sim, name: sim-model, provider: sim}]
personas: [{id: p0}, {id: p1}]
questionnaire:
  name: q
  instruction: Answer.
  options: {options: [{id: "1", text: "1. No", weight: 1}, {id: "2", text: "2. Yes", weight: 2}]}
  items: [{id: a, text: A?}, {id: b, text: B?}]
`
	if run != "" {
		s += "run: {" + run + "}\n"
	}
	return s
}

// TestSeedPerCellDefaults: a spec file without run.seed_per_cell resolves to true, and so hashes to a new run id
// (unlike the same spec resolved before the setting existed); a spec that arrives as a workflow input or is read
// back from a store without the key keeps the old seeds; an explicit false is kept everywhere.
func TestSeedPerCellDefaults(t *testing.T) {
	file, err := Parse([]byte(seedSpec("")), "seeds.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if !file.SeedPerCell() {
		t.Fatalf("a spec file without the key: seed_per_cell %v, want true", file.Run.SeedPerCell)
	}
	c := file.Cell(3)
	if file.CallSeed(c) == file.Seeds[c.Seed] {
		t.Errorf("seed per cell: cell %s is sent the spec's seed %d", file.CellID(c), file.Seeds[c.Seed])
	}
	// The same spec as an older release saved it: its JSON without the key.
	old := *file
	old.Run.SeedPerCell = nil
	savedOld, err := json.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(savedOld), "seed_per_cell") {
		t.Fatalf("a spec without the setting encodes it: %s", savedOld)
	}
	for name, parse := range map[string]func([]byte) (*experiment.Spec, error){
		"ParseSaved": func(b []byte) (*experiment.Spec, error) { return ParseSaved(b, "run-1") },
		"ParseInput": func(b []byte) (*experiment.Spec, error) { return ParseInput(b, "input") },
	} {
		back, err := parse(savedOld)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if back.SeedPerCell() || back.Run.SeedPerCell != nil {
			t.Errorf("%s of a spec saved without the key: seed_per_cell %v, want unset (the old seeds)", name, back.Run.SeedPerCell)
		}
		for i := range back.NumCells() {
			if c := back.Cell(i); back.CallSeed(c) != back.Seeds[c.Seed] {
				t.Fatalf("%s: resumed old run sends cell %s seed %d, not its old %d", name, back.CellID(c), back.CallSeed(c), back.Seeds[c.Seed])
			}
		}
		if back.Hash() != old.Hash() {
			t.Errorf("%s: an old saved spec hashes to %s, not its run's %s", name, back.Hash(), old.Hash())
		}
		// What a spec file resolved today saves reads back with its setting.
		savedNew, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := parse(savedNew); err != nil || !again.SeedPerCell() || again.Hash() != file.Hash() {
			t.Errorf("%s of a spec saved with seed_per_cell true: %v, %v", name, again, err)
		}
	}
	if file.Hash() == old.Hash() {
		t.Errorf("seed_per_cell true and unset hash alike (%s): an old run id would be reinterpreted", file.Hash())
	}

	off, err := Parse([]byte(seedSpec("seed_per_cell: false")), "seeds.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if off.SeedPerCell() || off.Run.SeedPerCell == nil {
		t.Errorf("seed_per_cell: false resolved to %v", off.Run.SeedPerCell)
	}
	_, err = Parse([]byte(seedSpec("seed_per_cell: sometimes")), "seeds.yaml", "")
	if err == nil || !strings.Contains(err.Error(), "seeds.yaml:10") || !strings.Contains(err.Error(), "run.seed_per_cell") ||
		!strings.Contains(err.Error(), "want true or false") {
		t.Errorf("seed_per_cell: sometimes: err %v, want seeds.yaml:10 run.seed_per_cell: want true or false", err)
	}
}

// TestSimulatorSampling: simulator.sampling takes hash or seeded, and a typo is placed and named.
func TestSimulatorSampling(t *testing.T) {
	s, err := Parse([]byte(seedSpec("")+"simulator: {sampling: seeded}\n"), "seeds.yaml", "")
	if err != nil || s.Simulator == nil || s.Simulator.Sampling != experiment.SimSamplingSeeded {
		t.Fatalf("sampling: seeded: %v, %v", s, err)
	}
	_, err = Parse([]byte(seedSpec("")+"simulator: {sampling: seedy}\n"), "seeds.yaml", "")
	if err == nil || !strings.Contains(err.Error(), "seeds.yaml:10") || !strings.Contains(err.Error(), "simulator.sampling") ||
		!strings.Contains(err.Error(), `did you mean "seeded"`) || !strings.Contains(err.Error(), "hash") {
		t.Errorf("sampling: seedy: err %v, want seeds.yaml:10 simulator.sampling with a hint and the accepted values", err)
	}
}

// TestEarlierLeavesOutTheFileDefaults: a file that leaves run.seed_per_cell out has one earlier form, the spec
// without the key, which hashes as an earlier release's resolution of the file did (the same spec saved without
// it); the spec itself keeps its default. A file that writes the key, true or false, has none: no release ever
// resolved it otherwise.
func TestEarlierLeavesOutTheFileDefaults(t *testing.T) {
	file, err := Parse([]byte(seedSpec("")), "seeds.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(file.Defaulted) != 1 || file.Defaulted[0] != "run.seed_per_cell" {
		t.Fatalf("Defaulted %q, want [run.seed_per_cell]", file.Defaulted)
	}
	forms, keys, err := Earlier(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(forms) != 1 || len(keys) != 1 || len(keys[0]) != 1 || keys[0][0] != "run.seed_per_cell" {
		t.Fatalf("Earlier: %d forms, keys %q; want one without run.seed_per_cell", len(forms), keys)
	}
	old := *file
	old.Run.SeedPerCell = nil
	if forms[0].Run.SeedPerCell != nil || forms[0].Hash() != old.Hash() {
		t.Errorf("the earlier form has seed_per_cell %v and hash %s; want unset, the hash %s of the spec an earlier release saved",
			forms[0].Run.SeedPerCell, forms[0].Hash(), old.Hash())
	}
	if !file.SeedPerCell() {
		t.Errorf("Earlier changed the spec: seed_per_cell %v", file.Run.SeedPerCell)
	}
	for _, run := range []string{"seed_per_cell: true", "seed_per_cell: false"} {
		written, err := Parse([]byte(seedSpec(run)), "seeds.yaml", "")
		if err != nil {
			t.Fatal(err)
		}
		if forms, _, err := Earlier(written); err != nil || len(forms) != 0 || len(written.Defaulted) != 0 {
			t.Errorf("%s: %d earlier forms (Defaulted %q), %v; want none", run, len(forms), written.Defaulted, err)
		}
	}
}
