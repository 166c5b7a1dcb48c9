package activities

import (
	"context"
	"time"

	"github.com/silicolab/silico/ratelimit"
	"github.com/silicolab/silico/wire"
)

// Shares asks the workflow for a pass's current share, so that a running pass picks up what finished passes
// leave behind. workflowID is the run's workflow; the latest run of it answers.
type Shares interface {
	Share(ctx context.Context, workflowID string, pass int) (wire.Share, error)
}

// shareKeeper applies a running pass's grown share to its limiter and budget. Shares never shrink.
type shareKeeper struct {
	shares     Shares // nil: the pass keeps the share it started with
	workflowID string
	pass       int
	limiter    *ratelimit.Limiter
	budget     *budget
}

// shareEvery is how often a running pass asks the workflow for its current share.
const shareEvery = 2 * time.Second

// refresh asks the workflow for the pass's current share and applies it. It reports whether the share grew.
func (sk *shareKeeper) refresh(ctx context.Context) bool {
	if sk.shares == nil || sk.workflowID == "" {
		return false
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sh, err := sk.shares.Share(qctx, sk.workflowID, sk.pass)
	if err != nil {
		return false
	}
	grew := false
	old := sk.limiter.Limits()
	nl := sh.Limits
	nl.StartEmpty = true
	if nl.Concurrency > old.Concurrency || nl.RPM > old.RPM || nl.TPM > old.TPM {
		nl.Concurrency = max(nl.Concurrency, old.Concurrency)
		nl.RPM, nl.TPM = max(nl.RPM, old.RPM), max(nl.TPM, old.TPM)
		sk.limiter.SetLimits(nl)
		grew = true
	}
	if sh.Budgeted && sk.budget.grow(sh.BudgetUSD) {
		grew = true
	}
	return grew
}

// keep picks up a grown share every shareEvery until ctx ends. It runs apart from the heartbeat, so a slow query
// can never delay a heartbeat past its timeout.
func (sk *shareKeeper) keep(ctx context.Context) {
	tick(ctx, shareEvery, func() { sk.refresh(ctx) })
}
