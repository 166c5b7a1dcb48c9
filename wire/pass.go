package wire

import (
	"time"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/usage"
)

// The types every part of a pass shares: what it is given (PassInput), what it reports while it runs (PassProgress,
// the heartbeat detail a retried attempt starts from) and what it returns (PassResult).

// PassInput is one RunSeedPass: a range of cells of one (model, seed) and this pass's share of the model's limits
// and of the run's budget.
type PassInput struct {
	RunID string
	Pass  experiment.Pass
	// Limits is this pass's share of its model's limits; Concurrency is already capped by run.max_concurrency.
	Limits ratelimit.Limits
	// Budgeted says the run has a budget; BudgetUSD is then this pass's share of it.
	Budgeted  bool
	BudgetUSD usage.USD
	// ModelAnswered says an earlier pass of the model got answers: its endpoint is known to exist, so a refused
	// connection is an outage to wait out, not a wrong base_url to fail fast on.
	ModelAnswered bool `json:",omitempty"`
}

// PassResult counts what a pass did. Cells already finished by an earlier attempt count as Done too.
type PassResult struct {
	Pass     int
	Cells    int
	Done     int
	OK       int
	Unparsed int
	Failed   int
	// Called is the number of requests this attempt sent; Retried the failed requests (rate limits included)
	// that were tried again, over all attempts.
	Called  int
	Retried int
	// Cached counts the cells answered from the response cache, over all attempts.
	Cached int
	// BudgetExhausted says the pass stopped because its next call could have exceeded its share of the budget;
	// its unfinished cells are recorded as failed with errclass.BudgetExhausted.
	BudgetExhausted bool
	// FirstFailure is the lowest index of a failed cell of the pass, -1 when none failed.
	FirstFailure int
	FirstError   string
	// Usage adds up the cells finished in this pass over all attempts.
	usage.Usage
}

// PassProgress is the heartbeat detail of RunSeedPass; a retried attempt starts from the last one recorded. Every
// heartbeat is recorded after the state it carries changed, never from a copy taken before.
type PassProgress struct {
	Pass int
	// Model is the id of the pass's model in the spec.
	Model   string `json:",omitempty"`
	Cells   int
	Done    int
	Failed  int
	Retried int
	Cached  int
	usage.Usage
	// Tries are the tries used so far by the unfinished cells that failed.
	Tries map[int]Tries `json:",omitempty"`
	// Answered says the model's endpoint answered at least once in this pass.
	Answered bool `json:",omitempty"`
	// LastFinished is when a cell last finished, or the pass first started: the stall timeout counts from it.
	LastFinished time.Time
	// LastClass and LastMessage are the last failure seen, the reason recorded when the pass gives up.
	LastClass   string `json:",omitempty"`
	LastMessage string `json:",omitempty"`
	// Outage is the model endpoint's circuit breaker while it is open: when the provider went down, why, the
	// backoff step and the next probe. A new attempt, on any worker, continues from it.
	Outage breaker.State `json:",omitzero"`
	// Provider says the same for people (the Web UI shows heartbeat details): "provider down for 2m10s
	// (503), next probe in 8s, no cell charged"; empty while the provider answers.
	Provider string `json:",omitempty"`
}

// Tries is what the transient failures of one cell have cost so far. Heartbeats carry it for every unfinished
// cell that failed, so a new attempt continues each cell's count instead of starting over.
type Tries struct {
	// Transient counts failures charged to the cell (server errors, transport errors, timeouts, malformed
	// bodies while the endpoint answered other cells); rate limits and outages never are. The Tries the judge
	// returns for a finished cell count its final request too (an answer, or a refusal of the request): they
	// are the record's tries.
	Transient int `json:"transient"`
	// Sent counts every request made for the cell, rate-limited ones and outages included.
	Sent int `json:"sent"`
	// LatencyMS is the latency of the last try.
	LatencyMS float64 `json:"latency_ms"`
}

// Share is a pass's part of its model's limits and of the run's budget. The workflow computes it so that the
// shares of all passes running at once add up to at most the model's limits and the run's budget, and a share
// never shrinks while its pass runs (see workflows).
type Share struct {
	Limits ratelimit.Limits
	// Budgeted says the run has a budget; BudgetUSD is then this pass's part of what is left of it.
	Budgeted  bool
	BudgetUSD usage.USD
}

// Outage is the payload of SignalOutage: the breaker of a pass's model endpoint as it stands.
type Outage struct {
	Pass  int
	Model string // the model's id in the spec
	State breaker.State
}
