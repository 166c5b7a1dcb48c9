package errclass

import (
	"fmt"
	"os"
	"slices"
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
		if !slices.Contains(NonRetryable(), c) {
			t.Errorf("%s ends its model but Temporal would retry it", c)
		}
	}
}

// TestDecisionsAreRecorded: whether a class is retried and whether it ends its model decide what a workflow
// schedules next (a model's later passes run or are failed at once; Temporal retries an attempt or not), so a
// change to either for an existing class changes what replaying a recorded history does. testdata/decisions.txt
// holds them as released; a change shows here and goes behind workflow.GetVersion (docs/architecture.md,
// "Changing workflow code") before the file is regenerated with SILICO_UPDATE_DECISIONS=1. A new class is a new
// line, which changes nothing recorded.
func TestDecisionsAreRecorded(t *testing.T) {
	var b strings.Builder
	for _, in := range Table {
		fmt.Fprintf(&b, "%s retry=%s ends_model=%s\n", in.Class, in.Retry, yesNo(in.EndsModel))
	}
	const path = "testdata/decisions.txt"
	if os.Getenv("SILICO_UPDATE_DECISIONS") == "1" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for l := range strings.Lines(b.String()) {
		c, _, _ := strings.Cut(l, " ")
		got[c] = l
	}
	for l := range strings.Lines(string(want)) {
		c, _, _ := strings.Cut(l, " ")
		if got[c] != l {
			t.Errorf("released %q, now %q: a workflow replaying a recorded history would decide differently", strings.TrimSpace(l), strings.TrimSpace(got[c]))
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
