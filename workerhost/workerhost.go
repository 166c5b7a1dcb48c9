// Package workerhost builds the Temporal worker that hosts silico's workflow and activities. cmd/worker runs it
// against a Temporal cluster; the starter runs the same worker in-process beside the embedded server.
package workerhost

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/imagefetch"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workflows"
)

// Config holds a worker's dependencies and settings.
type Config struct {
	// Store is the results store (a *store.SQLite or *store.Postgres; store.Open picks one). Required.
	Store activities.Store
	// Getenv reads the API keys named by specs. Required (os.Getenv in production).
	Getenv func(string) string
	// Specs holds the decoded specs of runs, shared with whoever saves them in this process (the starter in
	// embedded mode). Optional: the worker keeps its own.
	Specs *activities.SpecCache
	// HTTPClient is shared by every model endpoint. Optional: defaults to a client tuned for many concurrent calls.
	HTTPClient *http.Client
	// SimURL is the base URL of the simulator that models with provider "sim" call. Optional: without it such
	// models fail (no_simulator), and the worker warns when a run uses one.
	SimURL string
	// SimSettingsFixed says the simulator at SimURL serves every run with its own settings, so a spec's
	// simulator block does not apply (the worker warns when a run has one).
	SimSettingsFixed bool
	// OutputRoot is where runs without an output directory are exported. Optional: defaults to experiment.DefaultOutputRoot.
	OutputRoot string
	// OutputAnywhere lets a run's output directory (wire.Input.Output) lie outside OutputRoot. Off, as
	// anyone who can start a workflow chooses that directory; the starter's in-process worker, which only its
	// own user drives, turns it on.
	OutputAnywhere bool
	// KeyEnvAllow lists the glob patterns of the environment variables that api_key_env may name. Nil means
	// llm.DefaultKeyEnvAllow (names ending in _API_KEY); an empty, non-nil list allows none.
	KeyEnvAllow []string
	// MaxConcurrentPasses caps the RunSeedPass activities this worker runs at once. Optional: defaults to 16.
	MaxConcurrentPasses int
	// Observe hears of model calls, for metrics (metrics.Prometheus.Calls). Optional.
	Observe activities.Observer
	// Breaker is the policy of the model endpoints' circuit breakers: when they open and how they probe.
	// Optional: the zero value is breaker's defaults (8 cells, probes 1 s doubling to 1 min). Tests shorten it.
	Breaker breaker.Policy
	// TaskQueue is the queue of the workflows and activities this worker serves, and so of the runs it continues.
	// Optional: wire.TaskQueue, every run of a cluster. The starter's own worker in the embedded default serves
	// the queue of its run alone (wire.RunQueue). The batch waits are served on wire.WaitQueueFor(TaskQueue).
	TaskQueue string
	// Clock is the activities' clock (their waits between a batch's polls among them). Optional: the real one;
	// tests that live through a day of batches in seconds give the worker and the simulator one
	// ratelimit.Scaled clock.
	Clock ratelimit.Clock
}

// NewHTTPClient returns the HTTP client for model endpoints: no overall timeout (each call has its own), and
// enough idle connections per host that a pass with hundreds of calls in flight reuses them.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}

// stopGrace is how long a stopping worker lets calls in flight land before it cancels them.
const stopGrace = 20 * time.Second

// New returns a worker on cfg.TaskQueue (wire.TaskQueue by default) with ExperimentWorkflow and the activities
// registered. The caller starts and stops it (worker.Run or Start/Stop).
func New(c client.Client, cfg Config) (worker.Worker, error) {
	if cfg.Store == nil || cfg.Getenv == nil {
		return nil, fmt.Errorf("workerhost: Store and Getenv are required")
	}
	allow := cfg.KeyEnvAllow
	if allow == nil {
		allow = []string{llm.DefaultKeyEnvAllow}
	}
	if err := llm.CheckKeyEnvAllow(allow); err != nil {
		return nil, fmt.Errorf("workerhost: %w", err)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = NewHTTPClient()
	}
	tok, err := llm.NewTokenizer()
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	// Results report where they were written; a path relative to this worker's directory would mean nothing to
	// the starter that prints it.
	root := cfg.OutputRoot
	if root == "" {
		root = experiment.DefaultOutputRoot
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, fmt.Errorf("output root: %w", err)
	}
	passes := cfg.MaxConcurrentPasses
	if passes <= 0 {
		passes = 16
	}
	queue := cfg.TaskQueue
	if queue == "" {
		queue = wire.TaskQueue
	}
	w := worker.New(c, queue, worker.Options{
		MaxConcurrentActivityExecutionSize: passes,
		// On Stop, passes stop sending and their calls in flight land and are recorded within this time
		// (RunSeedPass watches the worker's stop channel); only then are they cancelled.
		WorkerStopTimeout: stopGrace,
	})
	w.RegisterWorkflowWithOptions(workflows.ExperimentWorkflow, workflow.RegisterOptions{Name: wire.WorkflowType})
	acts := &activities.Activities{
		Store:            cfg.Store,
		Models:           llm.NewRegistry(hc, cfg.Getenv, cfg.SimURL, llm.WithKeyEnvAllow(allow)),
		Tokenizer:        tok,
		Clock:            cfg.Clock,
		OutputRoot:       root,
		OutputAnywhere:   cfg.OutputAnywhere,
		HasSimulator:     cfg.SimURL != "",
		SimSettingsFixed: cfg.SimSettingsFixed,
		Shares:           shares{c},
		Outages:          outages{c},
		// One breaker per model endpoint for the whole worker: every pass calling it sees the same outage.
		Breakers: breaker.NewSet(ratelimit.SystemClock(), cfg.Breaker),
		Observe:  cfg.Observe,
		// One fetcher per worker process: its LRU and its downloads under way serve every pass.
		Images: imagefetch.New(imagefetch.Config{Client: hc}),
		Specs:  cfg.Specs,
	}
	activities.Register(w, acts)
	// AwaitBatch sleeps between polls for as long as its batch runs: its own queue and slots, so that batches in
	// flight never hold the slots of passes and collects.
	waits := worker.New(c, wire.WaitQueueFor(queue), worker.Options{
		MaxConcurrentActivityExecutionSize: maxBatchWaits,
		DisableWorkflowWorker:              true,
		WorkerStopTimeout:                  stopGrace,
	})
	activities.RegisterWaits(waits, acts)
	return &host{Worker: w, waits: waits}, nil
}

// maxBatchWaits is how many provider batches one worker follows at once (AwaitBatch): each is a goroutine that
// mostly sleeps, and polls its provider about once a minute.
const maxBatchWaits = 1000

// host is a worker of both queues: its task queue (the workflow and every activity) and that queue's batch waits
// (AwaitBatch, wire.WaitQueueFor). It starts and stops them together.
type host struct {
	worker.Worker
	waits worker.Worker
}

// Start starts both workers.
func (h *host) Start() error {
	if err := h.waits.Start(); err != nil {
		return fmt.Errorf("start the batch waits' worker: %w", err)
	}
	if err := h.Worker.Start(); err != nil {
		h.waits.Stop()
		return err
	}
	return nil
}

// Run runs both workers until interruptCh delivers (worker.InterruptCh) or the main one fails.
func (h *host) Run(interruptCh <-chan any) error {
	if err := h.waits.Start(); err != nil {
		return fmt.Errorf("start the batch waits' worker: %w", err)
	}
	defer h.waits.Stop()
	return h.Worker.Run(interruptCh)
}

// Stop stops both workers.
func (h *host) Stop() {
	h.Worker.Stop()
	h.waits.Stop()
}

// shares asks a run's workflow for a pass's current share with a query: reads only, nothing enters history.
type shares struct{ c client.Client }

func (s shares) Share(ctx context.Context, workflowID string, pass int) (wire.Share, error) {
	v, err := s.c.QueryWorkflow(ctx, workflowID, "", wire.QueryShare, pass)
	if err != nil {
		return wire.Share{}, fmt.Errorf("query share of pass %d: %w", pass, err)
	}
	var sh wire.Share
	if err := v.Get(&sh); err != nil {
		return wire.Share{}, fmt.Errorf("decode share of pass %d: %w", pass, err)
	}
	return sh, nil
}

// outages tells a run's workflow of its providers' outages with a signal: a few history events per outage (it
// opened, each failed probe, it closed), which the workflow's progress query and the Web UI show.
type outages struct{ c client.Client }

func (o outages) Outage(ctx context.Context, workflowID string, out wire.Outage) error {
	if err := o.c.SignalWorkflow(ctx, workflowID, "", wire.SignalOutage, out); err != nil {
		return fmt.Errorf("signal outage of pass %d: %w", out.Pass, err)
	}
	return nil
}
