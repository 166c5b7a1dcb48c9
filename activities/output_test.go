package activities

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

func TestOutputDirStaysUnderRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "out")
	outside := filepath.Join(base, "elsewhere")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir, want string // want "" means refused
	}{
		{"", filepath.Join(root, "run1")},
		{filepath.Join(root, "mine"), filepath.Join(root, "mine")},
		{"mine/sub", filepath.Join(root, "mine", "sub")},
		{root, root},
		{outside, ""},
		{"/etc", ""},
		{"../elsewhere", ""},
		{filepath.Join(root, "..", "out2"), ""},
		{filepath.Join(root, "link", "x"), ""},
	}
	a := &Activities{OutputRoot: root}
	for _, tt := range tests {
		got, err := a.outputDir(wire.ExportInput{RunID: "run1", Dir: tt.dir})
		if tt.want == "" {
			if err == nil {
				t.Errorf("outputDir(%q) = %q, want refused", tt.dir, got)
			} else if !strings.Contains(err.Error(), "--output-anywhere") {
				t.Errorf("outputDir(%q): %v, want the way out named", tt.dir, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("outputDir(%q) = %q, %v; want %q", tt.dir, got, err, tt.want)
		}
	}
	anywhere := &Activities{OutputRoot: root, OutputAnywhere: true}
	if got, err := anywhere.outputDir(wire.ExportInput{RunID: "r", Dir: outside}); err != nil || got != outside {
		t.Errorf("OutputAnywhere: outputDir = %q, %v; want %q", got, err, outside)
	}

	// ExportResults and CheckOutput refuse for good: no retry can change the directory.
	for name, err := range map[string]error{
		"ExportResults": func() error {
			_, err := a.ExportResults(context.Background(), wire.ExportInput{RunID: "r", Dir: outside})
			return err
		}(),
		"CheckOutput": a.CheckOutput(context.Background(), wire.ExportInput{RunID: "r", Dir: outside}),
	} {
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != errclass.OutputRefused {
			t.Errorf("%s = %v, want a non-retryable %s error", name, err, errclass.OutputRefused)
		}
	}
}

func TestSimulatorWarnings(t *testing.T) {
	spec := func(withBlock bool, models ...experiment.Model) *experiment.Spec {
		s := &experiment.Spec{Models: models}
		if withBlock {
			s.Simulator = &experiment.SimulatorSettings{Latency: experiment.Duration(300 * time.Millisecond)}
		}
		return s
	}
	simModel := experiment.Model{ID: "s", Provider: experiment.ProviderSim}
	remote := experiment.Model{ID: "r", Provider: experiment.ProviderSim, BaseURL: "http://127.0.0.1:1/v1"}
	openai := experiment.Model{ID: "o", Provider: experiment.ProviderOpenAI}
	tests := []struct {
		name string
		a    *Activities
		s    *experiment.Spec
		want string // "" means no warning
	}{
		{"no simulator, sim model", &Activities{}, spec(false, simModel, openai), "NO SIMULATOR"},
		{"no simulator, sim model with its own base_url", &Activities{}, spec(false, remote), ""},
		{"no simulator, no sim model", &Activities{}, spec(true, openai), ""},
		{"own simulator, spec settings", &Activities{HasSimulator: true}, spec(true, simModel), ""},
		{"shared simulator, spec settings", &Activities{HasSimulator: true, SimSettingsFixed: true}, spec(true, simModel), "do not apply"},
		{"shared simulator, no settings", &Activities{HasSimulator: true, SimSettingsFixed: true}, spec(false, simModel), ""},
	}
	for _, tt := range tests {
		got := tt.a.simulatorWarnings(tt.s)
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%s: warnings %q, want none", tt.name, got)
		case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
			t.Errorf("%s: warnings %q, want one with %q", tt.name, got, tt.want)
		}
	}
}

// TestPrepareRunRefusesOutputOutsideRoot: the run fails before any call when its output directory would be
// refused at export.
func TestPrepareRunRefusesOutputOutsideRoot(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	root := t.TempDir()
	a := &Activities{Store: st, OutputRoot: root}
	spec := `{"name":"x","models":[{"id":"m","name":"sim-model","provider":"sim"}],
"personas":[{"id":"p","attributes":{"name":"A"}}],
"questionnaire":{"options":[{"id":"1","text":"1. No","weight":1}],"items":[{"id":"1","text":"Q?"}]},`
	for _, tc := range []struct {
		output string
		ok     bool
	}{{`"/etc"`, false}, {`"../up"`, false}, {`"mine"`, true}, {`""`, true}} {
		_, err := a.PrepareRun(ctx, wire.PrepareInput{RunID: "r-" + tc.output, Spec: json.RawMessage(spec + `"output":` + tc.output + `}`)})
		var ae *temporal.ApplicationError
		switch {
		case tc.ok && err != nil:
			t.Errorf("output %s: %v, want accepted", tc.output, err)
		case !tc.ok && (!errors.As(err, &ae) || ae.Type() != errclass.OutputRefused || !ae.NonRetryable()):
			t.Errorf("output %s: %v, want a non-retryable %s error", tc.output, err, errclass.OutputRefused)
		}
	}
}
