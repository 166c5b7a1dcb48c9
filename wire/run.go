package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"time"

	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/usage"
)

// Input is the workflow's input: a spec's JSON object (exactly what `starter validate --json` prints, so
// `temporal workflow start --input-file spec.json` works) with optional control keys beside the spec's own:
// run_id, output, state, retry_failed and spec_digest (InputControlKeys). The workflow never decodes the spec
// itself: PrepareRun does, with the same strict decoder as spec files, and the workflow uses the Plan it records
// in history.
type Input struct {
	// Spec is the input's JSON as it arrived, control keys included; empty after continue-as-new, when the run's
	// spec is read from the results store.
	Spec json.RawMessage `json:"-"`
	// RunID keys the run's results in the store; default: the workflow id.
	RunID string `json:"run_id,omitempty"`
	// Output is the directory, on the worker's machine, that ExportResults writes; default: <output root>/<run id>.
	Output string `json:"output,omitempty"`
	// State carries progress across continue-as-new; nil on a fresh start.
	State *State `json:"state,omitempty"`
	// RetryFailed makes a new execution of a finished run: its failed cells are cleared and called again, and
	// the outputs rewritten. Input{RunID: id, RetryFailed: true} with no spec retries run id from the store.
	RetryFailed bool `json:"retry_failed,omitempty"`
	// SpecDigest refers to a spec saved in the results store under RunID instead of carrying it (a spec of any
	// size; histories stay small): SpecDigest of the saved bytes. The input then has no spec keys.
	SpecDigest string `json:"spec_digest,omitempty"`
}

// inputControl is the control part of an Input's JSON: its fields' keys are InputControlKeys, so the encoder
// (which writes it over the spec's keys) and the decoder (which reads it) share one list.
type inputControl struct {
	RunID       string `json:"run_id,omitempty"`
	Output      string `json:"output,omitempty"`
	State       *State `json:"state,omitempty"`
	RetryFailed bool   `json:"retry_failed,omitempty"`
	SpecDigest  string `json:"spec_digest,omitempty"`
}

// InputControlKeys are the top-level keys of the workflow's input that are not the spec's: the JSON keys of its
// control fields (run_id, output, state, retry_failed, spec_digest), in that order. Input's encoder and decoder
// and PrepareRun's spec decoder all use this list, so they never disagree.
func InputControlKeys() []string {
	t := reflect.TypeFor[inputControl]()
	keys := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}

// UnmarshalJSON keeps the input as it is and reads its control keys. It never fails: an input that is not a
// JSON object is reported by PrepareRun as an invalid spec, once, instead of failing every workflow task.
func (in *Input) UnmarshalJSON(b []byte) error {
	var c inputControl
	_ = json.Unmarshal(b, &c)
	*in = Input{Spec: bytes.Clone(b), RunID: c.RunID, Output: c.Output, State: c.State, RetryFailed: c.RetryFailed,
		SpecDigest: c.SpecDigest}
	return nil
}

// MarshalJSON writes the spec object with the control keys set.
func (in Input) MarshalJSON() ([]byte, error) {
	obj := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(in.Spec)) > 0 {
		if err := json.Unmarshal(in.Spec, &obj); err != nil {
			return nil, fmt.Errorf("workflow input: the spec is not a JSON object: %w", err)
		}
	}
	for _, k := range InputControlKeys() {
		delete(obj, k)
	}
	ctl, err := json.Marshal(inputControl{RunID: in.RunID, Output: in.Output, State: in.State, RetryFailed: in.RetryFailed,
		SpecDigest: in.SpecDigest})
	if err != nil {
		return nil, fmt.Errorf("workflow input: %w", err)
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(ctl, &c); err != nil {
		return nil, fmt.Errorf("workflow input: %w", err)
	}
	maps.Copy(obj, c)
	return json.Marshal(obj) // map keys are sorted: the same input always has the same bytes
}

// NewInput is the input that starts a run of spec, with its defaults filled in (spec itself is not changed).
func NewInput(spec *experiment.Spec, runID, output string) (Input, error) {
	_, b, err := spec.Canonical()
	if err != nil {
		return Input{}, err
	}
	return Input{Spec: b, RunID: runID, Output: output}, nil
}

// SpecDigest is the digest of a saved spec by which a workflow input refers to it: the SHA-256, in hex, of the
// saved bytes.
func SpecDigest(saved []byte) string {
	sum := sha256.Sum256(saved)
	return hex.EncodeToString(sum[:])
}

// State is what a run carries across continue-as-new. All passes before Next have finished.
type State struct {
	Started time.Time `json:"started"`
	Next    int       `json:"next"`
	Totals  Progress  `json:"totals"`
	// DeadModels maps a model index to the terminal failure (errclass.DeadModel()) that ended it.
	DeadModels map[int]string `json:"dead_models,omitempty"`
	// Answered holds the models that answered in a finished pass: a refused connection to them is an outage.
	Answered map[int]bool `json:"answered,omitempty"`
	// Stopped is why the run stopped early (on_error=raise, budget), "" otherwise; StopClass is the error class
	// of the cells it leaves unrun.
	Stopped   string `json:"stopped,omitempty"`
	StopClass string `json:"stop_class,omitempty"`
	// Paused is the run's pause (SignalPause), nil while it is not paused: a run paused when it continues as new
	// stays paused.
	Paused *Paused `json:"paused,omitempty"`
}

// Paused says since when a run is paused and who paused it.
type Paused struct {
	Since time.Time `json:"since"`
	By    string    `json:"by,omitempty"`
}

// Progress is where a run stands, as far as the workflow knows (the answer to QueryProgress): cells of finished
// passes only (running passes report theirs in their heartbeats, PassProgress).
type Progress struct {
	RunID         string `json:"run_id"`
	Cells         int    `json:"cells"`
	Passes        int    `json:"passes"`
	PassesDone    int    `json:"passes_done"`
	PassesRunning int    `json:"passes_running"`
	CellsDone     int    `json:"cells_done"`
	Failed        int    `json:"failed"`
	Retried       int    `json:"retried"`
	// Cached counts the cells answered from the response cache; what they would have cost is SavedUSD.
	Cached int `json:"cached"`
	usage.Usage
	Stopped string `json:"stopped,omitempty"`
	// Paused is the run's pause, nil while it is not paused (and in the progress of workflows that ignore
	// SignalPause: those started before ChangeRunPause).
	Paused *Paused `json:"paused,omitempty"`
	// Outages are the running passes whose model's provider is down (its breaker open), by pass, as the passes
	// last signalled.
	Outages []Outage `json:"outages,omitempty"`
	// Batches are the provider batches of the run's batch passes, by key.
	Batches []BatchProgress `json:"batches,omitempty"`
}

// Result is what a finished run returns.
type Result struct {
	RunID     string  `json:"run_id"`
	OutputDir string  `json:"output_dir"`
	Summary   Summary `json:"summary"`
	Stopped   string  `json:"stopped,omitempty"`
}

// PrepareInput names a run and carries the spec as the workflow received it: a JSON object, perhaps with the
// workflow's control keys. An empty Spec means the run's spec is already in the store (continue-as-new).
type PrepareInput struct {
	RunID string
	Spec  json.RawMessage `json:",omitempty"`
	// RetryFailed removes the run's failed records first, so that its passes call those cells again.
	RetryFailed bool `json:",omitempty"`
	// SpecDigest starts a run whose spec the starter saved in the results store beforehand (a spec of any size,
	// which no workflow input could carry): the SHA-256, in hex, of the saved bytes (SpecDigest).
	SpecDigest string `json:",omitempty"`
}

// Plan is what ExperimentWorkflow needs to know of a run's spec. PrepareRun decides it once and Temporal records
// it in the workflow's history, so replaying a workflow never runs validation, defaults or planning again: a
// release that changes them cannot break a run in flight.
type Plan struct {
	Name   string
	Cells  int
	Passes []experiment.Pass
	Models []PlanModel
	Seeds  []int64
	// Run holds the run settings with their defaults filled in.
	Run       experiment.RunSettings
	BudgetUSD usage.USD
	// Retrying is the number of failed cells PrepareRun cleared to be called again (RetryFailed).
	Retrying int `json:",omitempty"`
}

// PlanModel is what the workflow needs of a model: its id and its limits, which it shares among passes.
type PlanModel struct {
	ID             string
	MaxConcurrency int
	RPM, TPM       int
	Burst          float64
	// Batch is the model's resolved batch settings when it runs in batch mode; zero (and absent from the
	// recorded plan) for a synchronous model, as in every plan recorded before batch mode existed.
	Batch experiment.BatchSettings `json:",omitzero"`
}

// FailInput names the cells of [Start, End) of a run that must be recorded as failed when they have no result.
type FailInput struct {
	RunID      string
	Start, End int
	// Cells, when set, are the cells of [Start, End) to record: those of one chunk of a batch pass.
	Cells experiment.CellSet `json:",omitempty"`
	Class string
	// Code is the provider's error code of the failure (llm.Error.Code), if it has one.
	Code     string `json:",omitempty"`
	Message  string
	Attempts int
	// Tries are the tries charged to each cell recorded (a batch round is a try of every cell it carries).
	Tries int `json:",omitempty"`
}

// FailOutput says what FailUnfinished recorded, and what the range's finished cells cost.
type FailOutput struct {
	Recorded int
	CostUSD  usage.USD
}

// ExportInput says which run to export and where.
type ExportInput struct {
	RunID string
	// Dir is the output directory on the worker's machine; "" means OutputRoot/<run id>.
	Dir     string
	Elapsed time.Duration
}

// ExportOutput is what ExportResults wrote.
type ExportOutput struct {
	Dir     string
	Summary Summary
}
