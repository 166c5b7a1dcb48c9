package sim

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/goccy/go-yaml"
)

// fileConfig is the config file's shape. Durations are strings such as "300ms" or "5m".
type fileConfig struct {
	Latency struct {
		Fixed  string `yaml:"fixed"`
		Jitter string `yaml:"jitter"`
	} `yaml:"latency"`
	RPM    int     `yaml:"rpm"`
	TPM    int     `yaml:"tpm"`
	Burst  float64 `yaml:"burst"`
	Faults struct {
		RateLimit      float64 `yaml:"rate_limit"`
		Quota          float64 `yaml:"quota"`
		ServerError500 float64 `yaml:"server_error_500"`
		ServerError503 float64 `yaml:"server_error_503"`
		Hang           float64 `yaml:"hang"`
		Drop           float64 `yaml:"drop"`
		Malformed      float64 `yaml:"malformed"`
		Length         float64 `yaml:"length"`
		ContentFilter  float64 `yaml:"content_filter"`
	} `yaml:"faults"`
	FailCells        []string `yaml:"fail_cells"`
	RefuseJSONSchema bool     `yaml:"refuse_json_schema"`
	ContextWindow    int      `yaml:"context_window"`
	Sampling         string   `yaml:"sampling"`
	FaultSeed        int64    `yaml:"fault_seed"`
	HangFor          string   `yaml:"hang_for"`
	// RateLimitRetryAfter is the Retry-After of the injected 429s.
	RateLimitRetryAfter string   `yaml:"rate_limit_retry_after"`
	Models              []string `yaml:"models"`
	Outages             []struct {
		After  string `yaml:"after"`
		For    string `yaml:"for"`
		Kind   string `yaml:"kind"`
		Status int    `yaml:"status"`
	} `yaml:"outages"`
	ServedModel       string `yaml:"served_model"`
	SystemFingerprint string `yaml:"system_fingerprint"`
	SnapshotChange    *struct {
		FromSeed          int64  `yaml:"from_seed"`
		ServedModel       string `yaml:"served_model"`
		SystemFingerprint string `yaml:"system_fingerprint"`
	} `yaml:"snapshot_change"`
}

// LoadConfig reads a simulator config from a YAML or JSON file. Every field is optional; unknown fields are
// errors. Example:
//
//	latency: {fixed: 300ms, jitter: 200ms}
//	rpm: 500
//	tpm: 200000
//	burst: 1.0
//	faults: {rate_limit: 0.01, quota: 0, server_error_500: 0.005, server_error_503: 0.005, hang: 0, drop: 0, malformed: 0,
//	         length: 0, content_filter: 0}
//	fail_cells: [gpt/1/q7/p3]
//	refuse_json_schema: false
//	context_window: 8192
//	sampling: seeded
//	fault_seed: 7
//	hang_for: 5m
//	rate_limit_retry_after: 1s
//	models: [gpt-4o-mini, text-embedding-3-small]
//	outages: [{after: 10s, for: 90s, kind: status, status: 503}, {after: 5m, for: 20s, kind: refuse}]
//	served_model: gpt-4o-mini-2024-07-18
//	system_fingerprint: fp_44709d6fcb
//	snapshot_change: {from_seed: 3, served_model: gpt-4o-mini-2025-01-01, system_fingerprint: fp_new}
//
// An outage's kind is status (a JSON error, status 503 unless given), html (an nginx error page, 502 unless
// given) or refuse (connections refused: only where the simulator owns its listener, see Serve).
// RequestLog and Now are not read from files.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("sim: load config: %w", err)
	}
	var fc fileConfig
	if err := yaml.UnmarshalWithOptions(data, &fc, yaml.DisallowUnknownField()); err != nil {
		return Config{}, fmt.Errorf("sim: config %s: %w", path, err)
	}
	cfg := Config{
		RPM: fc.RPM, TPM: fc.TPM, Burst: fc.Burst, FaultSeed: fc.FaultSeed, Models: fc.Models,
		Faults: Faults(fc.Faults), FailCells: fc.FailCells, RefuseJSONSchema: fc.RefuseJSONSchema, ContextWindow: fc.ContextWindow,
		Sampling:    fc.Sampling,
		ServedModel: fc.ServedModel, SystemFingerprint: fc.SystemFingerprint,
	}
	if c := fc.SnapshotChange; c != nil {
		cfg.SnapshotChange = &SnapshotChange{FromSeed: c.FromSeed, ServedModel: c.ServedModel, SystemFingerprint: c.SystemFingerprint}
	}
	type duration struct {
		field string
		text  string
		dst   *time.Duration
	}
	durations := []duration{
		{"latency.fixed", fc.Latency.Fixed, &cfg.Latency.Fixed},
		{"latency.jitter", fc.Latency.Jitter, &cfg.Latency.Jitter},
		{"hang_for", fc.HangFor, &cfg.HangFor},
		{"rate_limit_retry_after", fc.RateLimitRetryAfter, &cfg.RateLimitRetryAfter},
	}
	if len(fc.Outages) > 0 {
		cfg.Outages = make([]Outage, len(fc.Outages))
	}
	for i, o := range fc.Outages {
		cfg.Outages[i] = Outage{Kind: OutageKind(o.Kind), Status: o.Status}
		durations = append(durations,
			duration{fmt.Sprintf("outages[%d].after", i), o.After, &cfg.Outages[i].After},
			duration{fmt.Sprintf("outages[%d].for", i), o.For, &cfg.Outages[i].For})
	}
	var errs []error
	for _, d := range durations {
		if d.text == "" {
			continue
		}
		v, err := time.ParseDuration(d.text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a duration (want e.g. \"300ms\", \"5m\")", d.field, d.text))
			continue
		}
		*d.dst = v
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("sim: config %s: %w", path, err)
	}
	if err := cfg.validate(); err != nil {
		return Config{}, fmt.Errorf("sim: config %s: %w", path, err)
	}
	return cfg, nil
}
