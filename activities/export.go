package activities

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/results"
	"github.com/silicolab/silico/wire"
)

// Export: ExportResults writes a run's outputs into its output directory, which outputDir resolves and confines
// to the worker's output root.

// exportHeartbeatEvery is how often ExportResults heartbeats; wire.ExportHeartbeatTimeout must be a few times it.
const exportHeartbeatEvery = 2 * time.Second

// ExportResults writes the run's outputs in submission order: results.jsonl, results.csv, summary.json and the
// analyses (see results.Export), or for an embed spec the vectors, their index and similarity matrices (see
// results.ExportEmbed).
func (a *Activities) ExportResults(ctx context.Context, in wire.ExportInput) (wire.ExportOutput, error) {
	dir, err := a.outputDir(in)
	if err != nil {
		return wire.ExportOutput{}, appError(errclass.OutputRefused, err)
	}
	s, err := a.spec(ctx, in.RunID)
	if err != nil {
		return wire.ExportOutput{}, err
	}
	if err := a.Store.SetElapsed(ctx, in.RunID, in.Elapsed); err != nil {
		return wire.ExportOutput{}, fmt.Errorf("export run %s: %w", in.RunID, err)
	}
	// Heartbeats let a rerun after a dead worker start a new export within seconds (the heartbeat timeout),
	// not after the whole start-to-close timeout.
	hbCtx, stopHB := context.WithCancel(ctx)
	var hb sync.WaitGroup
	hb.Go(func() { tick(hbCtx, exportHeartbeatEvery, func() { activity.RecordHeartbeat(ctx) }) })
	sum, err := results.ExportFor(s)(ctx, a.Store, s, in.RunID, dir, in.Elapsed)
	stopHB()
	hb.Wait()
	if err != nil {
		return wire.ExportOutput{}, fmt.Errorf("export run %s: %w", in.RunID, err)
	}
	return wire.ExportOutput{Dir: dir, Summary: sum}, nil
}

// CheckOutput refuses, with a non-retryable OutputRefused error, an output directory ExportResults would
// refuse. PrepareRun makes the same check before the first pass, so that a run is not paid for and then left
// unexported; no workflow of this release schedules CheckOutput, which stays registered for runs whose histories do.
func (a *Activities) CheckOutput(ctx context.Context, in wire.ExportInput) error {
	if _, err := a.outputDir(in); err != nil {
		return appError(errclass.OutputRefused, err)
	}
	return nil
}

// outputDir is where the run's outputs go: OutputRoot/<run id>, or the run's own directory. A relative directory
// is taken relative to OutputRoot. Unless OutputAnywhere is set, the directory must lie under OutputRoot, also
// after resolving the symbolic links of the part of it that exists.
func (a *Activities) outputDir(in wire.ExportInput) (string, error) {
	root := a.OutputRoot
	if root == "" {
		root = experiment.DefaultOutputRoot
	}
	if in.Dir == "" {
		return filepath.Join(root, in.RunID), nil
	}
	if a.OutputAnywhere {
		return in.Dir, nil
	}
	dir := in.Dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("output root: %w", err)
	}
	dir = filepath.Clean(dir)
	if !within(absRoot, dir) || !within(resolveExisting(absRoot), resolveExisting(dir)) {
		return "", fmt.Errorf("output directory %s is outside this worker's output root %s; "+
			"leave output unset, name a directory under the root, or start the worker with --output-anywhere", in.Dir, absRoot)
	}
	return dir, nil
}

// within reports whether path is root or lies under it (both clean and absolute).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveExisting resolves the symbolic links of the longest existing prefix of path and appends the rest.
func resolveExisting(path string) string {
	rest := ""
	for p := path; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
