package flagerr

import (
	"errors"
	"io"
	"testing"

	"github.com/spf13/pflag"
)

func TestExplain(t *testing.T) {
	parse := func(args ...string) error {
		fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("address", "", "")
		fs.Bool("sim", false, "")
		return fs.Parse(args)
	}
	for args, want := range map[string]string{
		"-address":       "unknown shorthand flag: 'a' in -address (flags take two dashes: --address)",
		"-sim":           "unknown shorthand flag: 's' in -sim (flags take two dashes: --sim)",
		"-address=1:2":   "unknown shorthand flag: 'a' in -address=1:2 (flags take two dashes: --address)",
		"--no-such-flag": "unknown flag: --no-such-flag",
		"-x":             "unknown shorthand flag: 'x' in -x",
	} {
		err := parse(args)
		if got := Explain(err); got == nil || got.Error() != want || !errors.Is(got, err) {
			t.Errorf("Explain(parse %q) = %v, want %q wrapping pflag's error", args, got, want)
		}
	}
	if Explain(nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}
