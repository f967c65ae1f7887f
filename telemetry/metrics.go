package telemetry

import "github.com/prometheus/client_golang/prometheus"

// metrics are the collectors docs/operations.md lists. Labels carry closed sets only (bindings,
// operations, statuses, store operations, model names the operator configured).
type metrics struct {
	reg           prometheus.Registerer
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	streams       *prometheus.GaugeVec
	store         *prometheus.HistogramVec
	modelRequests *prometheus.CounterVec
	modelDuration *prometheus.HistogramVec
	modelTokens   *prometheus.CounterVec
	modelCost     *prometheus.CounterVec
	authFailures  *prometheus.CounterVec
}

// latencyBuckets span a fast store read to a long model answer.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "a2awebcap_requests_total",
			Help: "A2A calls, by binding, operation and outcome (ok or the A2A error reason)."}, []string{"binding", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "a2awebcap_request_duration_seconds",
			Help: "How long A2A calls took (streams: until they ended).", Buckets: latencyBuckets}, []string{"binding", "method"}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "a2awebcap_open_streams",
			Help: "Streams (SendStreamingMessage, SubscribeToTask) open now."}, []string{"binding"}),
		store: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "a2awebcap_store_operation_duration_seconds",
			Help: "How long task store operations took.", Buckets: latencyBuckets}, []string{"operation"}),
		modelRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "a2awebcap_model_requests_total",
			Help: "Calls of the language model, by model and outcome (ok, error)."}, []string{"model", "status"}),
		modelDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "a2awebcap_model_request_duration_seconds",
			Help: "How long language model calls took.", Buckets: latencyBuckets}, []string{"model"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "a2awebcap_model_tokens_total",
			Help: "Tokens the language model reported, by direction (input, output)."}, []string{"model", "direction"}),
		modelCost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "a2awebcap_model_cost_total",
			Help: "What the language model calls cost, in the unit of -session-prices."}, []string{"model"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "a2awebcap_auth_failures_total",
			Help: "Refused logins, by binding."}, []string{"binding"}),
	}
	reg.MustRegister(m.requests, m.duration, m.streams, m.store, m.modelRequests, m.modelDuration, m.modelTokens, m.modelCost, m.authFailures)
	return m
}
