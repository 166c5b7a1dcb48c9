package wire

import (
	"time"

	"github.com/silicolab/silico/experiment"
)

// The bounds of AwaitBatch's patience with a batch it cannot follow (activities/batchawait.go), here so that
// what shows them (`starter status`) says the same.
const (
	// BatchLostPolls and BatchLostAfter: a batch the provider answered 404 for on BatchLostPolls polls in a row,
	// the first and the last BatchLostAfter of waiting apart, is lost (errclass.BatchLost).
	BatchLostPolls = 5
	BatchLostAfter = 2 * time.Minute
	// BatchUnknownFor is how long a batch may stay in a state silico does not know before it is given up
	// (errclass.BatchStateUnknown).
	BatchUnknownFor = 2 * time.Hour
)

// BatchAwaitInput asks AwaitBatch to follow a created batch until its status changes.
type BatchAwaitInput struct {
	BatchRef
	// Batch is the batch as the workflow last saw it: AwaitBatch returns once the provider reports another status
	// (or a terminal one), and compares the counts of its first poll with these.
	Batch BatchInfo `json:"batch"`
	// PollEvery is the model's poll_every (experiment.BatchSettings.PollEvery, defaults applied).
	PollEvery experiment.Duration `json:"poll_every"`
	// Polls is how many polls of this batch earlier AwaitBatch calls made (BatchWatch.Polls of the last one): the
	// first polls after a batch's creation come sooner (see activities/batchawait.go), wherever a status change
	// split them. Zero for a batch just created.
	Polls int `json:"polls,omitempty"`
	// Waited is how long earlier AwaitBatch calls waited between polls of this batch (BatchWatch.Waited of the
	// last one): no wait is longer than a quarter of it (or awaitFirst), so the delay between a batch's end and its
	// collect stays a bounded share of how long it ran. Zero for a batch just created, and in inputs recorded
	// before it existed (their waits start short again).
	Waited experiment.Duration `json:"waited,omitempty"`
}

// BatchWatch is where AwaitBatch stands: its heartbeat details on every poll (the Web UI's pending-activity
// view and `starter status` show the batch's id, status and counts from it; a retried attempt resumes from it)
// and its result.
type BatchWatch struct {
	// Batch is the batch as the last poll saw it.
	Batch BatchInfo `json:"batch"`
	// Polls counts the polls of the batch so far, those of earlier AwaitBatch calls included.
	Polls int `json:"polls"`
	// Every is the interval of the polls after the first ones: poll_every while the batch changes, doubled up to
	// experiment.MaxPollEvery while nothing does.
	Every experiment.Duration `json:"every"`
	// Waited is the time waited between the polls of the batch so far, those of earlier AwaitBatch calls included.
	Waited experiment.Duration `json:"waited,omitempty"`
	// Missing counts the polls in a row the provider answered 404 (it does not know the batch), and MissingFrom is
	// Waited at the first of them: a batch missing for long enough is taken as lost.
	Missing     int                 `json:"missing,omitempty"`
	MissingFrom experiment.Duration `json:"missing_from,omitempty"`
	// Failure is the last poll's error while the provider does not know the batch, for the Web UI and `starter
	// status` ("404 No such batch"); empty otherwise.
	Failure string `json:"failure,omitempty"`
	// UnknownFrom is Waited when the batch's state first was one silico does not know (Batch.Status unknown),
	// in this AwaitBatch call; zero while it is known.
	UnknownFrom experiment.Duration `json:"unknown_from,omitempty"`
}
