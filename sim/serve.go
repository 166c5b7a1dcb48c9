package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Served is a Server on a TCP listener it owns, which lets it apply the simulator's refuse outages
// (OutageRefuse): at a refuse window's start it closes the listening socket and every connection (as when the
// provider's process dies), so that clients get ECONNREFUSED; at its end it listens again on the same address.
// Create it with Serve; Close or Shutdown stops it and waits for its goroutines.
type Served struct {
	s    *Server
	addr string // host:port of the listener, kept across refuse windows

	// loop is the one goroutine that changes cur; stop ends it, done is closed when it has returned.
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	// serving counts the goroutines running http.Server.Serve.
	serving sync.WaitGroup

	mu  sync.Mutex
	cur *http.Server // nil while refusing
	err error        // the first failure to serve or to listen again
	// failed is closed at the first failure, which ends serving for good.
	failed     chan struct{}
	failedOnce sync.Once

	// onChange, if set, is told each time the listener goes down (false) or is up again (true). Tests use it.
	onChange func(up bool)
}

// Served tries to listen again on its port after a refuse window reListenTries times, reListenEvery apart
// (another process may have taken the port meanwhile), before it gives up and reports the failure through Failed
// and Err.
const (
	reListenTries = 200
	reListenEvery = 50 * time.Millisecond
)

// Serve serves s on ln, a TCP listener (bind it to 127.0.0.1 and port 0 for a free port), until Close or
// Shutdown. The refuse windows of s's Config.Outages are applied to the listener, counted like every outage from
// the first model call; the other kinds are answered by s itself. A refuse window needs ln to be a TCP listener.
func Serve(s *Server, ln net.Listener) (*Served, error) {
	return serve(s, ln, nil)
}

func serve(s *Server, ln net.Listener, onChange func(up bool)) (*Served, error) {
	if _, ok := ln.Addr().(*net.TCPAddr); !ok && s.hasRefuse() {
		return nil, fmt.Errorf("sim: serve: a refuse outage needs a TCP listener, not %s", ln.Addr().Network())
	}
	sv := &Served{s: s, addr: ln.Addr().String(), stop: make(chan struct{}), done: make(chan struct{}),
		failed: make(chan struct{}), onChange: onChange}
	sv.start(ln)
	go sv.loop()
	return sv, nil
}

func (s *Server) hasRefuse() bool {
	for _, o := range s.outages {
		if o.Kind == OutageRefuse {
			return true
		}
	}
	return false
}

// Addr is the listener's host:port, the same before and after refuse windows.
func (sv *Served) Addr() string { return sv.addr }

// URL is the base URL of the OpenAI-compatible API, "http://host:port/v1".
func (sv *Served) URL() string { return "http://" + sv.addr + "/v1" }

// Failed is closed when Served stopped serving on its own: the listener failed, or the port could not be
// listened on again after a refuse window. Err says why.
func (sv *Served) Failed() <-chan struct{} { return sv.failed }

// Err returns the failure that closed Failed, or nil.
func (sv *Served) Err() error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.err
}

func (sv *Served) fail(err error) {
	sv.mu.Lock()
	if sv.err == nil {
		sv.err = err
	}
	sv.mu.Unlock()
	sv.failedOnce.Do(func() { close(sv.failed) })
}

// start serves ln with a new http.Server.
func (sv *Served) start(ln net.Listener) {
	srv := &http.Server{Handler: sv.s, ReadHeaderTimeout: 10 * time.Second}
	sv.mu.Lock()
	sv.cur = srv
	sv.mu.Unlock()
	sv.serving.Add(1)
	go func() {
		defer sv.serving.Done()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			sv.fail(fmt.Errorf("sim: serve %s: %w", sv.addr, err))
		}
	}()
}

// loop applies the refuse windows in order, then waits for stop.
func (sv *Served) loop() {
	defer close(sv.done)
	if !sv.s.hasRefuse() {
		<-sv.stop
		return
	}
	select {
	case <-sv.s.firstCall:
	case <-sv.stop:
		return
	}
	epoch := sv.s.first
	for _, o := range sv.s.outages {
		if o.Kind != OutageRefuse {
			continue
		}
		if !sv.waitUntil(epoch.Add(o.After)) {
			return
		}
		sv.down()
		if !sv.waitUntil(epoch.Add(o.After + o.For)) {
			return
		}
		if !sv.up() {
			return
		}
	}
	<-sv.stop
}

// followEvery is the longest Served sleeps before reading Config.Now again, so that it follows an injected clock
// (a test's, moved by hand) within that time as well as the real one.
const followEvery = 100 * time.Millisecond

// waitUntil waits until Config.Now reaches t, and reports false if stopped first.
func (sv *Served) waitUntil(t time.Time) bool {
	for {
		d := t.Sub(sv.s.cfg.Now())
		if d <= 0 {
			return true
		}
		timer := time.NewTimer(min(d, followEvery))
		select {
		case <-timer.C:
		case <-sv.stop:
			timer.Stop()
			return false
		}
	}
}

// down closes the listener and every connection, and waits for the serving goroutine to return.
func (sv *Served) down() {
	sv.mu.Lock()
	srv := sv.cur
	sv.cur = nil
	sv.mu.Unlock()
	if srv != nil {
		_ = srv.Close() // the only error is the listener's close, and the socket is closed either way
	}
	sv.serving.Wait()
	if sv.onChange != nil {
		sv.onChange(false)
	}
}

// up listens on the address again, retrying reListenTries times, and reports false if stopped or failed.
func (sv *Served) up() bool {
	for try := 1; ; try++ {
		var lc net.ListenConfig
		ln, err := lc.Listen(context.Background(), "tcp", sv.addr)
		if err == nil {
			sv.start(ln)
			if sv.onChange != nil {
				sv.onChange(true)
			}
			return true
		}
		if try == reListenTries {
			sv.fail(fmt.Errorf("sim: listen again on %s after a refuse outage: %w", sv.addr, err))
			return false
		}
		t := time.NewTimer(reListenEvery)
		select {
		case <-t.C:
		case <-sv.stop:
			t.Stop()
			return false
		}
	}
}

// halt ends the loop and returns the http.Server serving now (nil while refusing).
func (sv *Served) halt() *http.Server {
	sv.stopOnce.Do(func() { close(sv.stop) })
	<-sv.done
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.cur
}

// Shutdown stops Served gracefully: no more refuse windows, the listener closed, and calls in flight given until
// ctx is done to finish (then their connections are closed). It waits for Served's goroutines.
func (sv *Served) Shutdown(ctx context.Context) error {
	var err error
	if srv := sv.halt(); srv != nil {
		if err = srv.Shutdown(ctx); err != nil {
			err = errors.Join(err, srv.Close())
		}
	}
	sv.serving.Wait()
	return err
}

// Close stops Served at once: the listener and every connection closed. It waits for Served's goroutines.
func (sv *Served) Close() error {
	var err error
	if srv := sv.halt(); srv != nil {
		err = srv.Close()
	}
	sv.serving.Wait()
	return err
}
