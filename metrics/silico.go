package metrics

import (
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/silicolab/silico/breaker"
	"github.com/silicolab/silico/errclass"
	"github.com/silicolab/silico/store"
	"github.com/silicolab/silico/usage"
)

// Calls are silico's own metrics of model calls, labelled by model name: what the SDK's metrics cannot say. It
// is an activities.Observer.
type Calls struct {
	calls   *prom.CounterVec
	latency *prom.HistogramVec
	limited *prom.CounterVec
	retries *prom.CounterVec
	tokens  *prom.CounterVec
	cost    *prom.CounterVec
	saved   *prom.CounterVec
	queued  *prom.GaugeVec
	lookups *prom.CounterVec
	down    *prom.GaugeVec
	step    *prom.GaugeVec
	probes  *prom.GaugeVec
}

// newCalls registers the metrics of calls with reg.
func newCalls(reg prom.Registerer) *Calls {
	model := []string{"model"}
	c := &Calls{
		calls: prom.NewCounterVec(prom.CounterOpts{Name: "silico_calls_total",
			Help: "Model calls by model name and outcome: ok, or the failure's class (RateLimited, ServerError, Transport, ...)."},
			[]string{"model", "outcome"}),
		latency: prom.NewHistogramVec(prom.HistogramOpts{Name: "silico_call_seconds",
			Help:    "Latency of model calls, answered or failed.",
			Buckets: prom.ExponentialBuckets(0.025, 2, 12)}, model),
		limited: prom.NewCounterVec(prom.CounterOpts{Name: "silico_rate_limited_total",
			Help: "Model calls refused with 429 (not quota)."}, model),
		retries: prom.NewCounterVec(prom.CounterOpts{Name: "silico_retries_total",
			Help: "Failed requests of cells that are tried again (rate limits included)."}, model),
		tokens: prom.NewCounterVec(prom.CounterOpts{Name: "silico_tokens_total",
			Help: "Tokens of answered calls, by kind: prompt or completion."}, []string{"model", "kind"}),
		cost: prom.NewCounterVec(prom.CounterOpts{Name: "silico_cost_usd_total",
			Help: "What answered calls cost, in US dollars, at the model's price."}, model),
		saved: prom.NewCounterVec(prom.CounterOpts{Name: "silico_saved_usd_total",
			Help: "What the cells answered from the response cache would have cost."}, model),
		queued: prom.NewGaugeVec(prom.GaugeOpts{Name: "silico_cells_waiting",
			Help: "Cells of running passes waiting for the model's limits: neither finished nor in flight."}, model),
		lookups: prom.NewCounterVec(prom.CounterOpts{Name: "silico_cache_lookups_total",
			Help: "Response cache lookups of finished cells, by result: hit, miss or invalid."}, []string{"model", "result"}),
		down: prom.NewGaugeVec(prom.GaugeOpts{Name: "silico_provider_down",
			Help: "1 while the model endpoint's circuit breaker is open (the provider is taken to be down), else 0."}, model),
		step: prom.NewGaugeVec(prom.GaugeOpts{Name: "silico_provider_probe_step",
			Help: "Failed probes of the current outage: the backoff step of the next probe (0 when the provider is up)."}, model),
		probes: prom.NewGaugeVec(prom.GaugeOpts{Name: "silico_provider_probes",
			Help: "Probes sent in the current outage (0 when the provider is up)."}, model),
	}
	reg.MustRegister(c.calls, c.latency, c.limited, c.retries, c.tokens, c.cost, c.saved, c.queued, c.lookups,
		c.down, c.step, c.probes)
	return c
}

// Call counts one request that came back.
func (c *Calls) Call(model, outcome string, latency time.Duration) {
	c.calls.WithLabelValues(model, outcome).Inc()
	c.latency.WithLabelValues(model).Observe(latency.Seconds())
	if outcome == errclass.RateLimited {
		c.limited.WithLabelValues(model).Inc()
	}
}

// Used adds what an answered call cost, and what a cell answered from the cache saved.
func (c *Calls) Used(model string, u usage.Usage) {
	if u.SavedUSD > 0 {
		c.saved.WithLabelValues(model).Add(u.SavedUSD.Float())
	}
	if u.PromptTokens == 0 && u.CompletionTokens == 0 && u.CostUSD == 0 {
		return
	}
	c.tokens.WithLabelValues(model, "prompt").Add(float64(u.PromptTokens))
	c.tokens.WithLabelValues(model, "completion").Add(float64(u.CompletionTokens))
	c.cost.WithLabelValues(model).Add(u.CostUSD.Float())
}

// Breaker sets the state of the model endpoint's circuit breaker.
func (c *Calls) Breaker(model string, st breaker.State) {
	down := 0.0
	if st.Open {
		down = 1
	}
	c.down.WithLabelValues(model).Set(down)
	c.step.WithLabelValues(model).Set(float64(st.Step))
	c.probes.WithLabelValues(model).Set(float64(st.Probes))
}

// Retried counts a failed request whose cell is tried again.
func (c *Calls) Retried(model string) { c.retries.WithLabelValues(model).Inc() }

// Queued changes the cells waiting for the model's limits.
func (c *Calls) Queued(model string, delta int) { c.queued.WithLabelValues(model).Add(float64(delta)) }

// Looked counts cache lookups.
func (c *Calls) Looked(model string, t store.CacheTally) {
	for result, n := range map[string]int{"hit": t.Hits, "miss": t.Misses, "invalid": t.Invalid} {
		if n > 0 {
			c.lookups.WithLabelValues(model, result).Add(float64(n))
		}
	}
}
