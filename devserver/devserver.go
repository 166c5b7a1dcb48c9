// Package devserver runs an embedded Temporal server with its Web UI inside the
// current process: the default when silico is given no Temporal address.
//
// State lives in one SQLite file (or in memory), the server has one history
// shard and one task-queue partition, and everything listens on 127.0.0.1
// unless told otherwise.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	serverlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/silicolab/silico/logging"
)

// Defaults applied by Start to zero-valued Options fields.
const (
	DefaultIP        = "127.0.0.1"
	DefaultPort      = 7233
	DefaultUIPort    = 8233
	DefaultNamespace = "default"
	// DefaultRetention is how long closed workflows of the namespace created
	// at first start are kept.
	DefaultRetention = 7 * 24 * time.Hour
	// DBFile is the name of the SQLite file inside Options.StateDir.
	DBFile = "temporal.db"
)

// ErrStateDirInUse is the error Start wraps when another process's server holds the state dir.
var ErrStateDirInUse = errors.New("in use by another silico server")

// clusterName names the single cluster of the embedded server.
const clusterName = "active"

// Options configures Start. The zero value runs an in-memory server on
// 127.0.0.1:7233 with the UI on 127.0.0.1:8233 and the "default" namespace.
type Options struct {
	// StateDir holds the SQLite file (DBFile) and a lock file; it is created
	// if missing. The schema is set up on first start and reused afterwards,
	// so workflows survive a crash and restart. Only one process at a time
	// may use a StateDir.
	// Optional: "" keeps all state in memory; it is lost at Stop.
	StateDir string
	// IP is the address the frontend and the UI listen on. Internal services
	// always listen on 127.0.0.1.
	// Optional: defaults to DefaultIP (127.0.0.1).
	IP string
	// Port is the frontend gRPC port (DefaultPort is the usual choice). When it
	// is taken, or 0, a free port is chosen; FrontendHostPort reports the port in use.
	Port int
	// UIPort is the Web UI's HTTP port (DefaultUIPort is the usual choice). When
	// it is taken, or 0, a free port is chosen; UIURL reports it. -1 disables the UI.
	UIPort int
	// Namespace is registered at start (retention DefaultRetention) if it
	// does not exist yet.
	// Optional: defaults to DefaultNamespace ("default").
	Namespace string
	// SearchAttributes are custom search attributes registered on Namespace
	// at start. Registration is idempotent: attributes already present are
	// kept, new ones are added on restart. An attribute already registered
	// with another type is an error.
	// Optional: defaults to none.
	SearchAttributes map[string]enums.IndexedValueType
	// Logger receives the server's logs at warn level and above (the server is
	// chatty at info).
	// Optional: defaults to discarding all server logs.
	Logger *zap.Logger
}

// Server is a running embedded Temporal server and its Web UI. Its methods are
// safe for concurrent use.
type Server struct {
	srv       temporal.Server
	ui        *uiserver.Server
	uiDone    chan struct{} // closed when the UI's serving goroutine returns
	hostPort  string
	uiURL     string
	namespace string
	unlock    func() error    // releases the StateDir lock
	logLevel  zap.AtomicLevel // the server logger's level

	stopOnce sync.Once
	stopErr  error
}

// Start starts the server and, unless disabled, the Web UI, and returns once
// the frontend answers for the namespace. ctx bounds the start only; the
// server runs until Stop.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts = withDefaults(opts)
	if opts.Namespace == primitives.SystemLocalNamespace {
		return nil, fmt.Errorf("devserver: namespace %q is reserved", opts.Namespace)
	}
	logger, logLevel := serverLogger(opts.Logger)

	unlock := func() error { return nil }
	sqlCfg := memorySQLConfig()
	if opts.StateDir != "" {
		if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
			return nil, fmt.Errorf("devserver: create state dir: %w", err)
		}
		var err error
		if unlock, err = lockDir(opts.StateDir); err != nil {
			return nil, fmt.Errorf("devserver: %w", err)
		}
		if sqlCfg, err = prepareFile(filepath.Join(opts.StateDir, DBFile)); err != nil {
			_ = unlock()
			return nil, fmt.Errorf("devserver: %w", err)
		}
	}
	s, err := start(ctx, opts, sqlCfg, logger, logLevel)
	if err != nil {
		_ = unlock()
		return nil, fmt.Errorf("devserver: %w", err)
	}
	s.unlock = unlock
	return s, nil
}

// withDefaults fills zero-valued fields of opts.
func withDefaults(opts Options) Options {
	if opts.IP == "" {
		opts.IP = DefaultIP
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return opts
}

// serverLogger adapts z to the server's logger, at warn level and above. The
// returned level can be raised later (Stop does, since a stopping server warns
// about every connection it drops).
func serverLogger(z *zap.Logger) (serverlog.Logger, zap.AtomicLevel) {
	level := zap.NewAtomicLevelAt(zapcore.WarnLevel)
	z = z.Named("temporal")
	if z.Core().Enabled(zapcore.WarnLevel) {
		z = z.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
			if lc, err := zapcore.NewIncreaseLevelCore(c, level); err == nil {
				return lc
			}
			return c
		}))
	}
	return serverlog.NewZapLogger(z), level
}

// ports holds the ports chosen for one start.
type ports struct {
	frontend, http, ui, history, matching, worker int
}

// start runs the server over the prepared database; the caller owns the lock.
func start(ctx context.Context, opts Options, sqlCfg *config.SQL, logger serverlog.Logger, logLevel zap.AtomicLevel) (*Server, error) {
	if err := ensureNamespace(ctx, sqlCfg, opts.Namespace, opts.SearchAttributes); err != nil {
		return nil, err
	}

	// Reserve every port at once so that no two picks collide; the listeners
	// are closed right before the server is built.
	res := &reservations{}
	defer res.closeAll()
	var p ports
	var err error
	if p.frontend, err = res.reserve(opts.IP, opts.Port); err != nil {
		return nil, fmt.Errorf("frontend port: %w", err)
	}
	// The UI binds only when it starts, so its port stays reserved until then.
	uiRes := &reservations{}
	defer uiRes.closeAll()
	if opts.UIPort >= 0 {
		if p.ui, err = uiRes.reserve(opts.IP, opts.UIPort); err != nil {
			return nil, fmt.Errorf("UI port: %w", err)
		}
	}
	if p.http, err = res.reserve(opts.IP, 0); err != nil {
		return nil, fmt.Errorf("HTTP API port: %w", err)
	}
	for _, port := range []*int{&p.history, &p.matching, &p.worker} {
		if *port, err = res.reserve(DefaultIP, 0); err != nil {
			return nil, fmt.Errorf("internal port: %w", err)
		}
	}

	hostPort := net.JoinHostPort(dialHostOf(opts.IP), strconv.Itoa(p.frontend))

	// The server binds its gRPC listeners while it is being built.
	res.closeAll()
	srv, err := newTemporal(opts, sqlCfg, logger, p, hostPort)
	if err != nil {
		return nil, err
	}

	s := &Server{srv: srv, hostPort: hostPort, namespace: opts.Namespace, logLevel: logLevel}
	if err := srv.Start(); err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("start server: %w", err)
	}
	if p.ui > 0 {
		uiRes.closeAll()
		s.startUI(opts, p.ui)
	}
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// newTemporal builds (but does not start) the Temporal server.
func newTemporal(opts Options, sqlCfg *config.SQL, logger serverlog.Logger, p ports, hostPort string) (temporal.Server, error) {
	const store = "sqlite-default"
	internal := func(port int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: port, BindOnIP: DefaultIP}}
	}
	cfg := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: DefaultIP},
		},
		Persistence: config.Persistence{
			DefaultStore:     store,
			VisibilityStore:  store,
			NumHistoryShards: 1,
			DataStores:       map[string]config.DataStore{store: {SQL: sqlCfg}},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {
					Enabled:                true,
					InitialFailoverVersion: 1,
					RPCAddress:             hostPort,
					HTTPAddress:            net.JoinHostPort(dialHostOf(opts.IP), strconv.Itoa(p.http)),
				},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			string(primitives.FrontendService): {RPC: config.RPC{GRPCPort: p.frontend, HTTPPort: p.http, BindOnIP: opts.IP}},
			string(primitives.HistoryService):  internal(p.history),
			string(primitives.MatchingService): internal(p.matching),
			string(primitives.WorkerService):   internal(p.worker),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		PublicClient: config.PublicClient{HostPort: hostPort},
	}

	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("create authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("create claim mapper: %w", err)
	}
	local := func(port int) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort(DefaultIP, strconv.Itoa(port)))
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		// Static membership: no ringpop gossip, and no stale members from a
		// crashed process to wait for after a restart.
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static.SingleLocalHost(hostPort),
			primitives.HistoryService:  local(p.history),
			primitives.MatchingService: local(p.matching),
			primitives.WorkerService:   local(p.worker),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("create server: %w", err)
	}
	return srv, nil
}

// dynamicConfig returns the server's fixed dynamic configuration.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// One partition per task queue: on one machine this gives several
		// times the activity throughput of the default four.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// As the Temporal CLI's dev server.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                 8096,
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
	}
}

// startUI starts the Web UI on port, served by a goroutine that Stop waits for.
func (s *Server) startUI(opts Options, port int) {
	s.ui = uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		// The UI formats its address as host:port, so IPv6 needs brackets.
		Host:                strings.TrimSuffix(net.JoinHostPort(opts.IP, "0"), ":0"),
		Port:                port,
		TemporalGRPCAddress: s.hostPort,
		EnableUI:            true,
		DefaultNamespace:    opts.Namespace,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true,
	}))
	s.uiURL = "http://" + net.JoinHostPort(dialHostOf(opts.IP), strconv.Itoa(port))
	s.uiDone = make(chan struct{})
	go func() {
		defer close(s.uiDone)
		// Start blocks until Stop. It exits the process if it cannot listen,
		// which the port reservation makes unlikely.
		_ = s.ui.Start()
	}()
}

// dialHostOf returns the host a local client dials to reach a listener on ip.
func dialHostOf(ip string) string {
	if p := net.ParseIP(ip); p != nil && p.IsUnspecified() {
		return DefaultIP
	}
	return ip
}

// waitReady returns once the frontend describes the namespace and the UI, if
// any, accepts connections.
func (s *Server) waitReady(ctx context.Context) error {
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  s.hostPort,
		Namespace: s.namespace,
		Logger:    logging.Temporal(zap.NewNop()),
	})
	if err != nil {
		return fmt.Errorf("connect to frontend %s: %w", s.hostPort, err)
	}
	defer c.Close()
	for {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.namespace})
		if err == nil {
			break
		}
		if serr := sleep(ctx, 20*time.Millisecond); serr != nil {
			return fmt.Errorf("wait for namespace %q: %w (last error: %w)", s.namespace, serr, err)
		}
	}
	if s.ui == nil {
		return nil
	}
	addr := s.uiURL[len("http://"):]
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-s.uiDone:
			return fmt.Errorf("UI server on %s stopped at start", addr)
		default:
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("wait for UI on %s: %w", addr, err)
		}
	}
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// FrontendHostPort returns the frontend's gRPC address, e.g. "127.0.0.1:7233".
func (s *Server) FrontendHostPort() string { return s.hostPort }

// UIURL returns the Web UI's base URL, e.g. "http://127.0.0.1:8233", or ""
// when the UI is disabled.
func (s *Server) UIURL() string { return s.uiURL }

// Namespace returns the namespace registered at start.
func (s *Server) Namespace() string { return s.namespace }

// Quiet drops the server's logs from now on, as Stop does. A process that stops its own clients and workers
// before the server calls it first: their cancelled long polls are logged by the server as errors, which are
// expected at shutdown.
func (s *Server) Quiet() { s.logLevel.SetLevel(zapcore.DPanicLevel) }

// Stop stops the UI and the server and releases their ports and the state
// dir. Further calls return the first call's result.
//
// The server's SQLite driver keeps its connection pooled for the life of the
// process, so a later Start on the same StateDir in this process reuses it.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		// Shutdown noise (dropped connections, canceled refreshes) is expected;
		// failures to stop are returned.
		s.logLevel.SetLevel(zapcore.DPanicLevel)
		if s.ui != nil {
			s.ui.Stop()
			<-s.uiDone
		}
		if err := s.srv.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop server: %w", err))
		}
		if s.unlock != nil {
			if err := s.unlock(); err != nil {
				errs = append(errs, fmt.Errorf("unlock state dir: %w", err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			s.stopErr = fmt.Errorf("devserver: %w", err)
		}
	})
	return s.stopErr
}

// memorySQLConfig returns the configuration of a fresh in-memory database.
func memorySQLConfig() *config.SQL {
	return &config.SQL{
		PluginName: sqliteplugin.PluginName,
		// Shared cache under a random name: every connection of this server
		// sees the same database, and no other server does.
		DatabaseName:      "silico-" + strconv.FormatUint(rand.Uint64(), 36),
		ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"},
	}
}
