package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"extra-arg"}, {"--log-format", "xml"}, {"--api-key-env-allow", "[A-"},
		{"--sim", "--sim-url", "http://127.0.0.1:1/v1"}} {
		var stderr bytes.Buffer
		err := run(context.Background(), append(args, "--store", filepath.Join(t.TempDir(), "r.db")), &stderr)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("%v: got %v, want a usage error (exit 2)", args, err)
		}
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "-address") {
		t.Errorf("--help: %v, %q", err, stderr.String())
	}
}

func TestUnreachableServerIsAnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	err = run(ctx, []string{"--address", addr, "--store", filepath.Join(t.TempDir(), "r.db")}, &stderr)
	var u usageError
	if err == nil || errors.As(err, &u) || !strings.Contains(err.Error(), addr) {
		t.Errorf("got %v, want an error naming %s", err, addr)
	}
}
