// Package activities holds the Temporal activities of an experiment run: PrepareRun (saves the resolved spec in
// the results store), RunSeedPass (the calls of one pass, concurrently, each result written as it lands),
// FailUnfinished (records the cells a run will not call) and ExportResults (the output files).
//
// Durability is split in two: Temporal retries a pass; the results store remembers every finished
// cell, so a retried or resumed pass calls only the cells that have no result yet.
package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/imagefetch"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/wire"
)

// Store is what the activities need of the results store.
type Store interface {
	SaveRun(ctx context.Context, run string, spec []byte) error
	LoadRun(ctx context.Context, run string) ([]byte, error)
	Put(ctx context.Context, run string, recs []store.Record) error
	Records(ctx context.Context, run string, start, end int) ([]store.Record, error)
	Scan(ctx context.Context, run string, fn func(store.Record) error) error
	DeleteFailed(ctx context.Context, run string) (int, error)
	// SetElapsed records the run's wall time, so that exports made later from the store report it.
	SetElapsed(ctx context.Context, run string, d time.Duration) error
	cacheStore
}

// Models hands out the client of a model's endpoint. Clients are shared and reused. llm.Registry is one.
type Models interface {
	// Client is the client of an OpenAI-compatible endpoint (providers openai and sim).
	Client(m experiment.Model) (*llm.Client, error)
	// AnthropicClient is the client of a model of provider anthropic.
	AnthropicClient(m experiment.Model) (*llm.AnthropicClient, error)
}

// Activities holds the dependencies of the activities. Register registers its methods with a worker, each under
// its handle's name in package wire, through which workflows schedule them.
type Activities struct {
	Store     Store
	Models    Models
	Tokenizer *llm.Tokenizer
	Clock     ratelimit.Clock
	// Shares lets a running pass pick up a grown share of its limits and budget. Optional: without it a pass
	// keeps the share it started with.
	Shares Shares
	// OutputRoot is where ExportResults writes when the run names no output directory: OutputRoot/<run id>.
	// A run's own directory must lie under it, unless OutputAnywhere is set.
	OutputRoot     string
	OutputAnywhere bool
	// HasSimulator says that models with provider sim reach a simulator (Models has its URL).
	HasSimulator bool
	// SimSettingsFixed says that the simulator is shared by every run, so a spec's simulator settings do not
	// apply to it (a cluster worker's --sim, starter dev); the starter's own run starts one with them.
	SimSettingsFixed bool
	// HeartbeatEvery is how often RunSeedPass reports progress (default 1s).
	HeartbeatEvery time.Duration
	// Observe hears of calls, retries and queued cells, for metrics. Optional.
	Observe Observer
	// Images fetches the pictures of cells: one per worker process, shared by its passes (its LRU and its
	// downloads under way serve them all). nil: each pass gets its own.
	Images *imagefetch.Fetcher
	// Breakers holds the circuit breakers of the model endpoints, one per endpoint and model name, shared by every
	// pass of this worker. nil: the Activities makes its own set on first use.
	Breakers *breaker.Set
	// Outages tells a run's workflow when its models' providers go down and come back. Optional.
	Outages Outages
	// Specs holds the runs' decoded specs; nil: the Activities keeps its own. A process that saves specs (with
	// SaveSpec or SaveCanonical) and runs this worker shares one and puts the spec it saved (see SpecCache).
	Specs *SpecCache

	mu       sync.Mutex
	ownSpecs SpecCache
}

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
	// The saved spec is the JSON form of the resolved spec PrepareRun decoded, which the spec format accepts
	// as it is: it goes through the decoder every spec goes through, so a worker holds the same Spec (defaults
	// filled, templates compiled once by Validate) as the one that saved it.
	s, err := specfile.ParseInput(b, "saved spec of run "+run)
	if err != nil {
		return nil, fmt.Errorf("spec of run %s: %w", run, err)
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

// FailUnfinished records every cell of the range that has no result as failed with the given class and message,
// so the output always has every cell. Cells that have a result keep it.
func (a *Activities) FailUnfinished(ctx context.Context, in wire.FailInput) (wire.FailOutput, error) {
	var out wire.FailOutput
	n, err := a.failUnfinished(ctx, in, &out.CostUSD)
	out.Recorded = n
	return out, err
}

func (a *Activities) failUnfinished(ctx context.Context, in wire.FailInput, cost *float64) (int, error) {
	done, err := a.Store.Records(ctx, in.RunID, in.Start, in.End)
	if err != nil {
		return 0, fmt.Errorf("read finished cells: %w", err)
	}
	have := make(map[int]bool, len(done))
	for _, r := range done {
		have[r.Index] = true
		*cost += r.Usage().CostUSD
	}
	cells := in.Cells
	if cells == nil {
		cells = experiment.CellSet{{Start: in.Start, End: in.End}}
	}
	var recs []store.Record
	for i := range cells.All() {
		if i >= in.Start && i < in.End && !have[i] {
			recs = append(recs, store.Record{Index: i, Status: store.StatusFailed, ErrorClass: in.Class, ErrorCode: in.Code,
				ErrorMessage: in.Message, Attempts: in.Attempts})
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	if err := a.Store.Put(ctx, in.RunID, recs); err != nil {
		return 0, fmt.Errorf("record unfinished cells: %w", err)
	}
	return len(recs), nil
}

// exportHeartbeatEvery is how often ExportResults heartbeats; wire.ExportHeartbeatTimeout must be a few times it.
const exportHeartbeatEvery = 2 * time.Second

// ExportResults writes the run's outputs in submission order: results.jsonl, results.csv, summary.json and the
// analyses (see results.Export), or for an embed spec the vectors, their index and similarity matrices (see
// results.ExportEmbed).
func (a *Activities) ExportResults(ctx context.Context, in wire.ExportInput) (wire.ExportOutput, error) {
	dir, err := a.outputDir(in)
	if err != nil {
		return wire.ExportOutput{}, appError(errclass.OutputRefused, err)
	}
	s, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.ExportOutput{}, err
	}
	if err := a.Store.SetElapsed(ctx, in.RunID, in.Elapsed); err != nil {
		return wire.ExportOutput{}, fmt.Errorf("export run %s: %w", in.RunID, err)
	}
	// Heartbeats let a rerun after a dead worker start a new export within seconds (the heartbeat timeout),
	// not after the whole start-to-close timeout.
	hbCtx, stopHB := context.WithCancel(ctx)
	var hb sync.WaitGroup
	hb.Go(func() { tick(hbCtx, exportHeartbeatEvery, func() { activity.RecordHeartbeat(ctx) }) })
	sum, err := results.ExportFor(s)(ctx, a.Store, s, in.RunID, dir, in.Elapsed)
	stopHB()
	hb.Wait()
	if err != nil {
		return wire.ExportOutput{}, fmt.Errorf("export run %s: %w", in.RunID, err)
	}
	return wire.ExportOutput{Dir: dir, Summary: sum}, nil
}

// CheckOutput refuses, with a non-retryable OutputRefused error, an output directory ExportResults would
// refuse; a workflow calls it before the first pass so that a run is not paid for and then left unexported.
func (a *Activities) CheckOutput(ctx context.Context, in wire.ExportInput) error {
	if _, err := a.outputDir(in); err != nil {
		return appError(errclass.OutputRefused, err)
	}
	return nil
}

// outputDir is where the run's outputs go: OutputRoot/<run id>, or the run's own directory. A relative directory
// is taken relative to OutputRoot. Unless OutputAnywhere is set, the directory must lie under OutputRoot, also
// after resolving the symbolic links of the part of it that exists.
func (a *Activities) outputDir(in wire.ExportInput) (string, error) {
	root := a.OutputRoot
	if root == "" {
		root = "out"
	}
	if in.Dir == "" {
		return filepath.Join(root, in.RunID), nil
	}
	if a.OutputAnywhere {
		return in.Dir, nil
	}
	dir := in.Dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("output root: %w", err)
	}
	dir = filepath.Clean(dir)
	if !within(absRoot, dir) || !within(resolveExisting(absRoot), resolveExisting(dir)) {
		return "", fmt.Errorf("output directory %s is outside this worker's output root %s; "+
			"leave output unset, name a directory under the root, or start the worker with --output-anywhere", in.Dir, absRoot)
	}
	return dir, nil
}

// within reports whether path is root or lies under it (both clean and absolute).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveExisting resolves the symbolic links of the longest existing prefix of path and appends the rest.
func resolveExisting(path string) string {
	rest := ""
	for p := path; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// appError wraps err as a Temporal ApplicationError of the given class, retryable exactly when errclass's table
// says the class is retried, so an activity's errors and the workflow's retry policies (errclass.NonRetryable)
// cannot disagree. errclass.WorkerStopping is of the benign category: an attempt its worker's shutdown ended
// (Ctrl-C of starter run, a deploy) is how stopping works, not a fault, so the SDK logs it at debug level instead
// of as an ERROR "Activity error." line and counts no failure in its metrics. The category changes nothing in how
// the attempt is retried or how the workflow sees the error.
func appError(class string, err error) error {
	opts := temporal.ApplicationErrorOptions{NonRetryable: !errclass.Retryable(class), Cause: err}
	if class == errclass.WorkerStopping {
		opts.Category = temporal.ApplicationErrorCategoryBenign
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), class, opts)
}
