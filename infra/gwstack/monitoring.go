package gwstack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/llmgw/llmgw/pkg/deployment"
)

// MetricNamespace is the CloudWatch namespace of the gateway's Embedded
// Metric Format log lines (the deployment contract's).
const MetricNamespace = deployment.MetricNamespace

// Metric names emitted by the gateway and the rollup (EMF), from the
// deployment contract.
const (
	MetricRequests           = deployment.MetricRequests
	MetricFallbacks          = deployment.MetricFallbacks
	MetricErrors5xx          = deployment.MetricErrors5xx
	MetricTTFT               = deployment.MetricTTFT
	MetricAttemptErrors      = deployment.MetricAttemptErrors
	MetricAttemptTTFT        = deployment.MetricAttemptTTFT
	MetricCostUSD            = deployment.MetricCostUSD
	MetricBreakerOpen        = deployment.MetricBreakerOpen
	MetricConfigReloadErrors = deployment.MetricConfigReloadErrors
	MetricProviderKeyErrors  = deployment.MetricProviderKeyErrors
	MetricRollupFailures     = deployment.MetricRollupFailures
)

// fiveMinutes is the period of the gateway metrics and alarms. (A function,
// not a package variable: jsii calls must not run at package init, before
// tests can configure the runtime.)
func fiveMinutes() awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(5)) }

// metric returns an LLMGateway metric with dimension Stage (the [Stage]
// dimension set) over 5 minutes. An empty label keeps the default.
func (g *Gateway) metric(name, statistic, label string) awscloudwatch.Metric {
	props := &awscloudwatch.MetricProps{
		Namespace:     jsii.String(MetricNamespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{"Stage": jsii.String(g.Settings.Stage)},
		Statistic:     jsii.String(statistic),
		Period:        fiveMinutes(),
	}
	if label != "" { // a label turns a plain alarm metric into metric math
		props.Label = jsii.String(label)
	}
	return awscloudwatch.NewMetric(props)
}

// search returns a SEARCH expression over the metric name with dimension set
// [Stage, dim], so new teams, routes and targets appear without a deploy.
func (g *Gateway) search(name, dim, statistic string, periodSeconds int, label string) awscloudwatch.MathExpression {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,Stage,%s} MetricName="%s" Stage="%s"', '%s', %d)`,
			MetricNamespace, dim, name, g.Settings.Stage, statistic, periodSeconds)),
		Label:  jsii.String(label),
		Period: awscdk.Duration_Seconds(jsii.Number(float64(periodSeconds))),
	})
}

// rate returns 100 * part / Requests over 5 minutes, or 0 while there were
// fewer than AlarmMinRequests requests (a single fallback among two requests
// is noise, not an incident).
func (g *Gateway) rate(part, label string) awscloudwatch.MathExpression {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(requests >= %d, 100 * FILL(part, 0) / requests, 0)", g.Settings.AlarmMinRequests)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"requests": g.metric(MetricRequests, "Sum", "Requests"),
			"part":     g.metric(part, "Sum", part),
		},
		Label:  jsii.String(label),
		Period: fiveMinutes(),
	})
}

// alarm creates an alarm named "<stack>-<suffix>" and wires the optional SNS
// topic to its ALARM and OK transitions.
func (g *Gateway) alarm(id, suffix string, m awscloudwatch.IMetric, opts awscloudwatch.CreateAlarmOptions) awscloudwatch.Alarm {
	opts.AlarmName = jsii.String(g.Settings.StackName + "-" + suffix)
	if opts.EvaluationPeriods == nil {
		opts.EvaluationPeriods = jsii.Number(1)
	}
	if opts.TreatMissingData == "" {
		opts.TreatMissingData = awscloudwatch.TreatMissingData_NOT_BREACHING
	}
	a := awscloudwatch.NewAlarm(g.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:             m,
		AlarmName:          opts.AlarmName,
		AlarmDescription:   opts.AlarmDescription,
		Threshold:          opts.Threshold,
		ComparisonOperator: opts.ComparisonOperator,
		EvaluationPeriods:  opts.EvaluationPeriods,
		DatapointsToAlarm:  opts.DatapointsToAlarm,
		TreatMissingData:   opts.TreatMissingData,
	})
	if g.Settings.AlarmTopicARN != "" {
		topic := awssns.Topic_FromTopicArn(g.Stack, jsii.String(id+"Topic"), jsii.String(g.Settings.AlarmTopicARN))
		action := awscloudwatchactions.NewSnsAction(topic)
		a.AddAlarmAction(action)
		a.AddOkAction(action)
	}
	g.Alarms = append(g.Alarms, a)
	return a
}

// addAlarms defines the operational alarms. Missing data (no traffic) never
// alarms.
func (g *Gateway) addAlarms() {
	s := g.Settings
	gt, gte := awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD

	g.alarm("FallbackRateAlarm", "fallback-rate", g.rate(MetricFallbacks, "Fallback rate (%)"), awscloudwatch.CreateAlarmOptions{
		AlarmDescription: jsii.String(fmt.Sprintf("More than %g%% of gateway requests in 5 minutes were served by a fallback target (with at least %d requests): a primary provider is failing or slow.",
			s.FallbackRateThresholdPct, s.AlarmMinRequests)),
		Threshold:          jsii.Number(s.FallbackRateThresholdPct),
		ComparisonOperator: gt,
	})
	g.errorRateAlarm = g.alarm("ErrorRateAlarm", "5xx-rate", g.rate(MetricErrors5xx, "5xx rate (%)"), awscloudwatch.CreateAlarmOptions{
		AlarmDescription: jsii.String(fmt.Sprintf("More than %g%% of gateway requests in 5 minutes ended in a 5xx (with at least %d requests): all targets of a route failed, or the gateway itself is failing.",
			s.ErrorRateThresholdPct, s.AlarmMinRequests)),
		Threshold:          jsii.Number(s.ErrorRateThresholdPct),
		ComparisonOperator: gt,
	})
	g.alarm("BreakerOpenAlarm", "breaker-open", g.metric(MetricBreakerOpen, "Sum", ""), awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String("A target's circuit breaker opened in the last 5 minutes; see the BreakerOpen-by-target graph on the dashboard."),
		Threshold:          jsii.Number(1),
		ComparisonOperator: gte,
	})
	rollupFailures := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("FILL(failures, 0) + FILL(errors, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"failures": g.metric(MetricRollupFailures, "Sum", "RollupFailures"),
			"errors": g.RollupFn.MetricErrors(&awscloudwatch.MetricOptions{
				Statistic: jsii.String("Sum"),
				Period:    awscdk.Duration_Hours(jsii.Number(1)),
			}),
		},
		Label:  jsii.String("Rollup failures + invocation errors"),
		Period: awscdk.Duration_Hours(jsii.Number(1)),
	})
	g.alarm("RollupFailureAlarm", "rollup-failure", rollupFailures, awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String("The usage rollup reported a failure (RollupFailures) or the rollup function errored in the last hour; usage aggregates and the daily close may be stale. See the rollup log group."),
		Threshold:          jsii.Number(1),
		ComparisonOperator: gte,
	})
	g.alarm("ConfigReloadAlarm", "config-reload", g.metric(MetricConfigReloadErrors, "Sum", ""), awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String("The gateway failed to reload its configuration from SSM for 15 minutes; it keeps serving the last good configuration. Check the parameters under " + s.ConfigPath() + "."),
		Threshold:          jsii.Number(1),
		ComparisonOperator: gte,
		EvaluationPeriods:  jsii.Number(3),
		DatapointsToAlarm:  jsii.Number(3),
	})
	g.alarm("ThrottleAlarm", "throttles", g.GatewayFn.MetricThrottles(&awscloudwatch.MetricOptions{
		Statistic: jsii.String("Sum"),
		Period:    fiveMinutes(),
	}), awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String("Gateway invocations were throttled (callers got 429 from the Function URL): the reserved concurrency cap or the account concurrency limit was reached."),
		Threshold:          jsii.Number(1),
		ComparisonOperator: gte,
	})
}

// addDashboard defines the dashboard "<stack>-<region>" (dashboards are
// global, so the region keeps two regions' stacks apart).
func (g *Gateway) addDashboard() {
	s := g.Settings
	graph := func(title string, width float64, left []awscloudwatch.IMetric, mod func(*awscloudwatch.GraphWidgetProps)) awscloudwatch.IWidget {
		p := &awscloudwatch.GraphWidgetProps{
			Title:  jsii.String(title),
			Width:  jsii.Number(width),
			Height: jsii.Number(6),
			Left:   &left,
		}
		if mod != nil {
			mod(p)
		}
		return awscloudwatch.NewGraphWidget(p)
	}
	alarms := make([]interfacesawscloudwatch.IAlarmRef, len(g.Alarms))
	for i, a := range g.Alarms {
		alarms[i] = a
	}
	rows := [][]awscloudwatch.IWidget{
		{
			awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
				Markdown: jsii.String(fmt.Sprintf("# llmgw %s\nCost, traffic and health of the gateway. Config: `%s` in SSM. Per-team, per-route and per-target graphs use SEARCH, so new teams, routes and targets appear without a deploy.", s.Stage, s.ConfigPath())),
				Width:    jsii.Number(24),
				Height:   jsii.Number(2),
			}),
		},
		{
			graph("Cost per team (USD per hour)", 12, []awscloudwatch.IMetric{
				g.search(MetricCostUSD, "Team", "Sum", 3600, ""),
			}, func(p *awscloudwatch.GraphWidgetProps) { p.Stacked = jsii.Bool(true) }),
			graph("Cost per team over the time range (USD)", 12, []awscloudwatch.IMetric{
				g.search(MetricCostUSD, "Team", "Sum", 86400, ""),
			}, func(p *awscloudwatch.GraphWidgetProps) {
				p.View = awscloudwatch.GraphWidgetView_BAR
				p.SetPeriodToTimeRange = jsii.Bool(true)
			}),
		},
		{
			graph("Requests", 8, []awscloudwatch.IMetric{g.metric(MetricRequests, "Sum", "All requests")}, nil),
			graph("Requests per route", 8, []awscloudwatch.IMetric{g.search(MetricRequests, "Route", "Sum", 300, "")}, nil),
			graph("Requests per team", 8, []awscloudwatch.IMetric{g.search(MetricRequests, "Team", "Sum", 300, "")}, nil),
		},
		{
			graph("Fallbacks", 8, []awscloudwatch.IMetric{g.metric(MetricFallbacks, "Sum", "Fallbacks")},
				func(p *awscloudwatch.GraphWidgetProps) {
					p.Right = &[]awscloudwatch.IMetric{g.rate(MetricFallbacks, "Fallback rate (%)")}
				}),
			graph("Fallbacks per team", 8, []awscloudwatch.IMetric{g.search(MetricFallbacks, "Team", "Sum", 300, "")}, nil),
			graph("5xx", 8, []awscloudwatch.IMetric{g.metric(MetricErrors5xx, "Sum", "5xx")},
				func(p *awscloudwatch.GraphWidgetProps) {
					p.Right = &[]awscloudwatch.IMetric{g.rate(MetricErrors5xx, "5xx rate (%)")}
				}),
		},
		{
			graph("Time to first token (ms)", 8, []awscloudwatch.IMetric{
				g.metric(MetricTTFT, "p50", "p50"),
				g.metric(MetricTTFT, "p99", "p99"),
			}, nil),
			graph("Time to first token p99 per route (ms)", 8, []awscloudwatch.IMetric{g.search(MetricTTFT, "Route", "p99", 300, "")}, nil),
			graph("Time to first token p50 per team (ms)", 8, []awscloudwatch.IMetric{g.search(MetricTTFT, "Team", "p50", 300, "")}, nil),
		},
		{
			awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
				Markdown: jsii.String("## Per route and target\nThe fleet view of the status page (`/admin/status`, admin keys): each route's traffic, fallbacks, errors and time to first token, and each target's failed attempts by error category and its own time to first token."),
				Width:    jsii.Number(24),
				Height:   jsii.Number(2),
			}),
		},
		{
			graph("Fallbacks per route", 8, []awscloudwatch.IMetric{g.search(MetricFallbacks, "Route", "Sum", 300, "")}, nil),
			graph("5xx per route", 8, []awscloudwatch.IMetric{g.search(MetricErrors5xx, "Route", "Sum", 300, "")}, nil),
			graph("Time to first token p50 and p95 per route (ms)", 8, []awscloudwatch.IMetric{
				g.search(MetricTTFT, "Route", "p50", 300, ""),
				g.search(MetricTTFT, "Route", "p95", 300, ""),
			}, nil),
		},
		{
			graph("Failed attempts per target and category", 12, []awscloudwatch.IMetric{g.search(MetricAttemptErrors, "Target,Category", "Sum", 300, "")},
				func(p *awscloudwatch.GraphWidgetProps) { p.Stacked = jsii.Bool(true) }),
			graph("Time to first token p50 and p95 per target (ms)", 12, []awscloudwatch.IMetric{
				g.search(MetricAttemptTTFT, "Target", "p50", 300, ""),
				g.search(MetricAttemptTTFT, "Target", "p95", 300, ""),
			}, nil),
		},
		{
			graph("Breakers opened per target", 8, []awscloudwatch.IMetric{g.search(MetricBreakerOpen, "Target", "Sum", 300, "")}, nil),
			graph("Config reloads and rollup", 8, []awscloudwatch.IMetric{
				g.metric(MetricConfigReloadErrors, "Sum", "Config reload errors"),
				g.metric(MetricRollupFailures, "Sum", "Rollup failures"),
				g.RollupFn.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Label: jsii.String("Rollup function errors")}),
			}, nil),
			graph("Gateway function", 8, []awscloudwatch.IMetric{
				g.GatewayFn.Metric(jsii.String("ConcurrentExecutions"), &awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Label: jsii.String("Concurrency (max)")}),
				g.GatewayFn.MetricThrottles(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Label: jsii.String("Throttles")}),
				g.GatewayFn.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Label: jsii.String("Errors")}),
			}, func(p *awscloudwatch.GraphWidgetProps) {
				p.Right = &[]awscloudwatch.IMetric{g.GatewayFn.MetricDuration(&awscloudwatch.MetricOptions{Statistic: jsii.String("p99"), Label: jsii.String("Duration p99 (ms)")})}
			}),
		},
		{
			awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
				Title:  jsii.String("Alarms"),
				Alarms: &alarms,
				Width:  jsii.Number(24),
				Height: jsii.Number(3),
			}),
		},
	}
	widgets := make([]*[]awscloudwatch.IWidget, len(rows))
	for i := range rows {
		widgets[i] = &rows[i]
	}
	g.Dashboard = awscloudwatch.NewDashboard(g.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   jsii.String(s.StackName + "-" + *g.Stack.Region()),
		DefaultInterval: awscdk.Duration_Days(jsii.Number(1)),
		Widgets:         &widgets,
	})
}
