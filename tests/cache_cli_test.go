package tests

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCacheFromTheCommandLine is the cache as a user meets it, with the starter binary on the quickstart: a run
// fills the cache, estimate then says every cell is cached, a --new rerun makes no call and says what it saved,
// --no-cache calls everything again, cache stats counts the lookups, and cache prune empties it.
func TestCacheFromTheCommandLine(t *testing.T) {
	bin := starterBin(t)
	dir := quickstartCopy(t)
	starter := func(args ...string) string {
		t.Helper()
		p := startProc(t, dir, bin, args...)
		if code := p.wait(t, 2*time.Minute); code != 0 {
			t.Fatalf("starter %s: exit %d\n%s", strings.Join(args, " "), code, p.dump())
		}
		return p.stdout.String()
	}
	run := func(log string, extra ...string) (out string, calls int) {
		t.Helper()
		path := filepath.Join(dir, log)
		out = starter(runArgs(t, path, append([]string{"--max-concurrency", "64"}, extra...)...)...)
		return out, countLines(path)
	}
	cachedNote := regexp.MustCompile(`the response cache already answers ([\d,]+) of 1,000 cells`)

	if out := starter("estimate", "experiment.yaml"); cachedNote.MatchString(out) || strings.Contains(out, "CACHED") {
		t.Fatalf("estimate before any run shows cached cells:\n%s", out)
	}
	out, calls := run("first.jsonl")
	if calls != 1000 || strings.Contains(out, "cache:") {
		t.Fatalf("first run: %d calls (want 1000), output:\n%s", calls, out)
	}
	// max_concurrency is not part of a request, so the spec without the override finds every cell cached.
	if m := cachedNote.FindStringSubmatch(starter("estimate", "experiment.yaml")); m != nil {
		if m[1] != "1,000" {
			t.Fatalf("estimate says %s cells cached, want 1,000", m[1])
		}
	} else {
		t.Fatal("estimate after a run does not say that the cache holds the cells")
	}

	out, calls = run("second.jsonl", "--new")
	saved := regexp.MustCompile(`cache: 1000 cells answered from the response cache, no call made · \$(\d+(?:\.\d+)?) saved`).FindStringSubmatch(out)
	if calls != 0 || saved == nil || saved[1] == "0" || !strings.Contains(out, "· cost $0\n") {
		t.Fatalf("--new rerun: %d calls (want 0), and its summary must say 1000 cells came from the cache, cost nothing, and what that saved:\n%s", calls, out)
	}
	if _, calls = run("third.jsonl", "--new", "--no-cache"); calls != 1000 {
		t.Fatalf("--no-cache rerun: %d calls, want 1000", calls)
	}

	stats := starter("cache", "stats")
	row := regexp.MustCompile(`(?m)^\s*sim-model\s+1,000\s+[\d.]+ KiB\s+1,000\s+1,000\s+0\s+50\.0%\s*$`)
	if !row.MatchString(stats) {
		t.Fatalf("cache stats must show 1,000 entries, 1,000 hits, 1,000 misses, none invalid:\n%s", stats)
	}
	if out := starter("cache", "prune", "--model", "sim-model"); !strings.Contains(out, "pruned 1,000 cache entries (of model sim-model)") {
		t.Fatalf("cache prune:\n%s", out)
	}
	if out := starter("estimate", "experiment.yaml"); cachedNote.MatchString(out) {
		t.Fatalf("estimate after prune still shows cached cells:\n%s", out)
	}
}
