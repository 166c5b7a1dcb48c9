package main

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/silicolab/silico/experiment"
)

// startTestSim starts the session's simulator as `starter run` does for a spec's simulator block.
func startTestSim(t *testing.T, set *experiment.SimulatorSettings) *session {
	t.Helper()
	s := &session{flags: &connFlags{worker: workerOptions{simAddr: "127.0.0.1:0"}}, log: zap.NewNop()}
	if err := s.startSim(set); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() {
			s.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Error("the session did not close within 10s")
		}
	})
	return s
}

func simChat(url string) (*http.Response, []byte, error) {
	resp, err := http.Post(url+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"sim-chat","messages":[{"role":"user","content":"1. Yes\n2. No"}]}`))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// The spec's simulator.outage reaches the simulator `starter run` starts.
func TestStartSimOutage(t *testing.T) {
	hour := experiment.Duration(time.Hour)
	s := startTestSim(t, &experiment.SimulatorSettings{Outage: &experiment.SimulatorOutage{For: hour, Kind: experiment.OutageHTML}})
	resp, body, err := simChat(s.simURL)
	if err != nil || resp.StatusCode != 502 || !strings.Contains(string(body), "<title>502 Bad Gateway</title>") {
		t.Errorf("chat in an html outage: %v, %s (err %v), want the 502 page", resp, body, err)
	}

	none := startTestSim(t, &experiment.SimulatorSettings{})
	if resp, body, err := simChat(none.simURL); err != nil || resp.StatusCode != 200 {
		t.Errorf("chat without an outage: %v, %s (err %v), want 200", resp, body, err)
	}
}

// The refuse kind applies there too: that simulator owns its listener.
func TestStartSimRefuse(t *testing.T) {
	s := startTestSim(t, &experiment.SimulatorSettings{Outage: &experiment.SimulatorOutage{
		For: experiment.Duration(time.Hour), Kind: experiment.OutageRefuse}})
	if resp, _, err := simChat(s.simURL); err == nil {
		t.Errorf("the first call, in a refuse outage: %d, want its connection closed", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.sim.Addr(), 5*time.Second)
		if errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
		if err == nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial %s: %v 10s into the outage, want ECONNREFUSED", s.sim.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The spec's simulator.served_model and system_fingerprint reach the simulator `starter run` starts; its
// snapshot_change applies from its seed on (simChat sends none: seed 0).
func TestStartSimServedModel(t *testing.T) {
	served := func(set *experiment.SimulatorSettings) (string, string) {
		t.Helper()
		resp, body, err := simChat(startTestSim(t, set).simURL)
		var r struct {
			Model             string `json:"model"`
			SystemFingerprint string `json:"system_fingerprint"`
		}
		if err != nil || resp.StatusCode != 200 || json.Unmarshal(body, &r) != nil {
			t.Fatalf("chat: %v, %s (err %v)", resp, body, err)
		}
		return r.Model, r.SystemFingerprint
	}
	if m, fp := served(&experiment.SimulatorSettings{ServedModel: "snap-a", SystemFingerprint: "fp_a"}); m != "snap-a" || fp != "fp_a" {
		t.Errorf("served by %q %q, want snap-a fp_a", m, fp)
	}
	if m, fp := served(&experiment.SimulatorSettings{SnapshotChange: &experiment.SimulatorSnapshotChange{ServedModel: "snap-b"}}); m != "snap-b" || fp != "fp_silico_sim2" {
		t.Errorf("after the change served by %q %q, want snap-b fp_silico_sim2", m, fp)
	}
}
