package experiment

// SimulatorSettings configure the built-in model simulator that models with provider "sim" call, when the
// starter runs it in-process. They describe the fake provider, not the run: latency, the account's limits and
// injected faults.
type SimulatorSettings struct {
	// Latency of every call, and the uniform jitter around it ("300ms", "200ms").
	Latency Duration `json:"latency,omitempty"`
	Jitter  Duration `json:"jitter,omitempty"`
	// RPM and TPM the simulated account enforces with 429s (0: unlimited).
	RPM int `json:"rpm,omitempty"`
	TPM int `json:"tpm,omitempty"`
	// Faults are injected at these rates (0..1).
	Faults SimulatorFaults `json:"faults,omitempty"`
	// Outage is a window in which every model call fails the same way, then the provider recovers.
	Outage *SimulatorOutage `json:"outage,omitempty"`
	// BatchTime is how long the simulated provider takes to run a batch of batch mode, its requests completing
	// evenly over it (0: at once). A real provider takes minutes to hours.
	BatchTime Duration `json:"batch_time,omitempty"`
	// BatchEnqueuedTokens is the simulated organisation's enqueued-token limit per model for batches: a batch
	// whose input tokens and those of the model's batches in progress exceed it fails with token_limit_exceeded,
	// as OpenAI's do (0: no limit).
	BatchEnqueuedTokens int `json:"batch_enqueued_tokens,omitempty"`
	// Sampling is how the simulator chooses a chat answer's option: SimSamplingHash (empty: the default; a hash
	// of model, seed and messages) or SimSamplingSeeded (drawn from the option distribution its logprobs report,
	// with a uniform that depends on the request's seed alone, as llama.cpp's server samples).
	Sampling string `json:"sampling,omitempty"`
	// ServedModel is the model every answer says answered it, as a provider names the dated snapshot behind a
	// name (empty: the name asked for followed by "-2026-01-01"), and SystemFingerprint the system_fingerprint
	// of its OpenAI-shaped answers (empty: "fp_silico_sim").
	ServedModel       string `json:"served_model,omitempty"`
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
	// SnapshotChange answers the seeds from its from_seed on with another snapshot: a run answered by two
	// served models, as when a provider moves a name to a new snapshot between runs.
	SnapshotChange *SimulatorSnapshotChange `json:"snapshot_change,omitempty"`
	// PositionBias makes the simulated model favour the option at one place of the list as shown; nil: none.
	PositionBias *SimulatorPositionBias `json:"position_bias,omitempty"`
	// Preferences make the simulated model favour options by what they say, wherever they are shown: a weight per
	// option text (after its enumeration, "Neutral" for "3. Neutral"), options not named weighing 1. The answer
	// the position bias leaves alone is drawn with these weights, so a known content distribution holds in every
	// order.
	Preferences map[string]float64 `json:"preferences,omitempty"`
}

// SimulatorSnapshotChange is the second snapshot of SimulatorSettings.SnapshotChange: the calls whose seed is
// FromSeed or more are answered by ServedModel (empty: the name asked for followed by "-2026-02-01") with
// SystemFingerprint (empty: "fp_silico_sim2").
type SimulatorSnapshotChange struct {
	FromSeed          int    `json:"from_seed"`
	ServedModel       string `json:"served_model,omitempty"`
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
}

// Samplings of the simulator (SimulatorSettings.Sampling; package sim's Config.Sampling takes the same values).
const (
	SimSamplingHash   = "hash"
	SimSamplingSeeded = "seeded"
)

// SimSamplings returns the accepted values of SimulatorSettings.Sampling ("" is SimSamplingHash).
func SimSamplings() []string { return []string{SimSamplingHash, SimSamplingSeeded} }

// SimulatorPositionBias is a simulated order effect with a known size: with probability Strength (a function of
// the request, as every answer of the simulator) the answer is the option shown at Position (first or last), and
// the same share of the label's probability mass moves onto that option.
type SimulatorPositionBias struct {
	Position string  `json:"position"`
	Strength float64 `json:"strength"`
}

// The positions of SimulatorPositionBias.
const (
	PositionFirst = "first"
	PositionLast  = "last"
)

// SimulatorOutage is a provider outage: from After past the simulator's first model call, for For, every chat
// and embeddings call fails as Kind says.
type SimulatorOutage struct {
	After Duration `json:"after,omitempty"`
	For   Duration `json:"for,omitempty"`
	// Kind is how calls fail: OutageStatus (the default) answers Status with a JSON error, OutageHTML answers an
	// nginx error page, OutageRefuse closes the port (ECONNREFUSED). Refuse needs a simulator that owns its
	// listener: the one `starter run` starts has it; a simulator elsewhere takes its settings from its own flags.
	Kind string `json:"kind,omitempty"`
	// Status of OutageStatus (429, 500, 502, 503, 504; 0: 503) or OutageHTML (500, 502, 503, 504; 0: 502).
	// A 429 comes without Retry-After. Not allowed with OutageRefuse.
	Status int `json:"status,omitempty"`
}

// The kinds of SimulatorOutage.
const (
	OutageStatus = "status"
	OutageHTML   = "html"
	OutageRefuse = "refuse"
)

var (
	outageKinds    = []string{OutageStatus, OutageHTML, OutageRefuse}
	outageStatuses = map[string][]int{OutageStatus: {429, 500, 502, 503, 504}, OutageHTML: {500, 502, 503, 504}}
)

// SimulatorFaults are the simulator's fault rates, and the cells it always fails.
type SimulatorFaults struct {
	RateLimit float64 `json:"rate_limit,omitempty"`
	Quota     float64 `json:"quota,omitempty"`
	Server500 float64 `json:"server_500,omitempty"`
	Server503 float64 `json:"server_503,omitempty"`
	Hang      float64 `json:"hang,omitempty"`
	Drop      float64 `json:"drop,omitempty"`
	Malformed float64 `json:"malformed,omitempty"`
	// Length answers with the reply cut after its first token and finish_reason "length"; ContentFilter with
	// content null and finish_reason "content_filter". Both apply to chat calls only.
	Length        float64 `json:"length,omitempty"`
	ContentFilter float64 `json:"content_filter,omitempty"`
	// FailCells are cell ids ("model/seed/item/persona") whose every call is answered 500, as a real server does
	// for some outputs.
	FailCells []string `json:"fail_cells,omitempty"`
}
