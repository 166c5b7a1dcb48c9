package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/sim"
)

// pastedCommand finds the starter command line that out names after marker (a line of its own, indented) and
// returns its arguments, without "starter".
func pastedCommand(t *testing.T, out, marker string) []string {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(marker) + ":?\\s*`?(starter [^\n`]+)")
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no command after %q in:\n%s", marker, out)
	}
	return strings.Fields(m[1])[1:]
}

// TestMissingKeyNamesTheCommandThatWorks: a run whose key variable is unset fails every cell with Auth; its end
// names the classes and the --retry-failed command, and running the same command again says it only exports
// the failures again. Once the key is set, the named command calls the failed cells and the run is complete.
func TestMissingKeyNamesTheCommandThatWorks(t *testing.T) {
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	const keyVar = "SILICO_NEXTSTEPS_TEST_API_KEY"
	t.Setenv(keyVar, "")
	spec := writeSpecFile(t, dir, "key.yaml", fmt.Sprintf(`name: key
seeds: [1]
models:
  - {id: m, name: gpt-4o-mini, base_url: %s/v1, api_key_env: %s, params: {max_tokens: 8}}
personas:
  - {id: p, attributes: {name: X}}
questionnaire:
  options: ["yes", "no"]
  items:
    - {id: "1", text: "I like tests."}
    - {id: "2", text: "I like tables."}
`, hs.URL, keyVar))
	state := filepath.Join(dir, "state")
	args := []string{"run", spec, "--state-dir", state, "--output", filepath.Join(dir, "out"), "--no-ui", "--port", "0"}
	code, out, errOut := runCLIFor(t, 2*time.Minute, args...)
	if code != exitCallsFailed {
		t.Fatalf("run without the key: exit %d, want %d\n%s\n%s", code, exitCallsFailed, out, errOut)
	}
	for _, want := range []string{"failed cells: 2 Auth", "the API key", "these failures come from the environment"} {
		if !strings.Contains(out, want) {
			t.Errorf("the end of a run without its key does not say %q:\n%s", want, out)
		}
	}
	retry := pastedCommand(t, out, "then call the failed cells again")
	if !strings.Contains(strings.Join(retry, " "), "--retry-failed") || !strings.Contains(strings.Join(retry, " "), "--state-dir "+state) {
		t.Errorf("the named command %v does not retry the failed cells on this state dir", retry)
	}

	// The key is set now, but the same command only attaches to the finished run: it says so.
	t.Setenv(keyVar, "sk-test")
	code, out, _ = runCLIFor(t, 2*time.Minute, args...)
	if code != exitCallsFailed || !strings.Contains(out, "this run had already ended, and its failures come from the environment") ||
		!strings.Contains(out, "only exports them again") {
		t.Errorf("the same command again: exit %d, want %d saying that it only exports the failures again:\n%s", code, exitCallsFailed, out)
	}

	// The named command works.
	code, out, errOut = runCLIFor(t, 2*time.Minute, append(retry, "--no-ui", "--port", "0", "--output", filepath.Join(dir, "out"))...)
	if code != exitOK || !strings.Contains(out, "Done: 2 cells") || !strings.Contains(out, " 0 failed") {
		t.Fatalf("%v: exit %d, want 0 with every cell ok\n%s\n%s", retry, code, out, errOut)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("the simulator answered %d calls; want the 2 cells once each", n)
	}
}

// TestKilledNewRunIsNamedWhenAttachingToAnOlderOne: in a folder that holds a finished run of a spec, a --new run
// of the same spec killed half way is not hidden: `starter run SPEC` attaches to the finished one and names the
// unfinished newer run and the command that finishes it, and that command does, asking no cell twice.
func TestKilledNewRunIsNamedWhenAttachingToAnOlderOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts starter processes")
	}
	dir := copyQuickstart(t)
	common := []string{"--seeds", "1", "--no-cache", "--port", "0", "--ui-port", "0"}
	first := startStarter(t, dir, append([]string{"run", "experiment.yaml"}, common...)...)
	if code := first.wait(t, 3*time.Minute, "the first run"); code != exitOK {
		t.Fatalf("first run: exit %d\n%s\n%s", code, first.out.String(), first.err.String())
	}
	fresh := startStarter(t, dir, append([]string{"run", "experiment.yaml", "--new"}, common...)...)
	var newID string
	pollFor(t, 2*time.Minute, "the --new run to record cells", func() bool {
		out, _, _ := runStarterIn(t, dir, "runs", "--json", "--status", "running")
		if m := regexp.MustCompile(`"id": "([^"]+)",\s*"name": "[^"]*",\s*"status": "running",\s*"cells": \d+,\s*"recorded": [1-9]`).FindStringSubmatch(out); m != nil {
			newID = m[1]
		}
		return newID != ""
	})
	if err := fresh.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	fresh.wait(t, time.Minute, "the killed run")

	again, errOut, code := runStarterIn(t, dir, append([]string{"run", "experiment.yaml"}, common...)...)
	if code != exitOK || !strings.Contains(again, "run "+newID) || !strings.Contains(again, "has not finished") {
		t.Fatalf("run SPEC after the killed --new run: exit %d; want it to name the unfinished run %s:\n%s\n%s", code, newID, again, errOut)
	}
	finish := pastedCommand(t, again, "has not finished;")
	out, errOut, code := runStarterIn(t, dir, append(finish, "--port", "0", "--ui-port", "0")...)
	if code != exitOK || !strings.Contains(out, "Done: 500 cells") || !strings.Contains(out, "500 ok") {
		t.Fatalf("%v: exit %d, want the killed run finished\n%s\n%s", finish, code, out, errOut)
	}
	list, _, _ := runStarterIn(t, dir, "runs", "--json")
	if strings.Count(list, `"status": "completed"`) != 2 {
		t.Errorf("after finishing the killed run, want both runs completed:\n%s", list)
	}
}

// TestA404EndpointNamesTheFix: a base_url without /v1 answers 404 on every call; the model is given up after a
// call or two, the end says NotFound, names the URL to write and the command to run once the spec is fixed, and
// that command, on the fixed spec, answers every cell.
func TestA404EndpointNamesTheFix(t *testing.T) {
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	personas := ""
	for i := range 20 {
		personas += fmt.Sprintf("  - {id: p%d, attributes: {name: X}}\n", i)
	}
	text := func(base string) string {
		return fmt.Sprintf(`name: v1
seeds: [1]
models:
  - {id: m, name: gpt-4o-mini, base_url: %s, api_key_env: SILICO_404_TEST_API_KEY, params: {max_tokens: 8}}
personas:
%squestionnaire:
  options: ["yes", "no"]
  items:
    - {id: "1", text: "I like tests."}
    - {id: "2", text: "I like tables."}
    - {id: "3", text: "I like chairs."}
run: {max_concurrency: 2}
`, base, personas)
	}
	t.Setenv("SILICO_404_TEST_API_KEY", "sk-test")
	spec := writeSpecFile(t, dir, "v1.yaml", text(hs.URL))
	state := filepath.Join(dir, "state")
	args := []string{"run", spec, "--state-dir", state, "--output", filepath.Join(dir, "out"), "--no-ui", "--port", "0"}
	code, out, errOut := runCLIFor(t, 2*time.Minute, args...)
	if code != exitCallsFailed {
		t.Fatalf("run against a base_url without /v1: exit %d, want %d\n%s\n%s", code, exitCallsFailed, out, errOut)
	}
	for _, want := range []string{"NotFound", "these failures come from the spec", "base_url"} {
		if !strings.Contains(out, want) {
			t.Errorf("the end does not say %q:\n%s", want, out)
		}
	}
	if sent := len(s.Requests()); sent > 4 {
		t.Errorf("%d calls sent to an endpoint that answers 404; want the model given up at the first", sent)
	}
	fix := pastedCommand(t, out, "then run it (a changed spec is a new run):")
	if strings.Join(fix, " ") != strings.Join(args[:2], " ")+" --state-dir "+state {
		t.Errorf("the named command is %v; want the spec run again on this state dir", fix)
	}
	// The fix: the URL with /v1, as the spec's note and the cells' message say.
	writeSpecFile(t, dir, "v1.yaml", text(hs.URL+"/v1"))
	code, out, errOut = runCLIFor(t, 2*time.Minute, append(fix, "--output", filepath.Join(dir, "out2"), "--no-ui", "--port", "0")...)
	if code != exitOK || !strings.Contains(out, "Done: 60 cells") || !strings.Contains(out, " 0 failed") {
		t.Fatalf("%v on the fixed spec: exit %d, want every cell answered\n%s\n%s", fix, code, out, errOut)
	}
}
