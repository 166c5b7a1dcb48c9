package errclass

import (
	"os"
	"strings"
	"testing"
)

// TestTableIsConsistent checks the rules the derived lists rely on.
func TestTableIsConsistent(t *testing.T) {
	seen := map[Class]bool{}
	for _, in := range Table {
		if seen[in.Class] {
			t.Errorf("%s: listed twice", in.Class)
		}
		seen[in.Class] = true
		if in.Meaning == "" || in.Source == "" {
			t.Errorf("%s: no meaning or source", in.Class)
		}
		if in.EndsModel && in.Retry != Final {
			t.Errorf("%s ends its model but is %v: a retried attempt would fail the same way", in.Class, in.Retry)
		}
		if (in.Fix != FixNone) != (in.Check != "") {
			t.Errorf("%s: fix %v with check %q: a fix outside the run must say what to check, and only then", in.Class, in.Fix, in.Check)
		}
		if in.Fix != FixNone && !in.EndsModel {
			t.Errorf("%s: fixed outside the run but does not end its model", in.Class)
		}
	}
}

func TestLookups(t *testing.T) {
	if !Retryable(RateLimited) || Retryable(Auth) || Retryable(Skipped) || Retryable("NoSuchClass") {
		t.Error("Retryable: RateLimited is retried; Auth (final), Skipped (recorded) and unknown classes are not")
	}
	if !EndsModel(Unreachable) || EndsModel(InvalidRequest) || EndsModel("NoSuchClass") {
		t.Error("EndsModel: Unreachable ends its model; InvalidRequest and unknown classes do not")
	}
	for _, c := range DeadModel() {
		if !strings.Contains(strings.Join(NonRetryable(), ","), c) {
			t.Errorf("%s ends its model but Temporal would retry it", c)
		}
	}
}

// TestREADMETableIsGenerated checks that the README's table of error classes is Markdown(): regenerate it with
// SILICO_UPDATE_README=1 go test ./errclass.
func TestREADMETableIsGenerated(t *testing.T) {
	const begin, end = "<!-- error classes: generated from errclass.Table by its tests -->\n", "<!-- end of error classes -->"
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q … %q section", strings.TrimSpace(begin), end)
	}
	got, want := readme[i+len(begin):j], Markdown()
	if got == want {
		return
	}
	if os.Getenv("SILICO_UPDATE_README") == "1" {
		if err := os.WriteFile("../README.md", []byte(readme[:i+len(begin)]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's error classes differ from errclass.Table; run SILICO_UPDATE_README=1 go test ./errclass\n got:\n%s\nwant:\n%s", got, want)
}
