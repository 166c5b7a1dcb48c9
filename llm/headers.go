package llm

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RateLimitInfo is what a response's x-ratelimit-* headers said about the account's limits.
type RateLimitInfo struct {
	// RemainingRequests and RemainingTokens are left in the current window; -1 when the header is absent.
	RemainingRequests, RemainingTokens int
	// ResetRequests and ResetTokens are the times until the request and token limits are fully replenished;
	// zero when absent.
	ResetRequests, ResetTokens time.Duration
}

// ParseRateLimit reads the x-ratelimit-remaining-{requests,tokens} and x-ratelimit-reset-{requests,tokens}
// headers. Reset values are Go-style durations as OpenAI sends them ("1s", "6m0s", "20ms", "1h2m3.5s") or plain
// seconds ("0.5").
func ParseRateLimit(h http.Header) RateLimitInfo {
	return RateLimitInfo{
		RemainingRequests: parseRemaining(h.Get("x-ratelimit-remaining-requests")),
		RemainingTokens:   parseRemaining(h.Get("x-ratelimit-remaining-tokens")),
		ResetRequests:     parseReset(h.Get("x-ratelimit-reset-requests")),
		ResetTokens:       parseReset(h.Get("x-ratelimit-reset-tokens")),
	}
}

// ParseRetryAfter reads how long the provider asked us to wait: the retry-after-ms header (milliseconds,
// OpenAI), else Retry-After as delay-seconds or an HTTP-date (RFC 9110 §10.2.3) relative to now. Zero when
// neither is present, malformed, or in the past.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			return clampDuration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || math.IsNaN(secs) {
			return 0
		}
		return clampDuration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// retryDelay is Error.RetryAfter for a response with the given status: the explicit Retry-After headers, or for
// a 429 without them the reset time of the exhausted limit (both exhausted or neither known: the later reset).
func retryDelay(h http.Header, status int, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if d := ParseRetryAfter(h, now); d > 0 {
		return d
	}
	if status != http.StatusTooManyRequests {
		return 0
	}
	rl := ParseRateLimit(h)
	switch {
	case rl.RemainingRequests == 0 && rl.RemainingTokens != 0:
		return rl.ResetRequests
	case rl.RemainingTokens == 0 && rl.RemainingRequests != 0:
		return rl.ResetTokens
	}
	return max(rl.ResetRequests, rl.ResetTokens)
}

func parseRemaining(v string) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func parseReset(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if d, err := time.ParseDuration(v); err == nil {
		return max(d, 0)
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
		return clampDuration(secs * float64(time.Second))
	}
	return 0
}

// clampDuration converts nanoseconds to a Duration without overflowing on absurd header values.
func clampDuration(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}
