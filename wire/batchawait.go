package wire

import "github.com/silicolab/silico/experiment"

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
}
