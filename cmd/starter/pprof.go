package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/spf13/cobra"
)

// addPprofFlag adds --pprof ADDR to root: every command then serves Go's profiles (heap, CPU, goroutines) at
// http://ADDR/debug/pprof/ while it runs, for measuring a long run's memory (docs/performance.md §9). stop ends
// the server, once the command has returned.
func addPprofFlag(root *cobra.Command, stderr io.Writer) (stop func()) {
	var addr string
	var srv *http.Server
	var served chan struct{}
	root.PersistentFlags().StringVar(&addr, "pprof", "", "serve Go's profiles at http://ADDR/debug/pprof/ while the command runs (e.g. 127.0.0.1:6060)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if addr == "" {
			return nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return usageError{fmt.Errorf("--pprof %s: %w", addr, err)}
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		fmt.Fprintf(stderr, "profiles at http://%s/debug/pprof/\n", ln.Addr())
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		served = make(chan struct{})
		go func() {
			defer close(served)
			_ = srv.Serve(ln) // ends when stop closes the server
		}()
		return nil
	}
	return func() {
		if srv != nil {
			_ = srv.Close()
			<-served
		}
	}
}
