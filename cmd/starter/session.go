package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/silicolab/silico/activities"
	"github.com/silicolab/silico/devserver"
	"github.com/silicolab/silico/experiment"
	"github.com/silicolab/silico/llm"
	"github.com/silicolab/silico/logging"
	"github.com/silicolab/silico/sim"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/temporalclient"
	"github.com/silicolab/silico/wire"
	"github.com/silicolab/silico/workerhost"
)

// session is a connection to Temporal, and in embedded mode the server, simulator, store and worker behind it.
type session struct {
	flags *connFlags
	// log is silico's own logger (its warnings reach the terminal); logs holds it and the others.
	log    *zap.Logger
	logs   *sessionLogs
	client client.Client
	// hostPort is the Temporal frontend the client is connected to.
	hostPort string
	dev      *devserver.Server
	sim      *sim.Served
	simURL   string
	simLog   io.Closer
	store    store.Store
	worker   worker.Worker
	// specs is shared with this session's own worker: a spec the starter saves is the one the worker uses.
	specs *activities.SpecCache
	// shared is the server of another starter on the same state dir, when this session uses it.
	shared *serverInfo
	// attrs reports whether the server knows silico's search attributes.
	attrs bool
	// serves says this session may run a worker (serve): embedded mode, a command that serves runs, with a
	// server of its own. keyAllow and sharedSim are that worker's settings.
	serves    bool
	keyAllow  []string
	sharedSim bool
}

// sessionOptions choose what a session starts in embedded mode.
type sessionOptions struct {
	worker bool
	sim    *experiment.SimulatorSettings
	// sharedSim: the simulator serves runs whose specs this session does not know (starter dev).
	sharedSim bool
}

// open connects to Temporal. In embedded mode it starts the server (and UI), and optionally the simulator and a
// worker. Close stops everything it started.
func open(ctx context.Context, f *connFlags, opts sessionOptions, stderr io.Writer) (*session, error) {
	logs, err := openLogs(f, stderr)
	if err != nil {
		return nil, usageError{err}
	}
	s := &session{flags: f, log: logs.own, logs: logs}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	hostPort := f.client.address
	if f.embedded() {
		info, err := s.reach(ctx, opts)
		if err != nil {
			return nil, err
		}
		if s.dev != nil {
			hostPort = s.dev.FrontendHostPort()
		} else {
			// Another starter serves this state dir. Looking at runs through its server is fine; running one
			// is not: that starter stops its server and worker when its own run ends.
			if opts.worker {
				return nil, fmt.Errorf("another starter (pid %d) is running on %s; wait for it, give this one its own "+
					"--state-dir, or keep one server up with `starter dev` and use --address %s", info.PID, f.store.stateDir, info.HostPort)
			}
			s.shared = &info
			hostPort = info.HostPort
			fmt.Fprintf(stderr, "using the embedded server of the starter running on %s (pid %d)\n", f.store.stateDir, info.PID)
			if err := s.openStore(ctx); err != nil {
				return nil, err
			}
		}
	}
	s.hostPort = hostPort
	conn := temporalclient.Config{Address: hostPort, Namespace: f.client.namespace}
	if !f.embedded() { // the embedded server is plain, on loopback
		if conn, err = f.client.cluster.Config(hostPort, f.client.namespace, os.Getenv); err != nil {
			return nil, usageError{err}
		}
	}
	copts, err := conn.ClientOptions(logging.Temporal(s.logs.sdk))
	if err != nil {
		return nil, usageError{err}
	}
	s.client, err = client.DialContext(ctx, copts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", hostPort, err)
	}
	if f.embedded() {
		s.attrs = s.hasSearchAttributes(ctx)
	} else if err := workerhost.EnsureSearchAttributes(ctx, s.client, f.client.namespace); err != nil {
		// A plain cluster where this client may not create them: say how.
		fmt.Fprintf(stderr, "note: runs are started without silico's search attributes (%v)\n", err)
	} else {
		s.attrs = true
	}
	if f.embedded() && opts.worker && s.shared == nil {
		if s.keyAllow, err = llm.ParseKeyEnvAllow(f.worker.keyAllow); err != nil {
			return nil, usageError{fmt.Errorf("--api-key-env-allow: %w", err)}
		}
		s.serves, s.sharedSim = true, opts.sharedSim
		s.specs = &activities.SpecCache{}
	}
	ok = true
	return s, nil
}

// serve starts the session's worker on task queue tq, the queue of the runs it continues: in the embedded default
// the queue of the one run this command names (wire.RunQueue), so that no other run of the state dir goes on
// unasked; wire.TaskQueue for `starter dev`, which serves the runs started through it as a cluster's workers do.
// A session that runs no worker (status, cancel, --address, another starter's server) starts none; a second call
// keeps the first worker.
func (s *session) serve(tq string) error {
	if !s.serves || s.worker != nil {
		return nil
	}
	w, err := workerhost.New(s.client, workerhost.Config{
		Store:     s.store,
		Specs:     s.specs,
		TaskQueue: tq,
		Getenv:    temporalclient.WithoutOwnVariables(os.Getenv, store.EnvDSN),
		SimURL:    s.simURL,
		// Runs started by other clients (starter dev) meet a simulator started with dev's flags.
		SimSettingsFixed: s.sharedSim,
		// This worker serves its own user; the output directory is theirs to choose.
		OutputAnywhere: true,
		KeyEnvAllow:    s.keyAllow,
	})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	s.worker = w
	return nil
}

// runQueue is the task queue a new execution of run id starts on: in the embedded default the run's own
// (wire.RunQueue), which only a starter naming the run serves; with --address wire.TaskQueue, which every worker
// of the cluster serves.
func (s *session) runQueue(id string) string {
	if s.flags.embedded() {
		return wire.RunQueue(id)
	}
	return wire.TaskQueue
}

// reach finds the server of the state dir: another starter's, when one serves it (info), else one this session
// starts (s.dev). A process that holds the state dir without a published server is starting its server (it
// publishes it within seconds) or stopping it (the lock is free within seconds): reach tries both, the other's
// server and the state dir itself, until one works or publishWait has passed.
func (s *session) reach(ctx context.Context, opts sessionOptions) (serverInfo, error) {
	dir := s.flags.store.stateDir
	deadline := time.Now().Add(publishWait)
	for {
		if info, live := liveServer(ctx, dir); live {
			return info, nil
		}
		inUse, err := s.startEmbedded(ctx, opts)
		if err != nil || !inUse {
			return serverInfo{}, err
		}
		if time.Now().After(deadline) {
			return serverInfo{}, fmt.Errorf("state dir %s is in use by another process whose server does not answer; "+
				"wait for it to end, or give this command its own --state-dir", dir)
		}
		select {
		case <-ctx.Done():
			return serverInfo{}, ctx.Err()
		case <-time.After(reachPoll):
		}
	}
}

// startEmbedded starts the embedded server on the state dir (and, for a session with a worker, the simulator and
// the store beside it) and publishes where it listens. inUse reports, without an error, that another process
// holds the state dir: a starter that is starting its server or stopping it.
func (s *session) startEmbedded(ctx context.Context, opts sessionOptions) (inUse bool, err error) {
	f := s.flags
	// The server takes the longest to start; the simulator (its tokenizer) and the store get ready beside it.
	type started struct {
		srv *devserver.Server
		err error
	}
	devDone := make(chan started, 1)
	go func() {
		uiPort := f.server.uiPort
		if f.server.noUI {
			uiPort = -1
		}
		srv, err := devserver.Start(ctx, devserver.Options{
			StateDir:         f.store.stateDir,
			Port:             f.server.port,
			UIPort:           uiPort,
			Namespace:        f.client.namespace,
			SearchAttributes: wire.SearchAttributes(),
			Logger:           s.logs.server,
		})
		devDone <- started{srv, err}
	}()
	var prepErr error
	if opts.worker {
		if s.sim == nil { // started by an earlier try that found the state dir in use
			prepErr = s.startSim(opts.sim)
		}
		if prepErr == nil {
			prepErr = s.openStore(ctx)
		}
	}
	d := <-devDone
	s.dev = d.srv
	if errors.Is(d.err, devserver.ErrStateDirInUse) {
		return true, nil
	}
	if d.err != nil {
		return false, fmt.Errorf("start embedded Temporal server: %w", d.err)
	}
	if prepErr != nil {
		return false, prepErr
	}
	info := serverInfo{HostPort: s.dev.FrontendHostPort(), UIURL: s.dev.UIURL(), PID: os.Getpid()}
	if err := writeServerInfo(f.store.stateDir, info); err != nil {
		return false, fmt.Errorf("write %s: %w", serverFile, err)
	}
	return false, nil
}

func (s *session) openStore(ctx context.Context) error {
	if s.store != nil {
		return nil
	}
	st, err := store.Open(ctx, s.flags.dsn())
	if err != nil {
		return fmt.Errorf("open results store: %w", err)
	}
	s.store = st
	return nil
}

// startSim serves the model simulator on loopback for models with provider "sim".
func (s *session) startSim(set *experiment.SimulatorSettings) error {
	cfg := sim.Config{Forget: true} // the request log goes to --sim-request-log only
	if dir := s.flags.store.stateDir; dir != "" {
		// Its batches outlive the process, as a provider's do: a run resumed after a kill -9 finds them.
		cfg.Batch.StateDir = filepath.Join(dir, "sim")
	}
	if set != nil {
		cfg.Latency = sim.Latency{Fixed: time.Duration(set.Latency), Jitter: time.Duration(set.Jitter)}
		cfg.RPM, cfg.TPM = set.RPM, set.TPM
		cfg.Faults = sim.Faults{
			RateLimit: set.Faults.RateLimit, Quota: set.Faults.Quota,
			ServerError500: set.Faults.Server500, ServerError503: set.Faults.Server503,
			Hang: set.Faults.Hang, Drop: set.Faults.Drop, Malformed: set.Faults.Malformed,
			Length: set.Faults.Length, ContentFilter: set.Faults.ContentFilter,
		}
		cfg.FailCells = set.Faults.FailCells
		cfg.Batch.ProcessingTime = time.Duration(set.BatchTime)
		cfg.Batch.EnqueuedTokens = set.BatchEnqueuedTokens
		cfg.Sampling = set.Sampling
		cfg.ServedModel, cfg.SystemFingerprint = set.ServedModel, set.SystemFingerprint
		if c := set.SnapshotChange; c != nil {
			cfg.SnapshotChange = &sim.SnapshotChange{FromSeed: int64(c.FromSeed), ServedModel: c.ServedModel, SystemFingerprint: c.SystemFingerprint}
		}
		if b := set.PositionBias; b != nil {
			cfg.PositionBias = sim.PositionBias{Position: b.Position, Strength: b.Strength}
		}
		cfg.Preferences = set.Preferences
		if o := set.Outage; o != nil {
			// This simulator owns its listener (sim.Serve below), so every kind applies, refuse included.
			cfg.Outages = []sim.Outage{{After: time.Duration(o.After), For: time.Duration(o.For),
				Kind: sim.OutageKind(o.Kind), Status: o.Status}}
		}
	}
	if s.flags.worker.simLog != "" {
		f, err := os.OpenFile(s.flags.worker.simLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("open simulator request log: %w", err)
		}
		cfg.RequestLog = f
		s.simLog = f
	}
	h, err := sim.New(cfg)
	if err != nil {
		return fmt.Errorf("start simulator: %w", err)
	}
	ln, err := net.Listen("tcp", s.flags.worker.simAddr)
	if err != nil {
		// A taken default port is no reason to fail: any free loopback port serves.
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return fmt.Errorf("simulator listen on %s: %w", s.flags.worker.simAddr, err)
	}
	s.sim, err = sim.Serve(h, ln)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("start simulator: %w", err)
	}
	s.simURL = s.sim.URL()
	return nil
}

// hasSearchAttributes reports whether the server has silico's custom search attributes registered; runs only set
// them when it does, so a plain cluster works without setup.
func (s *session) hasSearchAttributes(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := s.client.OperatorService().ListSearchAttributes(ctx,
		&operatorservice.ListSearchAttributesRequest{Namespace: s.flags.client.namespace})
	if err != nil {
		return false
	}
	for name := range wire.SearchAttributes() {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			return false
		}
	}
	return true
}

// uiLink is the Web UI address of a workflow, or "" when there is no known UI.
func (s *session) uiLink(id string) string {
	ui := ""
	switch {
	case s.dev != nil:
		ui = s.dev.UIURL()
	case s.shared != nil:
		ui = s.shared.UIURL
	}
	if ui == "" {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", ui, s.flags.client.namespace, id)
}

// ownerGone reports whether the starter whose server this session uses has exited (or stopped serving): its
// run ended, or it was killed. False for a session with a server of its own.
func (s *session) ownerGone() bool {
	if s.shared == nil {
		return false
	}
	info, alive := readServerInfo(s.flags.store.stateDir)
	return !alive || info.PID != s.shared.PID || info.HostPort != s.shared.HostPort || !healthy(context.Background(), info.HostPort)
}

// Close stops what the session started, worker first so no activity writes after the store closes.
func (s *session) Close() {
	if s.dev != nil {
		s.dev.Quiet()
	}
	if s.worker != nil {
		s.worker.Stop()
	}
	if s.sim != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.sim.Shutdown(ctx) // calls still in flight after the grace lose their connections
		cancel()
		if err := s.sim.Err(); err != nil {
			s.log.Warn("simulator stopped", zap.Error(err))
		}
	}
	if s.simLog != nil {
		_ = s.simLog.Close()
	}
	if s.client != nil {
		s.client.Close()
	}
	if s.store != nil {
		_ = s.store.Close()
	}
	if s.dev != nil {
		_ = os.Remove(filepath.Join(s.flags.store.stateDir, serverFile))
		if err := s.dev.Stop(); err != nil {
			s.log.Warn("stop embedded server", zap.Error(err))
		}
	}
	s.logs.close()
}
