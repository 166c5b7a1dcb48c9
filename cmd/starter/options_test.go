package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/temporalclient"
)

// TestPrintedCommandsParse holds that every command line the starter prints for the user to paste
// (connFlags.command) takes only flags its command registers: each command has only the option sets it uses, so
// a line for export repeats no Temporal flag.
func TestPrintedCommandsParse(t *testing.T) {
	t.Setenv(temporalclient.EnvAddress, "")
	t.Setenv(temporalclient.EnvNamespace, "")
	t.Setenv(store.EnvDSN, "")
	remote := connFlags{client: clientOptions{address: "temporal.example:7233", namespace: "research"},
		store: storeOptions{path: "postgres://db.example/silico", stateDir: defaultStateDir}}
	fs := pflag.NewFlagSet("tls", pflag.ContinueOnError)
	remote.client.cluster.Register(fs)
	if err := fs.Parse([]string{"--tls-cert-path", "c.pem", "--tls-key-path", "k.pem"}); err != nil {
		t.Fatal(err)
	}
	embedded := connFlags{client: clientOptions{namespace: temporalclient.DefaultNamespace}, store: storeOptions{stateDir: "elsewhere"}}
	for name, f := range map[string]*connFlags{"remote": &remote, "embedded": &embedded} {
		for _, verb := range []string{"run", "status", "cancel", "runs", "dev", "export", "report"} {
			var args []string
			if verb != "runs" && verb != "dev" {
				args = []string{"silico-run-1"}
			}
			line := f.command(verb, args...)
			root, stop := newRoot(io.Discard, io.Discard)
			cmd, rest, err := root.Find(strings.Fields(line)[1:])
			if err == nil {
				err = cmd.ParseFlags(rest)
			}
			stop()
			if err != nil {
				t.Errorf("%s: `%s` does not parse: %v", name, line, err)
			}
		}
	}
	if line := remote.command("export", "silico-run-1"); strings.Contains(line, "--address") || !strings.Contains(line, "--store") {
		t.Errorf("export line %q: want the store and no Temporal flag", line)
	}
}

// TestCommandsRegisterTheirOptionSets: each command has the flags of the option sets it uses and none of the
// others (one flag stands for each set).
func TestCommandsRegisterTheirOptionSets(t *testing.T) {
	sets := map[string]string{"client": "tls-cert-path", "server": "ui-port", "worker": "api-key-env-allow", "store": "state-dir", "log": "log-level"}
	want := map[string][]string{
		"run":    {"client", "server", "worker", "store", "log"},
		"dev":    {"client", "server", "worker", "store", "log"},
		"status": {"client", "server", "store", "log"},
		"cancel": {"client", "server", "store", "log"},
		"runs":   {"client", "store", "log"},
		"export": {"store"},
		"report": {"store"},
	}
	root, stop := newRoot(io.Discard, io.Discard)
	defer stop()
	for verb, has := range want {
		cmd, _, err := root.Find([]string{verb})
		if err != nil {
			t.Fatal(err)
		}
		for set, flag := range sets {
			f := cmd.Flags().Lookup(flag)
			if got, want := f != nil && f.Deprecated == "", slices.Contains(has, set); got != want {
				t.Errorf("%s: --%s (the %s options) registered %v, want %v", verb, flag, set, got, want)
			}
			// A flag of a set the command does not use is still taken, hidden and ignored with a warning, so a
			// script written when every command took every flag keeps running.
			if f == nil || (f.Deprecated != "") != f.Hidden {
				t.Errorf("%s: --%s is not taken, or is deprecated but listed in help", verb, flag)
			}
		}
		if err := cmd.ParseFlags([]string{"--address", "localhost:1", "--sim-addr", "127.0.0.1:0", "--port", "1", "--log-level", "info"}); err != nil {
			t.Errorf("%s: flags of every set: %v; want them taken", verb, err)
		}
	}
}
