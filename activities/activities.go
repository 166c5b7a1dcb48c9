// Package activities holds the Temporal activities of an experiment run, the exported methods of *Activities
// that a worker registers: PrepareRun (saves the resolved spec in the results store and plans the passes),
// RunSeedPass (the calls of one pass, concurrently, each result written as it lands), FailUnfinished (records
// the cells a run will not call), ExportResults (writes the outputs; PrepareRun checks the output directory
// before the first pass) and CheckOutput (that check alone, which no workflow of this release schedules), and the batch pass's PlanBatchPass, SubmitBatch, AwaitBatch, PollBatch,
// CancelBatch, CollectBatch, CollectCandidates and CleanupBatch (a provider's batch API).
//
// Durability is split in two: Temporal retries a pass; the results store remembers every finished
// cell, so a retried or resumed pass calls only the cells that have no result yet.
package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/imagefetch"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
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
	// Client is the client of an OpenAI-compatible endpoint (providers openai and sim, and provider gemini's
	// OpenAI-compatible endpoint).
	Client(m experiment.Model) (*llm.Client, error)
	// AnthropicClient is the client of a model of provider anthropic.
	AnthropicClient(m experiment.Model) (*llm.AnthropicClient, error)
	// GeminiClient is the client of the native API of a model of provider gemini (its batches).
	GeminiClient(m experiment.Model) (*llm.GeminiClient, error)
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

// FailUnfinished records every cell of the range that has no result as failed with the given class and message,
// so the output always has every cell. Cells that have a result keep it.
func (a *Activities) FailUnfinished(ctx context.Context, in wire.FailInput) (wire.FailOutput, error) {
	var out wire.FailOutput
	n, err := a.failUnfinished(ctx, in, &out.CostUSD)
	out.Recorded = n
	return out, err
}

func (a *Activities) failUnfinished(ctx context.Context, in wire.FailInput, cost *usage.USD) (int, error) {
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
				ErrorMessage: in.Message, Attempts: in.Attempts, Tries: in.Tries})
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
