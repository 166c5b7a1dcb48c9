package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

// runsStore is a SQLite store holding three runs of two specs: a finished one, an interrupted --new run of the
// same spec (recorded running by a starter that is gone), and a cancelled run of another spec.
func runsStore(t *testing.T) *store.SQLite {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	save := func(id, name string) {
		spec := experiment.Spec{Name: name, Seeds: []int64{1}, Models: []experiment.Model{{ID: "m"}},
			Personas: []experiment.Persona{{ID: "p"}}, Questionnaire: experiment.Questionnaire{Items: []experiment.Item{{ID: "1"}, {ID: "2"}}}}
		if err := st.SaveRun(ctx, id, savedSpecJSON(t, spec)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // creation times to the millisecond order the list
	}
	save("silico-alpha-111", "alpha")
	save("silico-alpha-111-20261202T070000", "alpha")
	save("silico-beta-222", "beta")
	now := time.Now()
	for _, s := range []struct{ id, state string }{{"silico-alpha-111", store.RunCompleted},
		{"silico-alpha-111-20261202T070000", store.RunRunning}, {"silico-beta-222", store.RunCancelled}} {
		if err := st.SetRunState(ctx, s.id, s.state, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Put(ctx, "silico-alpha-111", []store.Record{{Index: 0, Status: store.StatusOK, CostUSD: usage.Dollars(0.5)},
		{Index: 1, Status: store.StatusFailed, ErrorClass: "Auth"}}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetElapsed(ctx, "silico-alpha-111", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRunsListsTheStoreWithoutAServer(t *testing.T) {
	ctx := context.Background()
	st := runsStore(t)
	rows, err := listRuns(ctx, st, nil, true, "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.ID+" "+r.Status)
	}
	want := []string{"silico-beta-222 cancelled", "silico-alpha-111-20261202T070000 interrupted", "silico-alpha-111 completed"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("runs = %q; want %q (newest first; running with no starter up is interrupted)", got, want)
	}
	if r := rows[2]; r.Name != "alpha" || r.Cells != 2 || r.OK != 1 || r.Failed != 1 || r.CostUSD != usage.Dollars(0.5) ||
		r.DurationSeconds != 3 || strings.Join(r.Models, ",") != "m" {
		t.Errorf("the finished run's row = %+v", r)
	}
	if rows, _ := listRuns(ctx, st, nil, true, "beta", "", 0); len(rows) != 1 || rows[0].ID != "silico-beta-222" {
		t.Errorf("--name beta: %+v", rows)
	}
	if rows, _ := listRuns(ctx, st, nil, true, "", "interrupted", 0); len(rows) != 1 || rows[0].Status != "interrupted" {
		t.Errorf("--status interrupted: %+v", rows)
	}
	if rows, _ := listRuns(ctx, st, nil, true, "", "", 1); len(rows) != 1 {
		t.Errorf("--limit 1: %d rows", len(rows))
	}
	// With --address and no server answering, a recorded state is shown as it is.
	if rows, _ := listRuns(ctx, st, nil, false, "", "running", 0); len(rows) != 1 {
		t.Errorf("not embedded: want the run recorded running shown running, got %+v", rows)
	}
}

func TestRunIDsResolveByUniquePrefix(t *testing.T) {
	ctx := context.Background()
	st := runsStore(t)
	for _, c := range []struct {
		ref, id string
		known   bool
	}{
		{"silico-beta", "silico-beta-222", true},
		{"silico-alpha-111", "silico-alpha-111", true}, // exact beats the longer id it prefixes
		{"silico-alpha-111-2026", "silico-alpha-111-20261202T070000", true},
		{"nope", "nope", false},
	} {
		id, known, err := resolveRun(ctx, st, c.ref)
		if err != nil || id != c.id || known != c.known {
			t.Errorf("resolveRun(%q) = %q, %v, %v; want %q, %v", c.ref, id, known, err, c.id, c.known)
		}
	}
	_, _, err := resolveRun(ctx, st, "silico-")
	var ce *codeError
	if !errors.As(err, &ce) || ce.code != exitUsage || !strings.Contains(err.Error(), "names 3 runs") ||
		!strings.Contains(err.Error(), "silico-beta-222") {
		t.Errorf("an ambiguous prefix: %v; want a usage error listing the 3 runs", err)
	}
}

// savedSpecJSON is the JSON a results store keeps of a spec like s: s made valid, as every saved spec is (a run
// saves its spec only once it validated), by a prompt, options, item texts and model names where s has none.
func savedSpecJSON(t *testing.T, s experiment.Spec) []byte {
	t.Helper()
	if len(s.Prompt.Messages) == 0 {
		s.Prompt = experiment.Prompt{Messages: []experiment.Message{{Role: "user", Content: "{{.Item.Text}}"}}}
	}
	if len(s.Questionnaire.Options.Options) == 0 {
		s.Questionnaire.Options.Options = []experiment.Option{{ID: "1", Text: "no", Weight: 1}, {ID: "2", Text: "yes", Weight: 2}}
	}
	for i := range s.Questionnaire.Items {
		s.Questionnaire.Items[i].Text = cmp.Or(s.Questionnaire.Items[i].Text, "Question "+s.Questionnaire.Items[i].ID)
	}
	for i := range s.Models {
		s.Models[i].Name = cmp.Or(s.Models[i].Name, s.Models[i].ID)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := specfile.ParseSaved(b, "fixture"); err != nil {
		t.Fatalf("the fixture is not a spec a run could save: %v", err)
	}
	return b
}
