package tests

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workflows"
)

// TestLargeSpecRunsByReference runs a spec whose resolved form (30 items of 100,000 characters, 3 MB) no workflow
// input can carry: saved in the results store first, it is started by its digest, and the run's input stays a few
// hundred bytes. An input naming another digest than the store's fails at once as an invalid spec.
func TestLargeSpecRunsByReference(t *testing.T) {
	s := newStack(t, sim.Config{})
	spec := gridSpec(1, 1, 30, 1)
	for i := range spec.Questionnaire.Items {
		spec.Questionnaire.Items[i].Text = strings.Repeat("word ", 20_000)
	}
	inline := specInput(t, spec)
	if len(inline.Spec) < 3_000_000 {
		t.Fatalf("the test spec is %d bytes; it must exceed Temporal's 2 MB input limit", len(inline.Spec))
	}
	ctx := withTimeout(t, 3*time.Minute)

	// Inline, the server refuses it (the limit the starter works around).
	if _, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "big-inline", TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, inline); err == nil {
		t.Fatal("the server accepted a 3 MB workflow input; the test needs one that enforces Temporal's default limit")
	} else {
		t.Logf("inline: %v", err)
	}

	_, digest, err := activities.SaveSpec(ctx, s.store, "big", inline.Spec)
	if err != nil {
		t.Fatal(err)
	}
	in := wire.Input{RunID: "big", SpecDigest: digest}
	if b, err := in.MarshalJSON(); err != nil || len(b) > 500 {
		t.Fatalf("the input by reference is %d bytes (%v), want a few hundred", len(b), err)
	}
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "big", TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, in)
	if err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("run by reference: %v", err)
	}
	if res.Summary.OK+res.Summary.Unparsed != 30 {
		t.Fatalf("summary %+v, want 30 answered cells", res.Summary)
	}
	// The prompts carried the long items: the simulator counted their tokens.
	if res.Summary.PromptTokens < 30*20_000 {
		t.Fatalf("prompt tokens %d: the items' text did not reach the model", res.Summary.PromptTokens)
	}
}

func TestInputWithAnotherDigestFails(t *testing.T) {
	s := newStack(t, sim.Config{})
	spec := gridSpec(1, 1, 2, 1)
	ctx := withTimeout(t, time.Minute)
	if _, _, err := activities.SaveSpec(ctx, s.store, "tampered", specInput(t, spec).Spec); err != nil {
		t.Fatal(err)
	}
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "tampered", TaskQueue: wire.TaskQueue},
		workflows.ExperimentWorkflow, wire.Input{RunID: "tampered", SpecDigest: strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	err = run.Get(ctx, nil)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errclass.InvalidSpec || !strings.Contains(app.Message(), "digest") {
		t.Fatalf("run with a wrong digest: %v; want an InvalidSpec failure naming the digests", err)
	}
}
