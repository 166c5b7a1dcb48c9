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
}

// SimulatorFaults are the simulator's fault rates, and the cells it always fails.
type SimulatorFaults struct {
	RateLimit float64 `json:"rate_limit,omitempty"`
	Quota     float64 `json:"quota,omitempty"`
	Server500 float64 `json:"server_500,omitempty"`
	Server503 float64 `json:"server_503,omitempty"`
	Hang      float64 `json:"hang,omitempty"`
	Drop      float64 `json:"drop,omitempty"`
	Malformed float64 `json:"malformed,omitempty"`
	// FailCells are cell ids ("model/seed/item/persona") whose every call is answered 500, as a real server does
	// for some outputs.
	FailCells []string `json:"fail_cells,omitempty"`
}
