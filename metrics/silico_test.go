package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

func TestSilicoMetricsAreServed(t *testing.T) {
	p := NewPrometheus(func(err error) { t.Errorf("register: %v", err) })
	defer p.Close()
	srv := httptest.NewServer(p.HTTP)
	defer srv.Close()
	c := p.Calls
	c.Call("gpt-4o-mini", "ok", 300*time.Millisecond)
	c.Call("gpt-4o-mini", "ok", 500*time.Millisecond)
	c.Call("gpt-4o-mini", "RateLimited", 10*time.Millisecond)
	c.Retried("gpt-4o-mini")
	c.Used("gpt-4o-mini", usage.Usage{PromptTokens: 120, CompletionTokens: 8, CostUSD: usage.Dollars(0.25)})
	c.Used("gpt-4o-mini", usage.Usage{SavedUSD: usage.Dollars(0.5)})
	c.Queued("gpt-4o-mini", 7)
	c.Queued("gpt-4o-mini", -2)
	c.Looked("gpt-4o-mini", store.CacheTally{Hits: 3, Misses: 1})
	c.Breaker("gpt-4o-mini", breaker.State{Open: true, Step: 3, Probes: 4})
	c.Breaker("sim-chat", breaker.State{})
	body := scrape(t, srv.URL)
	for _, want := range []string{
		`silico_calls_total{model="gpt-4o-mini",outcome="ok"} 2`,
		`silico_calls_total{model="gpt-4o-mini",outcome="RateLimited"} 1`,
		`silico_rate_limited_total{model="gpt-4o-mini"} 1`,
		`silico_retries_total{model="gpt-4o-mini"} 1`,
		`silico_tokens_total{kind="prompt",model="gpt-4o-mini"} 120`,
		`silico_tokens_total{kind="completion",model="gpt-4o-mini"} 8`,
		`silico_cost_usd_total{model="gpt-4o-mini"} 0.25`,
		`silico_saved_usd_total{model="gpt-4o-mini"} 0.5`,
		`silico_cells_waiting{model="gpt-4o-mini"} 5`,
		`silico_provider_down{model="gpt-4o-mini"} 1`,
		`silico_provider_probe_step{model="gpt-4o-mini"} 3`,
		`silico_provider_probes{model="gpt-4o-mini"} 4`,
		`silico_provider_down{model="sim-chat"} 0`,
		`silico_cache_lookups_total{model="gpt-4o-mini",result="hit"} 3`,
		`silico_cache_lookups_total{model="gpt-4o-mini",result="miss"} 1`,
		`silico_call_seconds_count{model="gpt-4o-mini"} 3`,
		`silico_call_seconds_bucket{model="gpt-4o-mini",le="0.4"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Logf("served:\n%s", body)
	}
}
