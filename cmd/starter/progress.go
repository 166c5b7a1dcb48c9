package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/schollz/progressbar/v3"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"golang.org/x/term"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/specfile"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
	"github.com/silicolab/silico/wire"
)

// snapshot is where a run stands: the workflow's totals of finished passes plus the heartbeats of running ones.
type snapshot struct {
	status string
	// started is when the run's current execution started.
	started    time.Time
	total      int
	done       int
	failed     int
	retried    int
	cached     int
	passesDone int
	passes     int
	usage      usage.Usage
	// outages are the models whose provider is down, one line each, from the running passes' heartbeats (or the
	// workflow's progress, which the passes signal).
	outages map[string]breaker.State
	// batches are the provider batches of the run's batch passes.
	batches []wire.BatchProgress
	// retrying says, per activity retried after failing twice or more, why (retries.go).
	retrying []string
	// taskQueue is the task queue of the run's execution: the workers that poll it are those that continue it.
	taskQueue string
	// paused is the run's pause (`starter pause`), nil while it is not paused.
	paused *wire.Paused
}

// progressStore is what progress reads of the results store.
type progressStore interface {
	LoadRun(ctx context.Context, run string) ([]byte, error)
	Counts(ctx context.Context, run string) (store.Counts, error)
}

// readProgress asks the workflow for its totals and adds the last heartbeat of every running pass. Heartbeats
// reach the server every few seconds; when the results store is at hand (embedded mode), its counts replace them,
// exact to the last flushed batch.
func readProgress(ctx context.Context, c client.Client, st progressStore, id string) (snapshot, error) {
	return readProgressSized(ctx, c, st, id, &watchState{})
}

// runSize is a run's number of cells and passes; known is false until they are.
type runSize struct {
	cells, passes int
	known         bool
}

// pacedCounts is the store's last counts of a run and when a watch may ask for them again. Counts reads every
// record of the run (seconds at 10,000,000 cells, while the writers wait for a checkpoint behind it), so the
// watch asks again only after countsPause times as long as the last answer took: its share of a core stays near
// 1/countsPause.
type pacedCounts struct {
	last store.Counts
	have bool
	next time.Time
}

// watchState is what a progress watch keeps between its reads, which come every second: the run's size, decoded
// once from its saved spec when the caller did not know it (a spec may be tens of megabytes), and the store's
// paced counts.
type watchState struct {
	size   runSize
	counts pacedCounts
}

// countsPause is how many times the duration of the last Counts a watch waits before the next one, and
// countsTimeout the longest a Counts may take.
const (
	countsPause   = 20
	countsTimeout = time.Minute
)

// readProgressSized is readProgress that keeps what it reads of the store in w: the run's size, read once, and
// its paced counts.
func readProgressSized(ctx context.Context, c client.Client, st progressStore, id string, w *watchState) (snapshot, error) {
	size, pc := &w.size, &w.counts
	var s snapshot
	watchCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return s, fmt.Errorf("describe %s: %w", id, err)
	}
	s.status = d.GetWorkflowExecutionInfo().GetStatus().String()
	s.started = d.GetWorkflowExecutionInfo().GetStartTime().AsTime()
	s.taskQueue = d.GetWorkflowExecutionInfo().GetTaskQueue()
	if v, err := c.QueryWorkflow(ctx, id, "", wire.QueryProgress); err == nil {
		var p wire.Progress
		if v.Get(&p) == nil {
			s.total, s.done, s.failed, s.retried, s.cached = p.Cells, p.CellsDone, p.Failed, p.Retried, p.Cached
			s.passesDone, s.passes = p.PassesDone, p.Passes
			s.usage = p.Usage
			for _, o := range p.Outages {
				s.addOutage(o.Model, o.State)
			}
			s.batches = p.Batches
			s.paused = p.Paused
		}
	}
	dc := converter.GetDefaultDataConverter()
	s.retrying = retryLines(d.GetPendingActivities(), time.Now())
	for _, pa := range d.GetPendingActivities() {
		if pa.GetActivityType().GetName() == wire.AwaitBatch.Name && pa.GetHeartbeatDetails() != nil {
			var hb wire.BatchWatch
			if dc.FromPayloads(pa.GetHeartbeatDetails(), &hb) == nil {
				s.watchedBatch(hb)
			}
			continue
		}
		if pa.GetActivityType().GetName() != "RunSeedPass" || pa.GetHeartbeatDetails() == nil {
			continue
		}
		var hb wire.PassProgress
		if dc.FromPayloads(pa.GetHeartbeatDetails(), &hb) != nil {
			continue
		}
		s.done += hb.Done
		s.failed += hb.Failed
		s.retried += hb.Retried
		s.cached += hb.Cached
		s.usage.Add(hb.Usage)
		if hb.Model != "" {
			s.addOutage(hb.Model, hb.Outage)
		}
	}
	if st != nil {
		if s.total == 0 && !size.known {
			// The workflow did not answer (no worker is up, or it is still preparing the run): size the run from
			// the spec it saved.
			if b, err := st.LoadRun(ctx, id); err == nil {
				if spec, err := specfile.ParseSaved(b, id); err == nil {
					size.cells, size.passes, size.known = spec.NumCells(), len(spec.Passes()), true
				}
			}
		}
		if s.total == 0 && size.known {
			s.total, s.passes = size.cells, size.passes
		}
		if asked := time.Now(); !asked.Before(pc.next) {
			// Its own deadline, longer than the query's: a count that is cut short is asked again, and a watch
			// that asks every second for a count taking longer than its deadline would read all the time (and a
			// reader that never stops keeps SQLite from starting its write-ahead log over).
			cctx, cancel := context.WithTimeout(watchCtx, countsTimeout)
			n, err := st.Counts(cctx, id)
			cancel()
			if err == nil {
				pc.last, pc.have = n, true
			}
			pc.next = time.Now().Add(countsPause * time.Since(asked))
		}
		if n := pc.last; pc.have && n.Records >= s.done {
			s.done, s.failed, s.cached = n.Records, n.Failed, n.Cached
			s.usage = n.Usage
		}
	}
	return s, nil
}

// addOutage notes the breaker state a pass reported for model; the latest news of an outage wins.
func (s *snapshot) addOutage(model string, st breaker.State) {
	if !st.Open {
		return
	}
	if s.outages == nil {
		s.outages = map[string]breaker.State{}
	}
	if cur, ok := s.outages[model]; !ok || st.NextProbe.After(cur.NextProbe) {
		s.outages[model] = st
	}
}

// outageLines says, per model in name order, that its provider is down and when it is probed next.
func (s snapshot) outageLines(now time.Time) []string {
	var out []string
	for _, m := range slices.Sorted(maps.Keys(s.outages)) {
		out = append(out, m+": "+s.outages[m].Describe(now))
	}
	return out
}

// line formats a snapshot: done/total, failures, retries, rate, ETA, tokens and money.
func (s snapshot) line(rate float64) string {
	eta := "?"
	if rate > 0 && s.total > s.done {
		eta = (time.Duration(float64(s.total-s.done)/rate) * time.Second).Round(time.Second).String()
	} else if s.total > 0 && s.done >= s.total {
		eta = "0s"
	} else if s.openBatches() {
		eta = "when its batches end" // a batch's cells land when the provider ends it: no rate to go by before
	}
	line := fmt.Sprintf("%d/%d cells · %d failed · %d retried · %.1f cells/s · eta %s · %d tokens · %s",
		s.done, s.total, s.failed, s.retried, rate, eta, s.usage.Tokens(), s.usage.CostUSD.Display())
	if s.cached > 0 {
		line += fmt.Sprintf(" · %d cached, %s saved", s.cached, s.usage.SavedUSD.Display())
	}
	for _, o := range s.outageLines(time.Now()) {
		line += " · " + o
	}
	if s.paused != nil {
		line += " · " + s.pausedLine()
	}
	if n := len(s.retrying); n > 0 {
		line += fmt.Sprintf(" · %d activit%s failing (below)", n, map[bool]string{true: "y", false: "ies"}[n == 1])
	}
	return line
}

// pausedLine says since when and by whom the run is paused.
func (s snapshot) pausedLine() string {
	return fmt.Sprintf("paused since %s%s: no pass starts until it is resumed", s.paused.Since.Local().Format(timeWithZone),
		byWhom(s.paused.By))
}

// batchLines say where each provider batch stands: "sim: batch 2 of 3 in_progress, 31,204 of 50,000 done,
// expires Dec 2 14:03" (numbered per model, in the workflow's order), with the provider's own word for a state
// silico does not know, with the provider's reason when it failed the batch as a whole and the chunk waits to
// resubmit, and with what happened to the chunk's earlier batches (one lost); with running, only those not ended
// yet or waiting.
func (s snapshot) batchLines(running bool) []string {
	per := map[string]int{}
	for _, b := range s.batches {
		per[b.Model]++
	}
	seen := map[string]int{}
	var out []string
	for _, b := range s.batches {
		seen[b.Model]++
		if running && b.Status.Terminal() && b.Reason == "" {
			continue // ended, and its chunk waits on nothing
		}
		status := string(b.Status)
		if b.Status == wire.BatchStatusUnknown && b.State != "" {
			status = fmt.Sprintf("in state %s (unknown to silico)", b.State)
		}
		line := fmt.Sprintf("%s: batch %d of %d %s, %s of %s done", b.Model, seen[b.Model], per[b.Model], status,
			thousands(b.Done), thousands(b.Total))
		if !b.ExpiresAt.IsZero() && !b.Status.Terminal() {
			line += ", expires " + b.ExpiresAt.Local().Format("Jan 2 15:04") // a day ahead: the date tells tomorrow from today
		}
		if b.Reason != "" {
			line += ": " + b.Reason // the provider failed it as a whole, and its chunk waits to resubmit
		}
		if b.Note != "" {
			line += " · " + b.Note
		}
		out = append(out, line)
	}
	return out
}

// watchProgress shows a live bar on a terminal, and plain lines every `every` otherwise, until ctx ends. size is
// the run's size when the caller knows it (the zero value when not).
func watchProgress(ctx context.Context, c client.Client, st progressStore, id string, size runSize, every time.Duration, w io.Writer) {
	total := size.cells
	state := watchState{size: size}
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	var bar *progressbar.ProgressBar
	if tty {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionShowDescriptionAtLineEnd(), progressbar.OptionClearOnFinish())
		// Clear the bar's line so that what is printed next starts on a clean line.
		defer func() { _ = bar.Clear() }()
	}
	start := time.Now()
	first := -1
	lastLine := time.Time{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s, err := readProgressSized(ctx, c, st, id, &state)
		if err != nil {
			continue
		}
		if first < 0 {
			first = s.done // cells finished before this process attached do not count towards its rate
			start = time.Now()
		}
		rate := 0.0
		if el := time.Since(start).Seconds(); el > 0 {
			rate = float64(s.done-first) / el
		}
		if tty {
			desc := fmt.Sprintf("%d failed · %d retried · %.1f/s · %d tokens · %s", s.failed, s.retried, rate,
				s.usage.Tokens(), s.usage.CostUSD.Display())
			for _, o := range s.outageLines(time.Now()) {
				desc += " · " + o
			}
			if s.paused != nil {
				desc += " · " + s.pausedLine()
			}
			for _, r := range s.retrying {
				desc += " · " + r
			}
			bar.Describe(desc)
			_ = bar.Set(min(s.done, total))
			continue
		}
		if time.Since(lastLine) >= every {
			lastLine = time.Now()
			fmt.Fprintln(w, s.line(rate))
			for _, b := range s.batchLines(true) {
				fmt.Fprintln(w, "  "+b)
			}
			for _, r := range s.retrying {
				fmt.Fprintln(w, "  "+r)
			}
		}
	}
}

// watchedBatch puts a batch's state from an AwaitBatch heartbeat over the workflow's, which the workflow updates
// only when the batch's status changes: counts that grow while the status stays show from the heartbeat, and so do
// the polls the provider answered that it does not know the batch.
func (s *snapshot) watchedBatch(w wire.BatchWatch) {
	info := w.Batch
	for i, b := range s.batches {
		if b.ID != info.ID || b.Status.Terminal() {
			continue
		}
		s.batches[i].Status, s.batches[i].Total, s.batches[i].Done = info.Status, info.Counts.Total, info.Counts.Done()
		s.batches[i].State = info.State
		if !info.ExpiresAt.IsZero() {
			s.batches[i].ExpiresAt = info.ExpiresAt
		}
		if w.Missing > 0 {
			s.batches[i].Note = fmt.Sprintf("the provider answered %d poll(s) in a row that it does not know this batch (%s); "+
				"it is taken as lost, and its cells submitted again, after %d over %s", w.Missing, shorten(w.Failure),
				wire.BatchLostPolls, wire.BatchLostAfter)
		}
	}
}

// openBatches reports whether a provider batch of the run has not ended, or a chunk waits to resubmit one the
// provider failed.
func (s snapshot) openBatches() bool {
	for _, b := range s.batches {
		if !b.Status.Terminal() || b.Reason != "" {
			return true
		}
	}
	return false
}
