package main

import (
	"strings"
	"testing"
)

func TestPromptPrintsTheCellsMessages(t *testing.T) {
	code, out, errs := runCLI(t, "prompt", quickstart, "--item", "3", "--persona", "farmer", "--seed", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// The seed is the cell's own (run.seed_per_cell, a spec file's default): SHA-256 of
	// "silico-cell-seed-v1\x002\x00sim/2/3/farmer", 8 bytes big-endian, low 31 bits (computed with Python's hashlib).
	for _, want := range []string{"# cell sim/2/3/farmer", "# seed 1590742080\n", "[system]", "Mr Dube is 56 years old", "[user]", `"Am always prepared."`, "5. Very Accurate"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := runCLI(t, "prompt", quickstart, "--item", "99", "--persona", "farmer"); code != exitUsage || !strings.Contains(errs, "--item") {
		t.Errorf("unknown item: exit %d, %q; want 2 naming --item", code, errs)
	}
}

// TestPromptOfACellID: --cell prints any cell of results.csv, a reversed order or a wording variant too, and a
// mistyped id is refused with the nearest id.
func TestPromptOfACellID(t *testing.T) {
	const bfi, wording = "../../examples/bfi/experiment.yaml", "../../examples/wording/experiment.yaml"
	code, out, errs := runCLI(t, "prompt", bfi, "--cell", "sim/2/A1/nurse/rev")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// The reversed cell lists the options last to first, relabelled by position.
	if !strings.Contains(out, "# cell sim/2/A1/nurse/rev\n") || !strings.Contains(out, "1. Very Accurate") {
		t.Errorf("reversed cell:\n%s", out)
	}
	code, out, errs = runCLI(t, "prompt", wording, "--cell", "sim/1/E1:para/farmer")
	if code != 0 || !strings.Contains(out, "Bring energy to every party I go to.") {
		t.Errorf("variant cell: exit %d, %s\n%s", code, errs, out)
	}
	code, _, errs = runCLI(t, "prompt", wording, "--cell", "sim/1/E1:pra/farmer")
	if code != exitUsage || !strings.Contains(errs, `(did you mean "sim/1/E1:para/farmer"?)`) {
		t.Errorf("mistyped cell: exit %d, %q", code, errs)
	}
	code, _, errs = runCLI(t, "prompt", wording, "--cell", "sim/1/E1:para/farmer", "--item", "E1")
	if code != exitUsage || !strings.Contains(errs, "--cell names the whole cell") {
		t.Errorf("--cell with --item: exit %d, %q", code, errs)
	}
}

func TestRunOverridesAndDryRun(t *testing.T) {
	code, out, errs := runCLI(t, "run", quickstart, "--dry-run", "--seeds", "1,2,3", "--on-error", "raise")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "3 seeds × 50 items × 10 personas = 1,500 calls") || !strings.Contains(out, "194,160") {
		t.Errorf("dry run output:\n%s", out)
	}
	code, _, errs = runCLI(t, "run", quickstart, "--dry-run", "--model", "gpt")
	if code != exitUsage || !strings.Contains(errs, "--model gpt") || !strings.Contains(errs, "it has sim") {
		t.Errorf("unknown model: exit %d, %q", code, errs)
	}
	code, _, errs = runCLI(t, "run", quickstart, "--dry-run", "--on-error", "explode")
	if code != exitUsage || !strings.Contains(errs, "run.on_error") {
		t.Errorf("bad on_error: exit %d, %q", code, errs)
	}
}
