package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/silicolab/silico/devserver"
)

// serverFile, in the state dir, says where the embedded server of a running starter listens, so that other
// starter commands on the same state dir (status, cancel, runs, a second run) connect to it instead of starting
// a server of their own, which the state dir's lock would refuse.
const serverFile = "server.json"

// serverInfo is what serverFile holds.
type serverInfo struct {
	HostPort string `json:"host_port"`
	UIURL    string `json:"ui_url,omitempty"`
	PID      int    `json:"pid"`
}

func writeServerInfo(dir string, info serverInfo) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, serverFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, serverFile))
}

// readServerInfo is what serverFile in dir says, when it names another process and that process still serves
// dir: it holds the state dir's lock (devserver.InUse), which the kernel drops when the process dies, so a file
// left by a killed starter is ignored whatever process has its pid since. Where locks are not available the
// file is taken as it is, and liveServer's health check decides.
func readServerInfo(dir string) (serverInfo, bool) {
	var info serverInfo
	b, err := os.ReadFile(filepath.Join(dir, serverFile))
	if err != nil || json.Unmarshal(b, &info) != nil || info.HostPort == "" || info.PID == os.Getpid() {
		return info, false
	}
	if inUse, known := devserver.InUse(dir); known {
		return info, inUse
	}
	return info, true
}

// Waits of the search for another starter's server. A starter that serves the state dir answers within
// reachWait even on a loaded machine (its health check is one RPC); a process that holds the state dir's lock
// without a published server is starting its server or stopping it, which takes a few seconds at most: the
// search goes on for publishWait, taking the state dir itself as soon as the lock is free.
const (
	reachWait   = 15 * time.Second
	publishWait = 30 * time.Second
	reachPoll   = 250 * time.Millisecond
)

// liveServer reports the server another starter runs on dir. When serverFile names a live process, its server
// is asked until it answers or reachWait has passed: a busy machine may take seconds to answer, and a command
// that gave up early would start a server of its own and not find the run.
func liveServer(ctx context.Context, dir string) (serverInfo, bool) {
	info, alive := readServerInfo(dir)
	if !alive {
		return info, false
	}
	ctx, cancel := context.WithTimeout(ctx, reachWait)
	defer cancel()
	for {
		if healthy(ctx, info.HostPort) {
			return info, true
		}
		select {
		case <-ctx.Done():
			return info, false
		case <-time.After(reachPoll):
		}
		// The owner may have exited (its server with it) or started again on another port.
		if info, alive = readServerInfo(dir); !alive {
			return info, false
		}
	}
}

// healthy reports whether a Temporal frontend answers at hostPort, within a few seconds.
func healthy(ctx context.Context, hostPort string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Logger: quietLogger{}})
	if err != nil {
		return false
	}
	defer c.Close()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err == nil
}

// quietLogger drops the SDK's logs of a probe dial.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
