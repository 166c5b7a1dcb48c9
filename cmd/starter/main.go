// Command starter runs silico experiments: it validates specs, starts (or attaches to) the ExperimentWorkflow of a
// spec, shows its progress, and writes its outputs.
//
// With no Temporal address (--address / TEMPORAL_ADDRESS) everything runs in this process: an embedded Temporal
// server persisted under .silico/, its Web UI, a worker and the model simulator.
//
// Exit codes: 0 success, 1 error, 2 invalid usage or spec, 3 some calls failed, 130 interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/silicolab/silico/buildinfo"
	"github.com/silicolab/silico/cmd/internal/flagerr"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/specfile"
)

// Exit codes, as the README lists them.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitCallsFailed = 3
	exitInterrupted = 130
)

// codeError carries the exit code of a failure out of a command.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *codeError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &codeError{code: code, err: err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first Ctrl-C the process stops gracefully (calls in flight land); a second one ends it at once.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root, stopPprof := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	stopPprof()
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		if ce.err != nil && ce.err.Error() != "" {
			fmt.Fprintln(stderr, "Error:", ce.err)
		}
		return ce.code
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "interrupted")
		return exitInterrupted
	}
	fmt.Fprintln(stderr, "Error:", err)
	if isUsage(err) || isCobraUsage(err) {
		fmt.Fprintf(stderr, "Usage: %s\nRun '%s --help' for the flags.\n", cmd.UseLine(), cmd.CommandPath())
		return exitUsage
	}
	return exitError
}

// isCobraUsage reports whether err is one of the command-line errors cobra makes itself, as plain errors: an
// unknown command, a required flag not given (MarkFlagRequired), or flags of a group given wrong.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "required flag(s)", "if any flags in the group", "at least one of the flags in the group"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// usageError marks errors of the command line itself (unknown flag, wrong arguments).
type usageError struct{ error }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// newRoot is the command tree, and the function that stops what its flags started (the --pprof server).
func newRoot(stdout, stderr io.Writer) (*cobra.Command, func()) {
	root := &cobra.Command{
		Use:           "starter",
		Short:         "Run language-model experiments as durable Temporal workflows",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Read().String(),
	}
	root.SetVersionTemplate(buildinfo.VersionTemplate)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagerr.Explain(err)} })
	stopPprof := addPprofFlag(root, stderr)
	root.AddCommand(newRunCmd(), newValidateCmd(), newStatusCmd(), newExportCmd(), newCancelCmd(), newReportCmd(), newCompareCmd(), newDevCmd(), newPromptCmd(), newEstimateCmd(), newCacheCmd(), newRunsCmd(), newPauseCmd(), newResumeCmd())
	return root, stopPprof
}

// exactArgs is cobra.ExactArgs with the usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MinimumNArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// loadSpec is specfile.Load that prints the spec's notes (keys accepted without effect) to w, one per line.
func loadSpec(w io.Writer, path string) (*experiment.Spec, error) {
	spec, err := specfile.Load(path)
	if err != nil {
		return nil, err
	}
	for _, n := range spec.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return spec, nil
}
