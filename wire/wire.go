// Package wire is everything that crosses the Temporal boundary between silico's workflow, its activities and
// its clients, and so lives in every recorded history: the workflow's input, state, progress and result, each
// activity's input and output, the heartbeat detail of a pass, the payloads of the signal and the queries, and
// the names Temporal knows them by (task queue, workflow type, activities, signal, queries, search attributes).
// It depends on the standard library, the Temporal SDK's workflow package, its API's enums and the plain data
// packages (experiment, usage, ratelimit, breaker) only, so that the workflow code that imports it imports no store,
// client or output format.
//
// # Changing a wire type
//
// A history recorded by any earlier release must still decode, and a payload written by this release must still
// decode in a worker of the previous one while both run during a deploy. So:
//
//   - a field may be added when it is optional: tagged omitempty (or omitzero), with a zero value that means what
//     the payload meant before the field existed;
//   - a JSON key is never renamed, retyped or given a new meaning, and a field is never removed while histories
//     that carry it may still replay (Go decodes an unknown key by ignoring it, so a removed field is silently
//     lost, not refused);
//   - a Go name may change freely: only the JSON keys are on the wire.
//
// TestRecordedPayloadsDecode decodes every payload of the recorded histories in workflows/testdata into its type
// here, refusing unknown keys, so a field that is removed or renamed while a history still carries it fails.
//
// # Money
//
// Every amount of money in a payload (a cost, a budget, a share of one) is a usage.USD, whose JSON is a number of
// dollars: the key and meaning of the float64 dollars that releases before it wrote for the same fields, so
// retyping such a field from float64 to USD gives it no new meaning. A USD reads a float64 of an earlier release
// (exponent forms included) as the nearest picodollar, halves away from zero (usage.ParseUSD), and an earlier
// release reads a USD as the float64 nearest to it. Every cost an earlier release wrote was a whole number of
// picodollars (usage.USD.Float), and budget_usd a decimal as the spec wrote it: below $4,096, and with at most 12
// decimals, both read back as exactly the picodollars they were, whose Float is the very float64 the earlier
// release compared, so the workflow's old path (ChangeBatchBudgetUSD) replays its decisions to the bit
// (TestOldMoneyPayloadsDecode). A share the earlier workflow computed by float64 division is no whole number of
// picodollars and reads as the nearest; only an activity reads a share.
//
// # Changing workflow code
//
// Any change to the sequence of commands ExperimentWorkflow issues for the same history (activities scheduled,
// their order, timers, signals, continue-as-new, the activity types or the inputs' shape) goes behind
// workflow.GetVersion, with a change id listed in ChangeIDs, so that runs started by an earlier release replay as
// they ran. So does a change to whether an error class is retried or ends its model (errclass's table decides
// which passes run after a failure; its testdata/decisions.txt shows such a change). The recorded histories in
// workflows/testdata are added to, never replaced: a change that alters what
// a run records gets a new history file beside the old ones, and the old ones must still replay.
package wire

import (
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// TaskQueue is the task queue of silico's workflows and activities on a cluster (and under `starter dev`): any
// worker polling it continues any run on it.
const TaskQueue = "silico"

// WaitQueue is the task queue of AwaitBatch alone for the runs on TaskQueue. An AwaitBatch holds its activity slot
// for as long as its batch runs (hours), sleeping between polls; on TaskQueue, 16 of them would take every slot of
// a worker and starve the passes and collects behind them. Every worker polls this queue too, with slots of its
// own (see workerhost).
const WaitQueue = "silico-batch-waits"

// RunQueue is the task queue of run id in the embedded default (`starter run` without --address): a queue of its
// own, which only a starter naming that run polls. So a run stopped by Ctrl-C, kill -9 or a cancel is continued
// by no other command on the same state dir (another spec's run, `starter dev`, `starter status`), only by its
// owner's `starter run ID`, the same spec again, or `starter resume ID`.
func RunQueue(id string) string { return runQueuePrefix + id }

// runQueuePrefix starts every RunQueue.
const runQueuePrefix = "silico-run-"

// IsRunQueue reports whether tq is a RunQueue.
func IsRunQueue(tq string) bool { return strings.HasPrefix(tq, runQueuePrefix) }

// WaitQueueFor is the queue of the batch waits (AwaitBatch) of the runs on task queue tq: WaitQueue for TaskQueue,
// as every release scheduled them, and tq plus "-batch-waits" for any other queue, so that a run on a RunQueue is
// waited for only by the worker that serves it. The workflow derives it from its own task queue, which its
// history records, so a replay schedules the same.
func WaitQueueFor(tq string) string {
	if tq == TaskQueue {
		return WaitQueue
	}
	return tq + "-batch-waits"
}

// WorkflowType is the name ExperimentWorkflow is registered, started and recorded under.
const WorkflowType = "ExperimentWorkflow"

// QueryProgress is the query that returns a run's Progress.
const QueryProgress = "progress"

// QueryShare is the workflow query that returns a running pass's current Share.
const QueryShare = "share"

// SignalOutage is the signal by which a pass tells its run's workflow that its model's provider went down, that
// a probe failed, or that the provider is back: the workflow's progress query and the Web UI show it. Its
// payload is an Outage.
const SignalOutage = "outage"

// SignalPause is the signal by which a run's owner pauses it (`starter pause`: the workflow launches no pass and
// submits no provider batch until it is resumed; what runs already finishes) or resumes it (`starter resume`).
// Its payload is a Pause. Runs started before ChangeRunPause ignore it.
const SignalPause = "pause"

// Pause is the payload of SignalPause.
type Pause struct {
	// Paused is true to pause the run, false to resume it.
	Paused bool `json:"paused"`
	// By says who asked, as people read it in the Web UI ("starter pause on host").
	By string `json:"by,omitempty"`
}

// Custom search attributes set on every run when the server knows them (the embedded server registers them).
const (
	AttrExperiment = "SilicoExperiment"
	AttrSpecHash   = "SilicoSpecHash"
)

// SearchAttributes are the custom search attributes a server must register for silico's runs.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		AttrExperiment: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrSpecHash:   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// Retry backoff of a pass's attempts: InitialRetryInterval doubled per attempt, at most MaxRetryInterval (the
// workflow's retry policy). An attempt ends early only when its worker stops or the store fails: a provider outage
// is waited out inside the attempt, behind the endpoint's breaker.
const (
	InitialRetryInterval = time.Second
	MaxRetryInterval     = time.Minute
)

// ExportHeartbeatTimeout is the heartbeat timeout the workflow gives ExportResults, which heartbeats a few times
// within it.
const ExportHeartbeatTimeout = 10 * time.Second

// ChangeIDs are the change ids ExperimentWorkflow passes to workflow.GetVersion, oldest first. Each is
// "<what changed>-<YYYY-MM-DD>" in lower-case words joined by hyphens (for example
// "batch-cancel-wait-2027-01-15"), never reused, and stays listed (with the code that keeps the old path) for as
// long as a run started before the change may replay.
func ChangeIDs() []string {
	return []string{ChangeBatchFailures, ChangeBatchAwait, ChangeBatchCandidates, ChangeBatchCleanup,
		ChangeTokenLimitSubmissions, ChangeBatchBudgetPerPass, ChangeBatchBounded, ChangeRunPause, ChangeBatchBudgetUSD}
}

// ChangeRunPause: the workflow honours SignalPause, launching no pass and submitting no provider batch while
// paused, and says so in its progress and the Web UI. Version 1 honours it; DefaultVersion (runs recorded before,
// whose workers ignored the signal) goes on as they did.
const ChangeRunPause = "run-pause-2026-12-07"

// ChangeBatchAwait: a chunk waits for its batch (and for its cancel) with one AwaitBatch per status the batch
// goes through, instead of a durable timer and a PollBatch per poll. Version 1 awaits; DefaultVersion (runs
// recorded before) keeps the timer loop.
const ChangeBatchAwait = "batch-await-activity-2026-12-02"

// ChangeBatchFailures: a provider batch that failed as a whole is handled by its kind (workflows/batchfail.go):
// an enqueued-token limit waits for the run's other batches and resubmits (or splits the chunk), a failure that
// names input lines fails those lines' cells and resubmits the rest, anything else backs off. Before it, every
// failed batch was collected (nothing) and its cells submitted again in the next round at once.
const ChangeBatchFailures = "batch-failure-kinds-2026-12-02"

// More change ids of ChangeIDs.
const (
	// ChangeBatchCandidates: an Anthropic submission that cannot tell its batch from others (BatchCandidates)
	// waits for every candidate and records those whose results are the chunk's (CollectCandidates), where it
	// used to record the chunk's cells BatchRefused.
	ChangeBatchCandidates = "batch-ambiguous-candidates-2026-12-02"
	// ChangeBatchCleanup: a collected batch's provider files (OpenAI) or the ended batch (Anthropic) are deleted
	// by CleanupBatch once the collect is recorded, unless batch.keep_files.
	ChangeBatchCleanup = "batch-cleanup-2026-12-02"
)

// ChangeTokenLimitSubmissions: a chunk whose batch exceeded the enqueued-token limit waits for the run's other
// submissions of its model under way to end before it judges whether it is alone (a batch the provider accepted
// shows in the run's batches only once its submission returns). Version 1 waits; DefaultVersion (runs recorded
// before) judges at once, on the batches the run knew then.
const ChangeTokenLimitSubmissions = "token-limit-submissions-2026-12-02"

// ChangeBatchBudgetPerPass: a batch pass whose share of budget_usd cannot pay for its next submission stops
// itself and the launching of passes, and the batch passes already running go on within their own shares, as
// synchronous passes do. Before it (DefaultVersion), the first pass to run out stopped every running batch pass
// at its next submission, so a pass that had started late could end with its share unspent. Version 1 also
// waits for another chunk's reservation by counting reservations, where DefaultVersion compared their float sum
// with 0, which a rounding residue could keep above 0 for ever (the run then hung).
const ChangeBatchBudgetPerPass = "batch-budget-per-pass-2026-12-05"

// ChangeBatchBounded: a batch chunk settles what fails for good itself, instead of leaving its cells to its pass.
// A batch the provider no longer knows (AwaitBatch's errclass.BatchLost) is submitted again as a fresh try, a
// bounded number of times; any other final failure of a chunk's batch activity (a state silico does not know for
// too long, a submission or a collect whose bounded retries ran out) cancels the batch if one runs and records the
// chunk's cells with the reason; the cells its rounds left unanswered are recorded by the chunk, with the
// provider's last reason as their error_code and the batches that carried them as their tries; and an input file
// kept for a resubmission that never came is deleted when the chunk ends. Before it (DefaultVersion), such cells
// were left to the pass, which recorded them errclass.BatchNotRun without a code or tries, and a kept input
// stayed at the provider.
const ChangeBatchBounded = "batch-lost-and-bounded-2026-12-07"

// ChangeBatchBudgetUSD: a batch pass's budget is exact. Its share, its chunks' reservations and what they spent are
// whole picodollars (usage.USD): a share is what is left of budget_usd divided by the passes, rounded down, so the
// shares of passes running at once add up to at most what is left; a split chunk's halves reserve its cost in
// parts that add up to it; a submission fits when its worst case is at most the share less what is reserved and
// spent, to the picodollar. Before it (DefaultVersion) the same sums were float64, whose rounding could take a
// submission that fits exactly for one that does not, or the reverse; runs recorded before replay on float64 sums
// of the same amounts (see Money in the package doc).
const ChangeBatchBudgetUSD = "batch-budget-exact-usd-2026-12-07"
