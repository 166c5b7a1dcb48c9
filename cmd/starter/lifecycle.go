package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/temporalclient"
)

// storeOnlyVerbs are the commands that register the store options alone: a command line for them repeats no
// Temporal flag, which they would refuse.
var storeOnlyVerbs = []string{"export", "report"}

// command is the starter command line that does verb with args against the same server and store as f: the
// connection flags that differ from their defaults are repeated (TLS included; an API key never: it is read from
// the environment), so that the line works when pasted.
func (f *connFlags) command(verb string, args ...string) string {
	parts := append([]string{"starter", verb}, args...)
	if !slices.Contains(storeOnlyVerbs, verb) {
		if f.client.address != "" && f.client.address != os.Getenv(temporalclient.EnvAddress) {
			parts = append(parts, "--address", f.client.address)
		}
		if ns := envOr(temporalclient.EnvNamespace, temporalclient.DefaultNamespace); f.client.namespace != ns {
			parts = append(parts, "--namespace", f.client.namespace)
		}
		if !f.embedded() {
			parts = append(parts, f.client.cluster.Args()...)
		}
	}
	if f.embedded() && f.store.stateDir != defaultStateDir {
		parts = append(parts, "--state-dir", f.store.stateDir)
	}
	if f.store.path != "" {
		parts = append(parts, "--store", f.store.path)
	}
	return strings.Join(parts, " ")
}

// resumeCommand is the command that goes on with run id: `starter run ID` where the workers' results store is at
// hand (it holds the run's spec), else the spec file the user named, SPEC when unknown (the same spec is the
// same run).
func (s *session) resumeCommand(id, specRef string) string {
	if s.flags.storeNamed() {
		return s.flags.command("run", id)
	}
	if specRef == "" {
		specRef = "SPEC"
	}
	return s.flags.command("run", specRef)
}

// runLister is what resolving a run id needs of the results store.
type runLister interface {
	Runs(ctx context.Context) ([]store.RunInfo, error)
	Location() string
}

// resolveRun is the id of the run ref names: a run of st whose id is ref, or the one whose id starts with ref.
// A prefix that more than one run starts with is an error that lists them. A ref the store does not know is
// returned as it is (a cluster's server may know it), with known false.
func resolveRun(ctx context.Context, st runLister, ref string) (id string, known bool, err error) {
	runs, err := st.Runs(ctx)
	if err != nil {
		return ref, false, err
	}
	var matches []string
	for _, r := range runs {
		if r.ID == ref {
			return ref, true, nil
		}
		if strings.HasPrefix(r.ID, ref) {
			matches = append(matches, r.ID)
		}
	}
	switch len(matches) {
	case 0:
		return ref, false, nil
	case 1:
		return matches[0], true, nil
	}
	shown := matches[:min(len(matches), 10)]
	more := ""
	if len(matches) > len(shown) {
		more = fmt.Sprintf("\n  … and %d more", len(matches)-len(shown))
	}
	return ref, false, withCode(exitUsage, fmt.Errorf("%q names %d runs of %s; give more of the id:\n  %s%s",
		ref, len(matches), st.Location(), strings.Join(shown, "\n  "), more))
}

// resolveStored resolves ref (see resolveRun) against the results store conn names, when it is the workers' and
// exists; otherwise ref is returned as it is.
func resolveStored(ctx context.Context, conn *connFlags, ref string) (string, error) {
	if !conn.storeNamed() {
		return ref, nil
	}
	if dsn := conn.dsn(); !store.IsPostgres(dsn) {
		if _, err := os.Stat(dsn); err != nil {
			return ref, nil
		}
	}
	st, err := store.Open(ctx, conn.dsn())
	if err != nil {
		return ref, fmt.Errorf("open results store: %w", err)
	}
	defer st.Close()
	id, _, err := resolveRun(ctx, st, ref)
	return id, err
}

// openRun opens a session without a worker for a command about run ref (status, cancel), with the results store
// when it is the workers' (the store counts the run's cells exactly; with --address only a store named on purpose
// is the workers', the default file is this machine's), and resolves ref to the run's id.
func openRun(ctx context.Context, conn *connFlags, ref string, stderr io.Writer) (*session, string, error) {
	sess, err := open(ctx, conn, sessionOptions{}, stderr)
	if err != nil {
		return nil, "", err
	}
	if conn.storeNamed() {
		if err := sess.openStore(ctx); err != nil {
			sess.Close()
			return nil, "", err
		}
	}
	id, err := sess.resolve(ctx, ref)
	if err != nil {
		sess.Close()
		return nil, "", err
	}
	return sess, id, nil
}

// withRun runs do with a session opened for run ref (openRun) and the run's id, and closes the session.
func withRun(cmd *cobra.Command, conn *connFlags, ref string, do func(ctx context.Context, sess *session, id string) error) error {
	ctx := cmd.Context()
	sess, id, err := openRun(ctx, conn, ref, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer sess.Close()
	return do(ctx, sess, id)
}

// resolveInSession resolves ref (see resolveRun) against the session's results store, when it has one.
func (s *session) resolve(ctx context.Context, ref string) (string, error) {
	if s.store == nil {
		return ref, nil
	}
	id, _, err := resolveRun(ctx, s.store, ref)
	return id, err
}

// recordState records in the results store that run id is in state, when the session has the store. It is
// best effort: the state only serves `starter runs` when no server is up, and a failure to write it must not
// turn a finished run into an error.
func (s *session) recordState(id, state string) {
	if s.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.SetRunState(ctx, id, state, time.Now()); err != nil {
		s.log.Warn("record the run's state: " + err.Error())
	}
}

// stateWord is the store's name of a closed workflow status.
func stateWord(st enumspb.WorkflowExecutionStatus) string {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return store.RunRunning
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return store.RunCompleted
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return store.RunCancelled
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return store.RunTerminated
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return store.RunTimedOut
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return store.RunFailed
	}
	return statusWord(st)
}

// endState is the state of a run whose workflow result was err (nil: completed).
func endState(err error) string {
	var term *temporal.TerminatedError
	var timeout *temporal.TimeoutError
	switch {
	case err == nil:
		return store.RunCompleted
	case temporal.IsCanceledError(err):
		return store.RunCancelled
	case errors.As(err, &term):
		return store.RunTerminated
	case errors.As(err, &timeout):
		return store.RunTimedOut
	}
	return store.RunFailed
}

// failedClasses counts the failed cells of a run by error class, from its records; cells of the grid without a
// record count as NotRun. cells is the grid's size.
func failedClasses(ctx context.Context, st interface {
	Scan(ctx context.Context, run string, fn func(store.Record) error) error
}, run string, cells int) (map[string]int, error) {
	byClass := map[string]int{}
	n := 0
	err := st.Scan(ctx, run, func(r store.Record) error {
		n++
		if r.Status == store.StatusFailed {
			byClass[r.ErrorClass]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if cells > n {
		byClass[errclass.NotRun] += cells - n
	}
	return byClass, nil
}

// nextSteps says, after a run that ended with failed cells, what failed and the commands that go on: call the
// failed cells again (--retry-failed) or start over (--new). attached says this command found the run already
// ended: running it again only exports the same failures. specRef is how the user named the spec (a path, or ""
// when they named the run).
func nextSteps(ctx context.Context, w io.Writer, sess *session, id, specRef string, cells int, attached bool) {
	if sess.store == nil {
		fmt.Fprintf(w, "  call the failed cells again: %s\n", sess.flags.command("run", id, "--retry-failed"))
		return
	}
	byClass, err := failedClasses(ctx, sess.store, id, cells)
	if err != nil || len(byClass) == 0 {
		return
	}
	classes := slices.SortedFunc(maps.Keys(byClass), func(a, b string) int {
		if byClass[a] != byClass[b] {
			return byClass[b] - byClass[a]
		}
		return strings.Compare(a, b)
	})
	var parts, env, inSpec []string
	for _, c := range classes {
		parts = append(parts, fmt.Sprintf("%s %s", thousands(byClass[c]), c))
		// Where the fix is comes from errclass's table: the environment (the key, the account, the endpoint,
		// the worker), where every cell of the model fails the same way until it is fixed; or the spec, which
		// the run keeps, so --retry-failed would meet the same answer and the fixed spec is a new run.
		switch in, _ := errclass.Of(c); in.Fix {
		case errclass.FixEnvironment:
			env = append(env, c+": "+in.Check)
		case errclass.FixSpec:
			inSpec = append(inSpec, c+": "+in.Check)
		}
	}
	fmt.Fprintf(w, "  failed cells: %s\n", strings.Join(parts, ", "))
	if len(inSpec) > 0 {
		fmt.Fprintf(w, "  these failures come from the spec; the run keeps the spec it started with, so calling them again "+
			"would meet the same answer. Fix in the spec:\n")
		for _, e := range inSpec {
			fmt.Fprintf(w, "    %s\n", e)
		}
		if specRef != "" {
			fmt.Fprintf(w, "  then run it (a changed spec is a new run):\n    %s\n", sess.flags.command("run", specRef))
		} else {
			fmt.Fprintf(w, "  then run the fixed spec file with `%s` (a changed spec is a new run)\n", sess.flags.command("run", "SPEC"))
		}
		if len(inSpec) == len(classes) {
			return
		}
	}
	if len(env) > 0 {
		lead := "these failures come from the environment, not from the cells"
		if attached {
			lead = "this run had already ended, and its failures come from the environment, not from the cells"
		}
		fmt.Fprintf(w, "  %s; running the same command again only exports them again. Fix:\n", lead)
		for _, e := range env {
			fmt.Fprintf(w, "    %s\n", e)
		}
		fmt.Fprintf(w, "  then call the failed cells again:\n")
	} else {
		fmt.Fprintf(w, "  call the failed cells again:\n")
	}
	fmt.Fprintf(w, "    %s\n", sess.flags.command("run", id, "--retry-failed"))
	if specRef != "" {
		fmt.Fprintf(w, "  or start over, every cell asked again: %s\n", sess.flags.command("run", specRef, "--new"))
	}
}

// newerUnfinished is a run of the same spec as id started after it (a --new run, whose id is id plus a time)
// that has not finished, or "" when there is none.
func newerUnfinished(ctx context.Context, sess *session, id string) (store.RunInfo, bool) {
	if sess.store == nil {
		return store.RunInfo{}, false
	}
	runs, err := sess.store.Runs(ctx)
	if err != nil {
		return store.RunInfo{}, false
	}
	for _, r := range runs { // newest first
		// A run without a state was recorded before states were: it finished if it exported.
		if strings.HasPrefix(r.ID, id+"-") && r.State != store.RunCompleted && (r.State != "" || !r.HasElapsed) {
			return r, true
		}
	}
	return store.RunInfo{}, false
}

// uiAfter says where the run's history can be browsed once this command has exited: the embedded server (and
// its Web UI) stops with the command, the history stays in the state dir, and `starter dev` serves it.
func uiAfter(w io.Writer, sess *session) {
	if sess.dev == nil || sess.dev.UIURL() == "" {
		return
	}
	abs, err := filepath.Abs(sess.flags.store.stateDir)
	if err != nil {
		abs = sess.flags.store.stateDir
	}
	fmt.Fprintf(w, "  Web UI: it stops with this command; the run's history stays in %s, and `%s` serves it again\n",
		abs, sess.flags.command("dev"))
}

// anyChanged reports whether any of the named flags of cmd was given.
func anyChanged(cmd *cobra.Command, names ...string) bool {
	return slices.ContainsFunc(names, cmd.Flags().Changed)
}
