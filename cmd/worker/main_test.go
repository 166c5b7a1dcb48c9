package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/store"
)

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"extra-arg"}, {"--log-format", "xml"}, {"--api-key-env-allow", "[A-"},
		{"--sim", "--sim-url", "http://127.0.0.1:1/v1"}} {
		var stderr bytes.Buffer
		err := run(context.Background(), append(args, "--store", filepath.Join(t.TempDir(), "r.db")), io.Discard, &stderr, noEnv)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("%v: got %v, want a usage error (exit 2)", args, err)
		}
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &stdout, io.Discard, noEnv); err != nil || !strings.Contains(stdout.String(), "--address") {
		t.Errorf("--help: %v, %q", err, stdout.String())
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
	err = run(ctx, []string{"--address", addr, "--store", filepath.Join(t.TempDir(), "r.db")}, io.Discard, &stderr, noEnv)
	var u usageError
	if err == nil || errors.As(err, &u) || !strings.Contains(err.Error(), addr) {
		t.Errorf("got %v, want an error naming %s", err, addr)
	}
}

func noEnv(string) string { return "" }

func TestStoreFromTheEnvironment(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := filepath.Join(t.TempDir(), "from-env.db")
	env := map[string]string{store.EnvDSN: db, "TEMPORAL_ADDRESS": addr}
	var stderr bytes.Buffer
	if err := run(ctx, nil, io.Discard, &stderr, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("got %v, want an error naming %s (from TEMPORAL_ADDRESS)", err, addr)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("the store %s=%s was not opened: %v", store.EnvDSN, db, err)
	}
}

func TestHelpShowsNoSecretFromTheEnvironment(t *testing.T) {
	env := map[string]string{
		store.EnvDSN:       "postgres://silico:db-s3cret@db.internal/silico",
		"TEMPORAL_API_KEY": "api-s3cret",
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &stdout, io.Discard, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, flagName := range []string{"--store", "--api-key", "--tls-cert-path"} {
		if !strings.Contains(stdout.String(), flagName) {
			t.Errorf("--help does not list %s", flagName)
		}
	}
	if strings.Contains(stdout.String(), "s3cret") {
		t.Errorf("--help shows a secret from the environment:\n%s", stdout.String())
	}
}

func TestBadTLSSettingsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--tls-cert-path", "c.pem"}, // no key
		{"--tls-ca-path", filepath.Join(t.TempDir(), "missing.pem")},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append(args, "--store", filepath.Join(t.TempDir(), "r.db")), io.Discard, &stderr, noEnv)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
}

func TestExplicitMetricsAddressMustBeFree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // the address stays taken
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"--metrics-addr", ln.Addr().String(), "--store", filepath.Join(t.TempDir(), "r.db")}, io.Discard, &stderr, noEnv)
	if err == nil || !strings.Contains(err.Error(), "serve metrics") {
		t.Fatalf("got %v, want a metrics error", err)
	}
}

func TestVersion(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &stdout, io.Discard, noEnv); err != nil {
		t.Fatalf("--version: %v", err)
	}
	if got := stdout.String(); !strings.HasPrefix(got, "worker ") || !strings.Contains(got, "go1.") {
		t.Errorf("--version printed %q, want \"worker <version> … go1.x\"", got)
	}
}

// TestSingleDashFlagSaysTwo: a flag of the worker's flag-package days (-address) is a usage error that says to
// write --address.
func TestSingleDashFlagSaysTwo(t *testing.T) {
	err := run(context.Background(), []string{"-address", "127.0.0.1:7233"}, io.Discard, io.Discard, noEnv)
	var u usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "flags take two dashes: --address") {
		t.Errorf("-address: %v, want a usage error saying --address", err)
	}
}
