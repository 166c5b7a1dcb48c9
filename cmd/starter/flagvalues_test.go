package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/store"
)

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "12h": 12 * time.Hour, "30m": 30 * time.Minute, "1d12h": 36 * time.Hour,
		"720h": 720 * time.Hour, "0": 0,
	} {
		if got, err := parseAge(in); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"7", "d", "1w", "7days", "1d-2h", "x7d", ""} {
		if got, err := parseAge(in); err == nil || !strings.Contains(err.Error(), "7d, 12h, 30m") {
			t.Errorf("parseAge(%q) = %v, %v; want an error saying what is accepted", in, got, err)
		}
	}
}

func TestCachePruneTakesDays(t *testing.T) {
	db := filepath.Join(t.TempDir(), "results.db")
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	code, out, errs := runCLI(t, "cache", "prune", "--older-than", "7d", "--store", db)
	if code != exitOK || !strings.Contains(out, "pruned 0 cache entries (written before ") {
		t.Errorf("--older-than 7d: exit %d, stdout %q, stderr %q; want 0 entries pruned", code, out, errs)
	}
	code, _, errs = runCLI(t, "cache", "prune", "--older-than", "7 days", "--store", db)
	if code != exitUsage || !strings.Contains(errs, "--older-than") || !strings.Contains(errs, "e.g. 7d, 12h, 30m") {
		t.Errorf("--older-than '7 days': exit %d, stderr %q; want %d naming the flag and what it takes", code, errs, exitUsage)
	}
}

func TestSeedsFlagSaysWhatItTakes(t *testing.T) {
	code, _, errs := runCLI(t, "run", cliQuickstart, "--dry-run", "--seeds", "1,one")
	if code != exitUsage || !strings.Contains(errs, "--seeds") || !strings.Contains(errs, `"one" is not a seed: seeds are whole numbers`) ||
		strings.Contains(errs, "strconv") {
		t.Errorf("--seeds 1,one: exit %d, stderr %q; want %d naming --seeds and what it takes, without strconv's words", code, errs, exitUsage)
	}
	code, out, errs := runCLI(t, "run", cliQuickstart, "--dry-run", "--seeds", "7", "--seeds", "8,9")
	if code != exitOK || !strings.Contains(out, "3 seeds × ") {
		t.Errorf("--seeds 7 --seeds 8,9: exit %d, stdout %q, stderr %q; want 3 seeds", code, out, errs)
	}
}

func TestPromptSuggestsIDs(t *testing.T) {
	code, _, errs := runCLI(t, "prompt", cliQuickstart, "--item", "3", "--persona", "nures")
	if code != exitUsage || !strings.Contains(errs, `--persona nures: the spec has no persona with this id (did you mean "nurse"?)`) ||
		!strings.Contains(errs, "persona ids: nurse, retiree, student") {
		t.Errorf("--persona nures: exit %d, stderr %q; want %d with nurse suggested and the ids listed", code, errs, exitUsage)
	}
	code, _, errs = runCLI(t, "prompt", cliQuickstart, "--item", "300", "--persona", "nurse")
	// 50 items: the list is cut after 12 ids.
	if code != exitUsage || !strings.Contains(errs, "--item 300") || !strings.Contains(errs, "(38 more)") {
		t.Errorf("--item 300: exit %d, stderr %q; want %d with a shortened list of the 50 ids", code, errs, exitUsage)
	}
}

func TestMissingRequiredFlagIsUsage(t *testing.T) {
	code, _, errs := runCLI(t, "prompt", cliQuickstart, "--item", "3")
	if code != exitUsage || !strings.Contains(errs, "want --item and --persona (or --cell with a cell id of results.csv)") {
		t.Errorf("prompt without --persona: exit %d, stderr %q; want %d saying what it needs", code, errs, exitUsage)
	}
}

func TestVersion(t *testing.T) {
	code, out, errs := runCLI(t, "--version")
	if code != exitOK || !strings.HasPrefix(out, "starter ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want \"starter <version> … go1.x\"", code, out, errs)
	}
}

func TestPromptOfAnEmbedSpec(t *testing.T) {
	code, _, errs := runCLI(t, "prompt", "../../examples/embed/experiment.yaml", "--item", "E1", "--persona", "x")
	if code != exitUsage || !strings.Contains(errs, "kind: embed spec") {
		t.Errorf("prompt of an embed spec: exit %d, stderr %q; want %d saying it is an embed spec", code, errs, exitUsage)
	}
}
