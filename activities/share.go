package activities

import (
	"context"

	"github.com/silicolab/silico/ratelimit"
)

// QueryShare is the workflow query that returns a running pass's current Share.
const QueryShare = "share"

// Share is a pass's part of its model's limits and of the run's budget. The workflow computes it so that the
// shares of all passes running at once add up to at most the model's limits and the run's budget, and a share
// never shrinks while its pass runs (see workflows).
type Share struct {
	Limits ratelimit.Limits
	// Budgeted says the run has a budget; BudgetUSD is then this pass's part of what is left of it.
	Budgeted  bool
	BudgetUSD float64
}

// Shares asks the workflow for a pass's current share, so that a running pass picks up what finished passes
// leave behind. workflowID is the run's workflow; the latest run of it answers.
type Shares interface {
	Share(ctx context.Context, workflowID string, pass int) (Share, error)
}
