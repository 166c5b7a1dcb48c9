package main

import (
	"strings"
	"testing"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/wire"
)

func TestStartNotesSayWhatWouldFailAtStart(t *testing.T) {
	spec, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	getenv := func(k string) string { return env[k] }
	if notes := startNotes(spec, getenv); len(notes) != 0 {
		t.Fatalf("the quickstart has notes: %q", notes)
	}
	spec.Models = append(spec.Models,
		experiment.Model{ID: "hf", Name: "x", APIKeyEnv: "HF_TOKEN"},
		experiment.Model{ID: "oa", Name: "gpt-4o-mini", APIKeyEnv: "OPENAI_API_KEY"},
		experiment.Model{ID: "an", Name: "claude", Provider: experiment.ProviderAnthropic, APIKeyEnv: "ANTHROPIC_API_KEY"})
	spec.Questionnaire.Items[0].Text = strings.Repeat("long ", 500_000)
	notes := strings.Join(startNotes(spec, getenv), "\n")
	for _, want := range []string{"more than a Temporal workflow input may carry", "models[1].api_key_env: workers read only variables matching *_API_KEY",
		"models[3].api_key_env: ANTHROPIC_API_KEY is not set here", "models[3].provider: Anthropic's API has no seed"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "models[2]") {
		t.Errorf("a set, allowed key got a note:\n%s", notes)
	}
	env[llm.KeyEnvAllowVar] = "*_API_KEY,HF_TOKEN"
	if strings.Contains(strings.Join(startNotes(spec, getenv), "\n"), "models[1].api_key_env: workers read only") {
		t.Error("a variable the allow-list names still gets the allow-list note")
	}
}

// TestStartNotesGreedySeeds: starter validate notes a model at temperature 0 in a spec of several seeds, and
// only that model.
func TestStartNotesGreedySeeds(t *testing.T) {
	spec, err := specfile.Load(cliQuickstart)
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	greedy := spec.Models[0]
	greedy.ID, greedy.Params.Temperature = "greedy", &zero
	spec.Models = append(spec.Models, greedy)
	notes := startNotes(spec, func(string) string { return "" })
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "models[1].params.temperature: model greedy has 2 seeds at temperature 0") {
		t.Errorf("notes %q; want one for the greedy model", notes)
	}
}

// TestPrintSummaryWarnings: starter run's final lines end a run's summary with its warnings, one a line.
func TestPrintSummaryWarnings(t *testing.T) {
	var b strings.Builder
	w := "model sim was answered by 2 served models (a, b): its cells mix models; compare them by the served_model column"
	printSummary(&b, wire.Result{Summary: wire.Summary{Cells: 2, OK: 2, Errors: []string{}, Warnings: []string{w}}})
	if !strings.Contains(b.String(), "\n  warning: "+w+"\n") {
		t.Errorf("summary lines:\n%s\nwant the warning", b.String())
	}
}
