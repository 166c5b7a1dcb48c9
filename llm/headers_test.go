package llm

import (
	"net/http"
	"testing"
	"time"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"absent", header(), 0},
		{"seconds", header("Retry-After", "20"), 20 * time.Second},
		{"fractional seconds", header("Retry-After", "0.25"), 250 * time.Millisecond},
		{"zero", header("Retry-After", "0"), 0},
		{"negative", header("Retry-After", "-3"), 0},
		{"HTTP-date", header("Retry-After", "Sun, 01 Jun 2025 12:01:30 GMT"), 90 * time.Second},
		{"HTTP-date in the past", header("Retry-After", "Sun, 01 Jun 2025 11:00:00 GMT"), 0},
		{"RFC 850 date", header("Retry-After", "Sunday, 01-Jun-25 12:00:10 GMT"), 10 * time.Second},
		{"garbage", header("Retry-After", "soon"), 0},
		{"retry-after-ms wins", header("Retry-After", "20", "retry-after-ms", "750"), 750 * time.Millisecond},
		{"bad retry-after-ms falls back", header("Retry-After", "2", "retry-after-ms", "x"), 2 * time.Second},
		{"huge", header("Retry-After", "1e300"), time.Duration(1<<63 - 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseRetryAfter(tt.h, now); got != tt.want {
				t.Errorf("ParseRetryAfter(%v) = %s, want %s", tt.h, got, tt.want)
			}
		})
	}
}

func TestParseRateLimit(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want RateLimitInfo
	}{
		{"absent", header(), RateLimitInfo{RemainingRequests: -1, RemainingTokens: -1}},
		{"openai formats", header("x-ratelimit-remaining-requests", "0", "x-ratelimit-remaining-tokens", "1500",
			"x-ratelimit-reset-requests", "6m0s", "x-ratelimit-reset-tokens", "20ms"),
			RateLimitInfo{RemainingRequests: 0, RemainingTokens: 1500, ResetRequests: 6 * time.Minute, ResetTokens: 20 * time.Millisecond}},
		{"seconds and fractions", header("x-ratelimit-reset-requests", "1s", "x-ratelimit-reset-tokens", "1m2.5s"),
			RateLimitInfo{RemainingRequests: -1, RemainingTokens: -1, ResetRequests: time.Second, ResetTokens: 62500 * time.Millisecond}},
		{"plain seconds", header("x-ratelimit-reset-requests", "0.5", "x-ratelimit-reset-tokens", "3"),
			RateLimitInfo{RemainingRequests: -1, RemainingTokens: -1, ResetRequests: 500 * time.Millisecond, ResetTokens: 3 * time.Second}},
		{"garbage", header("x-ratelimit-remaining-requests", "many", "x-ratelimit-reset-requests", "later"),
			RateLimitInfo{RemainingRequests: -1, RemainingTokens: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseRateLimit(tt.h); got != tt.want {
				t.Errorf("ParseRateLimit(%v) = %+v, want %+v", tt.h, got, tt.want)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	now := time.Now()
	reset := func(remReq, remTok string) http.Header {
		return header("x-ratelimit-remaining-requests", remReq, "x-ratelimit-remaining-tokens", remTok,
			"x-ratelimit-reset-requests", "2s", "x-ratelimit-reset-tokens", "30s")
	}
	tests := []struct {
		name   string
		h      http.Header
		status int
		want   time.Duration
	}{
		{"nil header", nil, 429, 0},
		{"requests exhausted", reset("0", "100"), 429, 2 * time.Second},
		{"tokens exhausted", reset("5", "0"), 429, 30 * time.Second},
		{"both exhausted: later reset", reset("0", "0"), 429, 30 * time.Second},
		{"neither known: later reset", header("x-ratelimit-reset-requests", "2s", "x-ratelimit-reset-tokens", "30s"), 429, 30 * time.Second},
		{"Retry-After wins", func() http.Header { h := reset("0", "0"); h.Set("Retry-After", "1"); return h }(), 429, time.Second},
		{"reset headers ignored on 5xx", reset("0", "0"), 503, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryDelay(tt.h, tt.status, now); got != tt.want {
				t.Errorf("retryDelay(%v, %d) = %s, want %s", tt.h, tt.status, got, tt.want)
			}
		})
	}
}
