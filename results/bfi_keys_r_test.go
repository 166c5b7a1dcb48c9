package results_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/silicolab/silico/specfile"
)

// TestBFIKeysArePsych holds examples/bfi's keying to psych's own scoring keys for the bfi items (bfi.keys, read
// from the installed psych): every item psych keys "-" is reverse-keyed in the spec, every other one is not, and
// the spec has no item psych does not key. Skips when Rscript or psych is missing.
func TestBFIKeysArePsych(t *testing.T) {
	rscript := rscriptWith(t, "psych")
	// One line per item: its id, then "-" when psych reverses it, "+" otherwise.
	const script = `suppressPackageStartupMessages(library(psych))
k <- unlist(psych::bfi.keys)
cat(sprintf("%s %s\n", sub("^-", "", k), ifelse(startsWith(k, "-"), "-", "+")), sep = "")`
	out, err := exec.Command(rscript, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("Rscript: %v\n%s", err, out)
	}
	psych := map[string]bool{} // item id → reverse-keyed
	for line := range strings.Lines(string(out)) {
		id, sign, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || (sign != "+" && sign != "-") {
			t.Fatalf("Rscript printed %q, want an item id and + or -", line)
		}
		psych[id] = sign == "-"
	}
	if len(psych) != 25 {
		t.Fatalf("psych's bfi.keys key %d items, want the 25 of bfi", len(psych))
	}
	spec, err := specfile.Load("../examples/bfi/experiment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range spec.Questionnaire.Items {
		rev, ok := psych[it.ID]
		switch {
		case !ok:
			t.Errorf("item %s of examples/bfi is not among psych's bfi.keys", it.ID)
		case rev != it.Reversed:
			t.Errorf("item %s: examples/bfi keys it reversed=%v, psych's bfi.keys reversed=%v", it.ID, it.Reversed, rev)
		}
		delete(psych, it.ID)
	}
	for id := range psych {
		t.Errorf("psych keys item %s, which examples/bfi does not ask", id)
	}
}
