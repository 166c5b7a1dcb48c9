package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/temporalclient"
)

// The starter's flags come in option sets, as the temporal CLI's do (its ClientOptions and the like): each set is
// a small type that registers its own flags, and each command registers the sets it uses and no other.

// defaultStateDir is the state dir of embedded mode when --state-dir is not given.
const defaultStateDir = store.DefaultDir

// clientOptions say which Temporal server a command talks to: --address (empty: the embedded server of the state
// dir) and --namespace, and the TLS and API key flags of temporalclient.Flags.
type clientOptions struct {
	address   string
	namespace string
	cluster   temporalclient.Flags
}

func (o *clientOptions) buildFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.address, "address", os.Getenv(temporalclient.EnvAddress),
		"Temporal frontend host:port; empty runs an embedded server, worker and simulator in this process (env "+temporalclient.EnvAddress+")")
	fl.StringVar(&o.namespace, "namespace", envOr(temporalclient.EnvNamespace, temporalclient.DefaultNamespace),
		"Temporal namespace (env "+temporalclient.EnvNamespace+")")
	o.cluster.Register(fl)
}

// serverOptions say how the embedded Temporal server listens, for the commands that may start it (its state is
// in the store options' state dir).
type serverOptions struct {
	port   int
	uiPort int
	noUI   bool
}

func (o *serverOptions) buildFlags(fl *pflag.FlagSet) {
	fl.IntVar(&o.port, "port", 7233, "embedded mode: frontend port (a free one is chosen when taken)")
	fl.IntVar(&o.uiPort, "ui-port", 8233, "embedded mode: Web UI port (a free one is chosen when taken)")
	fl.BoolVar(&o.noUI, "no-ui", false, "embedded mode: do not serve the Web UI")
}

// workerOptions set up the worker and the model simulator a command runs in this process in embedded mode.
type workerOptions struct {
	simAddr  string
	simLog   string
	keyAllow string
}

func (o *workerOptions) buildFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.simAddr, "sim-addr", "127.0.0.1:0", "embedded mode: listen address of the model simulator")
	fl.StringVar(&o.simLog, "sim-request-log", "", "embedded mode: append the simulator's request log (JSON lines) to this file")
	fl.StringVar(&o.keyAllow, "api-key-env-allow", llm.KeyEnvAllowSetting(os.Getenv),
		"embedded mode: comma-separated glob patterns of the environment variables a spec's api_key_env may name (env "+llm.KeyEnvAllowVar+")")
}

// storeOptions name the results store: --store, else store.EnvDSN, else results.db in the state dir.
type storeOptions struct {
	path     string
	stateDir string
}

// buildFlags registers --store and --state-dir for the commands that reach runs, whose state dir is also the
// embedded server's and whose store is the one the workers share.
func (o *storeOptions) buildFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.stateDir, "state-dir", defaultStateDir, "embedded mode: directory of the server's and the results' SQLite files")
	fl.StringVar(&o.path, "store", "", "results store: a SQLite file, or a postgres:// URL the workers share "+
		"(env "+store.EnvDSN+"; default: <state-dir>/results.db)")
}

// buildStoreOnlyFlags registers --store and --state-dir for the commands that use a store and nothing else
// (cache, estimate).
func (o *storeOptions) buildStoreOnlyFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.path, "store", "", "results store: a SQLite file, or a postgres:// URL (env "+store.EnvDSN+"; default: <state-dir>/results.db)")
	fl.StringVar(&o.stateDir, "state-dir", defaultStateDir, "directory of the embedded mode's results.db")
}

// dsn is the results store's DSN: --store, else store.EnvDSN, else the SQLite file in the state dir.
func (o *storeOptions) dsn() string { return storeDSN(o.path, o.stateDir) }

func storeDSN(flag, stateDir string) string {
	return store.DSN(flag, os.Getenv, filepath.Join(stateDir, store.FileName))
}

// errNoStore says that the SQLite file a command would read does not exist.
var errNoStore = errors.New("no results store there yet")

// open opens the store, but never creates a SQLite file: a command that only reads has nothing to read in a
// store that does not exist.
func (o *storeOptions) open(ctx context.Context) (store.Store, error) {
	dsn := o.dsn()
	if !store.IsPostgres(dsn) {
		if _, err := os.Stat(dsn); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w (name it with --store, --state-dir or %s)", dsn, errNoStore, store.EnvDSN)
		}
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open results store: %w", err)
	}
	return st, nil
}

// logOptions say how the commands that open a session log.
type logOptions struct {
	format string
	level  string
	file   string
}

func (o *logOptions) buildFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.format, "log-format", "console", "format of the log file: console or json")
	fl.StringVar(&o.level, "log-level", "info", "level of the log file: debug, info, warn or error")
	fl.StringVar(&o.file, "log-file", "", "the log of silico, the Temporal SDK and the embedded server (default <state-dir>/"+logFileName+
		"); the terminal shows only silico's warnings and one line per error")
}

// connFlags are the option sets of a command about runs. A command registers the sets it uses (each set's
// buildFlags); a set it does not register keeps its zero value, which none of that command's code reads: export
// and report register the store alone and never open a session; runs opens one only with --address, so it has
// no server options; status and cancel never start a worker, so they have no worker options.
type connFlags struct {
	client clientOptions
	server serverOptions
	worker workerOptions
	store  storeOptions
	log    logOptions
}

// registerSession registers the sets of a command that opens a session that may start the embedded server
// (status, cancel): client, server, store and log options.
func (f *connFlags) registerSession(fl *pflag.FlagSet) {
	f.client.buildFlags(fl)
	f.server.buildFlags(fl)
	f.store.buildFlags(fl)
	f.log.buildFlags(fl)
}

// registerWorker registers every set, for a command that runs a worker in embedded mode (run, dev).
func (f *connFlags) registerWorker(fl *pflag.FlagSet) {
	f.registerSession(fl)
	f.worker.buildFlags(fl)
}

// acceptUnused registers, on a command that registered only some sets, every other flag of the sets as hidden
// and deprecated: a script that passes one (export --address, status --sim-addr, as every command took before the
// sets were split) still runs, with a warning that the flag does nothing there, instead of failing on an unknown
// flag. Call it after the command's own sets are registered.
func acceptUnused(fl *pflag.FlagSet, verb string) {
	var all connFlags
	every := pflag.NewFlagSet(verb, pflag.ContinueOnError)
	all.registerWorker(every)
	every.VisitAll(func(f *pflag.Flag) {
		if fl.Lookup(f.Name) != nil {
			return
		}
		fl.AddFlag(f)
		_ = fl.MarkDeprecated(f.Name, verb+" does not use it; it is ignored")
	})
}

func (f *connFlags) embedded() bool { return f.client.address == "" }

// dsn is the results store's DSN (storeOptions.dsn).
func (f *connFlags) dsn() string { return f.store.dsn() }

// openExisting opens the results store the flags name, refusing a SQLite path with no file: opening it would
// create an empty store, and a command that reads runs would then report that none exists.
func (f *connFlags) openExisting(ctx context.Context) (store.Store, error) {
	if dsn := f.dsn(); !store.IsPostgres(dsn) {
		if _, err := os.Stat(dsn); err != nil {
			return nil, fmt.Errorf("no results store at %s (set --store, SILICO_STORE or --state-dir): %w", dsn, err)
		}
	}
	st, err := store.Open(ctx, f.dsn())
	if err != nil {
		return nil, fmt.Errorf("open results store: %w", err)
	}
	return st, nil
}

// storeNamed reports whether the results store is known to be the workers' one: always in embedded mode (this
// process is the worker); with --address only when --store or store.EnvDSN names it, since the default file is
// this machine's.
func (f *connFlags) storeNamed() bool {
	return f.embedded() || f.store.path != "" || os.Getenv(store.EnvDSN) != ""
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
