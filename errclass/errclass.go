// Package errclass is the one table of silico's error classes: the error_class of a cell that has no answer, and
// the ApplicationError type of an activity that failed. Each class says where it comes from, whether what failed
// with it is retried, whether it ends its model for the rest of the run, what fixes it, and what it means. Every
// list of classes silico acts on — the types Temporal must never retry, the ones that end a model, the ones whose
// fix is in the environment or in the spec, the README's error_class table — is derived from Table, so a new
// class is one line here.
//
// The constants are untyped strings: they are stored in results, written to histories as ApplicationError types
// and compared with what an older release recorded, so their values never change. Whether a class is retried and
// whether it ends its model decide what a workflow schedules next, so changing either for an existing class is a
// change of workflow code: it goes behind workflow.GetVersion (see package wire's versioning rule), and
// testdata/decisions.txt, which holds them as released, shows the change. A new class changes nothing recorded.
package errclass

import (
	"fmt"
	"slices"
	"strings"
)

// Class is an error class, as a provider call's error carries it (llm.Error.Class).
type Class string

// Retryable reports whether what failed with class c is tried again (see the package function Retryable).
func (c Class) Retryable() bool { return Retryable(string(c)) }

// EndsModel reports whether a failure of class c ends its model (see the package function EndsModel).
func (c Class) EndsModel() bool { return EndsModel(string(c)) }

// The provider's answers to a call (llm classifies them).
const (
	RateLimited    = "RateLimited"
	QuotaExhausted = "QuotaExhausted"
	ServerError    = "ServerError"
	Transport      = "Transport"
	Auth           = "Auth"
	InvalidRequest = "InvalidRequest"
)

// silico's own decisions about a model, a pass or a cell.
const (
	Skipped          = "Skipped"
	BudgetExhausted  = "BudgetExhausted"
	InvalidSpec      = "InvalidSpec"
	Internal         = "Internal"
	WorkerStopping   = "WorkerStopping"
	OutputRefused    = "OutputRefused"
	Unreachable      = "Unreachable"
	Stalled          = "Stalled"
	Outage           = "Outage"
	ClientSetup      = "ClientSetup"
	NoLogprobs       = "NoLogprobs"
	NotFound         = "NotFound"
	Rejected         = "Rejected"
	ContentFiltered  = "ContentFiltered"
	Truncated        = "Truncated"
	TextTooLong      = "TextTooLong"
	ImageUnavailable = "ImageUnavailable"
	NotRun           = "NotRun"
)

// Batch mode's classes.
const (
	BatchRefused      = "BatchRefused"
	BatchNotRun       = "BatchNotRun"
	BatchLineRejected = "BatchLineRejected"
	BatchLost         = "BatchLost"
	BatchStateUnknown = "BatchStateUnknown"
	BatchUnreadable   = "BatchUnreadable"
)

// How Temporal reports an activity that ended without an ApplicationError.
const (
	Timeout = "Timeout"
	Failed  = "Failed"
)

// Source is where a class comes from.
type Source string

// The sources of classes.
const (
	// Provider: the provider's answer to one call.
	Provider Source = "provider"
	// Silico: silico's decision about a model, a pass or a cell.
	Silico Source = "silico"
	// Batch: a provider's batch, in batch mode.
	Batch Source = "batch"
	// Temporal: how Temporal ended an activity that returned no ApplicationError.
	Temporal Source = "temporal"
)

// Retry says what happens to what failed with a class.
type Retry int

// The retry behaviours.
const (
	// Retried: a transient failure; the call or the activity attempt is tried again (Temporal's retry policy,
	// after the provider's Retry-After where it gave one).
	Retried Retry = iota
	// Final: never retried; Temporal's retry policies list it as non-retryable. Asking again fails the same way.
	Final
	// Recorded: an outcome recorded on a cell, not an activity failure; nothing retries it within the run.
	Recorded
)

// Fix says where the cause of a failure is fixed, for the message at the end of a run.
type Fix int

// The fixes.
const (
	// FixNone: nothing outside the run; --retry-failed may succeed.
	FixNone Fix = iota
	// FixEnvironment: where the run runs (key, account, endpoint, worker); every cell of the model fails the
	// same way until it is fixed, and --retry-failed after fixing it succeeds.
	FixEnvironment
	// FixSpec: the spec; a run keeps the spec it started with, so the fixed spec is a new run.
	FixSpec
)

// Info is one class's row of the table.
type Info struct {
	Class     Class
	Source    Source
	Retry     Retry
	EndsModel bool
	Fix       Fix
	// Check names what to check when Fix is not FixNone, as the end-of-run message says it.
	Check string
	// Meaning is one line: when a cell or an activity gets the class.
	Meaning string
}

// Table is every class, in the order the README lists them.
var Table = []Info{
	{Class: RateLimited, Source: Provider, Retry: Retried,
		Meaning: "HTTP 429 without a quota or billing code; retried after the provider's Retry-After"},
	{Class: ServerError, Source: Provider, Retry: Retried,
		Meaning: "HTTP 5xx (500, 502, 503, 504, 529 …)"},
	{Class: Transport, Source: Provider, Retry: Retried,
		Meaning: "no usable answer arrived: timeout, connection refused or reset, truncated or malformed body"},
	{Class: QuotaExhausted, Source: Provider, Retry: Final, EndsModel: true, Fix: FixEnvironment,
		Check:   "the provider account's quota or billing",
		Meaning: "HTTP 429 with a quota or billing code (insufficient_quota)"},
	{Class: Auth, Source: Provider, Retry: Final, EndsModel: true, Fix: FixEnvironment,
		Check:   "the API key: its variable is unset or wrong, or the worker does not allow it (--api-key-env-allow)",
		Meaning: "HTTP 401 or 403, or no API key: no call of the model can succeed"},
	{Class: InvalidRequest, Source: Provider, Retry: Final,
		Meaning: "HTTP 400, 404, 422 and other 4xx (bad request, context too long), or a request the client refuses to send"},
	{Class: Unreachable, Source: Silico, Retry: Final, EndsModel: true, Fix: FixEnvironment,
		Check:   "the endpoint: a wrong base_url, or a server that is not up",
		Meaning: "the model's endpoint never answered (connection refused, DNS or TLS failure from the first calls on)"},
	{Class: ClientSetup, Source: Silico, Retry: Final, EndsModel: true, Fix: FixEnvironment,
		Check:   "the worker's client configuration",
		Meaning: "the model's client could not be made (the worker's configuration)"},
	{Class: NotFound, Source: Silico, Retry: Final, EndsModel: true, Fix: FixSpec,
		Check:   "the model's base_url (a path without /v1) or name: the server has no such endpoint or model",
		Meaning: "the endpoint answered 404 before any call succeeded: no such path or model"},
	{Class: Rejected, Source: Silico, Retry: Final, EndsModel: true, Fix: FixSpec,
		Check:   "a parameter or answer mode the model's server refuses (the cells say which)",
		Meaning: "the model's first calls were all refused with the same 4xx answer and none succeeded"},
	{Class: NoLogprobs, Source: Silico, Retry: Final, EndsModel: true, Fix: FixSpec,
		Check:   "answer: {mode: logprobs} on a server that gives no logprobs",
		Meaning: "the answer mode reads logprobs and the server answered without them"},
	{Class: Stalled, Source: Silico, Retry: Final, EndsModel: true,
		Meaning: "a pass in which no cell finished for run.stall_timeout"},
	{Class: Outage, Source: Silico, Retry: Recorded,
		Meaning: "the cell's pass stalled while its provider was down (the message says since when and why)"},
	{Class: Skipped, Source: Silico, Retry: Recorded,
		Meaning: "not called: its model was given up (the message names the cause), or on_error: raise stopped the run"},
	{Class: BudgetExhausted, Source: Silico, Retry: Final,
		Meaning: "not called: the next call could have exceeded budget_usd"},
	{Class: ImageUnavailable, Source: Silico, Retry: Recorded,
		Meaning: "a picture of the cell could not be fetched"},
	{Class: TextTooLong, Source: Silico, Retry: Recorded,
		Meaning: "a text of an embed spec has more tokens than embed.max_tokens_per_request; never sent"},
	{Class: ContentFiltered, Source: Provider, Retry: Recorded,
		Meaning: "the provider's content filter withheld the answer (unparsed, not failed: the call was paid)"},
	{Class: Truncated, Source: Provider, Retry: Recorded,
		Meaning: "the answer was cut at max_tokens before it named an option (unparsed)"},
	{Class: NotRun, Source: Silico, Retry: Recorded,
		Meaning: "the cell has no record when the run is exported"},
	{Class: BatchRefused, Source: Batch, Retry: Final,
		Meaning: "a batch pass cannot go on: the provider holds a batch of the chunk with other requests, a collected batch holds another chunk's results, the endpoint does not list uploaded files, or the spec asks what batch mode cannot send"},
	{Class: BatchNotRun, Source: Batch, Retry: Recorded,
		Meaning: "the provider's batches never ran the cell in run.max_attempts submissions (expired, cancelled or failed as a whole each time; the message gives the provider's last reason)"},
	{Class: BatchLineRejected, Source: Batch, Retry: Recorded,
		Meaning: "the provider failed a batch because of the cell's input line (its errors name the line; the message and error_code are its reason); the chunk's other cells were submitted again"},
	{Class: BatchLost, Source: Batch, Retry: Final,
		Meaning: "the provider answered 404 to every poll of a batch silico created (5 polls over at least 2 minutes): the batch is taken as lost and its chunk submitted again; a cell gets the class when each of its chunk's tries was lost"},
	{Class: BatchStateUnknown, Source: Batch, Retry: Final,
		Meaning: "the provider reported a batch state silico does not know for 2 hours of polls: the batch was cancelled and its cells recorded (the message names the state)"},
	{Class: BatchUnreadable, Source: Batch, Retry: Recorded,
		Meaning: "the provider's result line for the cell could not be read (the message says why and quotes its start); the other lines of the batch were recorded"},
	{Class: InvalidSpec, Source: Silico, Retry: Final,
		Meaning: "the spec fails validation inside the workflow, or differs from the one saved under the run id"},
	{Class: OutputRefused, Source: Silico, Retry: Final,
		Meaning: "an export's output directory lies outside the worker's output root"},
	{Class: Internal, Source: Silico, Retry: Retried,
		Meaning: "a failure of silico itself (the results store unavailable); the attempt is retried"},
	{Class: WorkerStopping, Source: Silico, Retry: Retried,
		Meaning: "the attempt's worker is shutting down; the pass resumes on the next attempt"},
	{Class: Timeout, Source: Temporal, Retry: Retried,
		Meaning: "an activity attempt timed out (start-to-close or heartbeat)"},
	{Class: Failed, Source: Temporal, Retry: Retried,
		Meaning: "an activity failed with an error that has no class"},
}

// Of returns the row of class c; false when c is no class of the table.
func Of(c string) (Info, bool) {
	i := slices.IndexFunc(Table, func(in Info) bool { return string(in.Class) == c })
	if i < 0 {
		return Info{}, false
	}
	return Table[i], true
}

// Retryable reports whether what failed with class c is tried again: false for Final classes and for classes
// not in the table (an unknown class is never retried by silico's own decision).
func Retryable(c string) bool {
	in, ok := Of(c)
	return ok && in.Retry == Retried
}

// EndsModel reports whether a pass that failed with class c ends its model for the rest of the run: every later
// pass of the model would fail the same way.
func EndsModel(c string) bool {
	in, ok := Of(c)
	return ok && in.EndsModel
}

// NonRetryable lists the Final classes: the NonRetryableErrorTypes of every activity's retry policy.
func NonRetryable() []string {
	return classes(func(in Info) bool { return in.Retry == Final })
}

// DeadModel lists the classes that end a model.
func DeadModel() []string {
	return classes(func(in Info) bool { return in.EndsModel })
}

func classes(keep func(Info) bool) []string {
	var out []string
	for _, in := range Table {
		if keep(in) {
			out = append(out, string(in.Class))
		}
	}
	return out
}

// Markdown is the README's table of error classes, generated from Table.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| error_class | from | retried | ends the model | fix | meaning |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, in := range Table {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", in.Class, in.Source, in.Retry, yesNo(in.EndsModel), in.Fix, in.Meaning)
	}
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// String names r as the README's table does.
func (r Retry) String() string {
	switch r {
	case Retried:
		return "yes"
	case Final:
		return "never"
	default:
		return "—"
	}
}

// String names f as the README's table does.
func (f Fix) String() string {
	switch f {
	case FixEnvironment:
		return "environment"
	case FixSpec:
		return "spec"
	default:
		return ""
	}
}
