package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// Run preparation: PrepareRun decodes, validates and saves a run's spec and plans it; the other activities read
// the saved spec back through spec.

// inputName names a workflow input in spec errors.
const inputName = "workflow input"

// PrepareRun decodes and validates the spec with the same strict decoder as spec files (an unknown key, a bad
// value: the same error, and the run fails at once without retries), saves its resolved form under the run id,
// so that passes load it from the store instead of carrying it through history, and returns the run's Plan.
// Saving the same spec again is a no-op (a resumed run); a different spec under the same id is refused. It
// refuses an output directory outside the worker's output root (see ExportResults), and warns in the worker's
// log when the run's models need a simulator this worker lacks, or when the spec's simulator settings do not
// apply to this worker's simulator.
func (a *Activities) PrepareRun(ctx context.Context, in wire.PrepareInput) (wire.Plan, error) {
	s, err := a.prepareSpec(ctx, in)
	if err != nil {
		return wire.Plan{}, err
	}
	if hasSpec(in.Spec) || in.SpecDigest != "" { // a fresh start, not a continuation: check and warn once per run
		// The output directory is checked as ExportResults will, so that a directory this worker refuses fails
		// the run before any call is paid for.
		var ctl struct {
			Output string `json:"output"`
		}
		if json.Unmarshal(in.Spec, &ctl) == nil {
			if _, err := a.outputDir(wire.ExportInput{RunID: in.RunID, Dir: ctl.Output}); err != nil {
				return wire.Plan{}, appError(errclass.OutputRefused, err)
			}
		}
		for _, w := range a.simulatorWarnings(s) {
			if activity.IsActivity(ctx) { // tests call PrepareRun directly
				activity.GetLogger(ctx).Warn(w, "run", in.RunID)
			}
		}
	}
	plan := planOf(s)
	if in.RetryFailed {
		n, err := a.Store.DeleteFailed(ctx, in.RunID)
		if err != nil {
			return wire.Plan{}, fmt.Errorf("clear failed cells of run %s: %w", in.RunID, err)
		}
		plan.Retrying = n
	}
	return plan, nil
}

// prepareSpec decodes, validates and saves the input's spec, or loads the saved one when the input has none.
func (a *Activities) prepareSpec(ctx context.Context, in wire.PrepareInput) (*experiment.Spec, error) {
	if in.SpecDigest != "" && !hasSpec(in.Spec) {
		return a.savedSpec(ctx, in.RunID, in.SpecDigest)
	}
	if !hasSpec(in.Spec) {
		s, err := a.spec(ctx, in.RunID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s: the input holds no spec and the results store has none saved under this id", in.RunID),
				errclass.InvalidSpec, err)
		}
		return s, err
	}
	s, _, err := SaveSpec(ctx, a.Store, in.RunID, in.Spec)
	switch {
	case errors.Is(err, ErrInvalidSpec):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errclass.InvalidSpec, err)
	case errors.Is(err, store.ErrSpecConflict):
		// Retrying cannot help: the store holds another spec's results under this id.
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s: %v; start the run under a new id (starter run --new)",
			in.RunID, err), errclass.InvalidSpec, err)
	case err != nil:
		return nil, err
	}
	a.specCache().Put(in.RunID, s)
	return s, nil
}

// ErrInvalidSpec wraps the errors of a spec that does not decode or validate.
var ErrInvalidSpec = errors.New("invalid spec")

// SpecSaver saves a run's spec; every store.Store is one.
type SpecSaver interface {
	SaveRun(ctx context.Context, run string, spec []byte) error
}

// SaveSpec decodes raw (a workflow input's JSON: spec keys and control keys) with the spec files' decoder and
// saves its resolved form under run, and returns the spec and the digest of the saved bytes. PrepareRun saves an
// inline spec this way, and a starter saves a spec it passes by reference this way, so both save the same bytes.
// A spec that does not decode is ErrInvalidSpec; another spec saved under run is store.ErrSpecConflict.
func SaveSpec(ctx context.Context, st SpecSaver, run string, raw json.RawMessage) (*experiment.Spec, string, error) {
	s, err := specfile.ParseInput(raw, inputName, wire.InputControlKeys()...)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, "", fmt.Errorf("encode spec: %w", err)
	}
	digest, err := SaveCanonical(ctx, st, run, b)
	if err != nil {
		return nil, "", err
	}
	return s, digest, nil
}

// SaveCanonical saves canonical, the canonical JSON of a spec that validated (experiment.Spec.Canonical), under
// run, and returns the digest of the saved bytes. They are the bytes SaveSpec would save for the same input:
// decoding canonical with the spec files' decoder and encoding the result gives canonical again, which
// TestCanonicalIsWhatSaveSpecSaves holds for every example spec. A starter that has the spec decoded saves it
// this way, without decoding a large spec a second time. Another spec saved under run is store.ErrSpecConflict.
func SaveCanonical(ctx context.Context, st SpecSaver, run string, canonical []byte) (string, error) {
	if err := st.SaveRun(ctx, run, canonical); err != nil {
		return "", fmt.Errorf("save run %s: %w", run, err)
	}
	return wire.SpecDigest(canonical), nil
}

// savedSpec loads the spec a starter saved for run, after checking that it is the one the input names.
func (a *Activities) savedSpec(ctx context.Context, run, digest string) (*experiment.Spec, error) {
	b, err := a.Store.LoadRun(ctx, run)
	if errors.Is(err, store.ErrNotFound) {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s: the input refers to a spec by its digest, "+
			"and the results store has none saved under this id: the starter saves it in the store the workers use (--store)", run),
			errclass.InvalidSpec, err)
	}
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", run, err)
	}
	if got := wire.SpecDigest(b); got != digest {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s: the results store holds a spec with digest %s, "+
			"the input names %s; start the run under a new id (starter run --new)", run, got, digest), errclass.InvalidSpec, nil)
	}
	return a.spec(ctx, run)
}

// hasSpec reports whether a workflow input holds spec keys, not only control keys.
func hasSpec(raw json.RawMessage) bool {
	if len(bytes.TrimSpace(raw)) == 0 {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return true // not an object: ParseInput says what is wrong with it
	}
	for _, k := range wire.InputControlKeys() {
		delete(obj, k)
	}
	return len(obj) > 0
}

func planOf(s *experiment.Spec) wire.Plan {
	p := wire.Plan{Name: s.Name, Cells: s.NumCells(), Passes: s.Passes(), Seeds: s.Seeds, Run: s.Run, BudgetUSD: s.BudgetUSD}
	for _, m := range s.Models {
		pm := wire.PlanModel{ID: m.ID, MaxConcurrency: m.MaxConcurrency, RPM: m.RPM, TPM: m.TPM, Burst: m.Burst}
		if s.Batched(m) {
			pm.Batch = s.BatchSettings(m)
		}
		p.Models = append(p.Models, pm)
	}
	return p
}

// spec returns the run's spec, loaded once per process.
func (a *Activities) spec(ctx context.Context, run string) (*experiment.Spec, error) {
	cache := a.specCache()
	if s, ok := cache.Get(run); ok {
		return s, nil
	}
	b, err := a.Store.LoadRun(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", run, err)
	}
	s, err := specfile.ParseSaved(b, run)
	if err != nil {
		return nil, err
	}
	cache.Put(run, s)
	return s, nil
}

func (a *Activities) specCache() *SpecCache {
	if a.Specs != nil {
		return a.Specs
	}
	return &a.ownSpecs
}

// simulatorWarnings says what is wrong with the simulator a spec's models get from this worker.
func (a *Activities) simulatorWarnings(s *experiment.Spec) []string {
	var out []string
	var simModels []string
	for _, m := range s.Models {
		if m.Provider == experiment.ProviderSim && m.BaseURL == "" {
			simModels = append(simModels, m.ID)
		}
	}
	switch {
	case len(simModels) > 0 && !a.HasSimulator:
		out = append(out, fmt.Sprintf("THIS WORKER HAS NO SIMULATOR: models %s use provider sim and every one of their "+
			"calls will fail (no_simulator); start the worker with --sim, or point it at a simulator with --sim-url",
			strings.Join(simModels, ", ")))
	case len(simModels) > 0 && s.Simulator != nil && a.SimSettingsFixed:
		out = append(out, "the spec's simulator settings (latency, rpm, tpm, faults) do not apply: this worker's "+
			"simulator is shared by every run and keeps the settings it was started with")
	}
	return out
}
