// Package metrics collects a worker's Prometheus metrics: the Temporal SDK's own (workflow and activity task
// latencies, poll results, schedule-to-start times, sticky cache, requests to the server, ...), reported through
// the SDK's tally handler into a registry of this worker's, and silico's own (Calls: model calls by outcome,
// latency, 429s, retries, tokens, cost, money saved by the cache, cells waiting for limits), all served in
// Prometheus's text format.
package metrics

import (
	"io"
	"net/http"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// reportEvery is how often the SDK's metrics are copied into the registry; a scrape sees them this late at most.
const reportEvery = time.Second

// Prometheus is one worker's metrics. Give Handler to the Temporal client (client.Options.MetricsHandler) and
// serve HTTP at /metrics. Close it after the client.
type Prometheus struct {
	// Handler receives the SDK's metrics.
	Handler client.MetricsHandler
	// HTTP serves the metrics in Prometheus's text format.
	HTTP http.Handler
	// Calls are silico's own metrics of model calls; give them to the activities (Activities.Observe).
	Calls *Calls
	scope io.Closer
}

// NewPrometheus returns metrics with a registry of their own (nothing global is registered). onError hears of
// a metric the registry refuses (the same name with other labels); the metric is then not served.
func NewPrometheus(onError func(error)) *Prometheus {
	reg := prom.NewRegistry()
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       reg,
		Gatherer:         reg,
		DefaultTimerType: tallyprom.HistogramTimerType,
		OnRegisterError:  onError, // the default panics
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, reportEvery)
	return &Prometheus{
		Handler: sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)),
		HTTP:    reporter.HTTPHandler(),
		Calls:   newCalls(reg),
		scope:   closer,
	}
}

// Close stops the periodic report after a last one.
func (p *Prometheus) Close() error { return p.scope.Close() }
