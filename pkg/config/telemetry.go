package config

import (
	"net/url"
	"time"
)

// TelemetrySettings turn on OpenTelemetry traces and metrics, exported over
// OTLP (HTTP/protobuf). Off unless an endpoint is set:
//
//	telemetry:
//	  otlp_endpoint: http://127.0.0.1:4318   # the collector (ADOT layer on Lambda)
//	  traces: true                           # default true once an endpoint is set
//	  metrics: true                          # default true once an endpoint is set
//
// Traces go to <otlp_endpoint>/v1/traces, metrics to /v1/metrics. Prompt
// and completion text is exported only for the routes with
// trace_content: true.
type TelemetrySettings struct {
	// OTLPEndpoint is the OTLP/HTTP base URL (http or https, no query).
	// Empty: no traces, no OTLP metrics.
	OTLPEndpoint string `json:"otlp_endpoint,omitempty"`
	// Traces, when false, turns traces off while metrics stay on (default
	// true).
	Traces *bool `json:"traces,omitempty"`
	// Metrics, when false, turns the OTLP metrics off (default true). EMF
	// metrics do not depend on it.
	Metrics *bool `json:"metrics,omitempty"`
	// ServiceName is the service.name resource attribute (default llmgw).
	ServiceName string `json:"service_name,omitempty"`
	// QueueSize bounds the spans waiting for export (default 2048); spans
	// past it are dropped and counted, never waited for.
	QueueSize int `json:"queue_size,omitempty"`
	// ExportInterval is how often metrics are exported, and the longest a
	// span waits for its batch (default 10s).
	ExportInterval Duration `json:"export_interval,omitempty"`
}

// TracesOn reports whether spans are exported.
func (t TelemetrySettings) TracesOn() bool {
	return t.OTLPEndpoint != "" && (t.Traces == nil || *t.Traces)
}

// MetricsOn reports whether OTLP metrics are exported.
func (t TelemetrySettings) MetricsOn() bool {
	return t.OTLPEndpoint != "" && (t.Metrics == nil || *t.Metrics)
}

// Default telemetry settings.
const (
	DefaultTelemetryQueue    = 2048
	DefaultTelemetryInterval = 10 * time.Second
	DefaultServiceName       = "llmgw"
)

func (t *TelemetrySettings) prepare() error {
	at := pathOf("telemetry")
	if t.OTLPEndpoint != "" {
		u, err := url.Parse(t.OTLPEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
			return errAt(at.Key("otlp_endpoint"), "want an http(s) base URL without credentials or query, like http://127.0.0.1:4318")
		}
	}
	if t.QueueSize < 0 {
		return errAt(at.Key("queue_size"), "must be positive, got %d", t.QueueSize)
	}
	if t.QueueSize == 0 {
		t.QueueSize = DefaultTelemetryQueue
	}
	if t.ExportInterval < 0 {
		return errAt(at.Key("export_interval"), "must be positive")
	}
	if t.ExportInterval == 0 {
		t.ExportInterval = Duration(DefaultTelemetryInterval)
	}
	if t.ServiceName == "" {
		t.ServiceName = DefaultServiceName
	}
	return nil
}
