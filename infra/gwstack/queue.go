package gwstack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/llmgw/llmgw/pkg/deployment"
)

// Usage spill queue settings.
const (
	// spillRetentionDays keeps spilled records as long as SQS allows.
	spillRetentionDays = 14
	// spillMaxReceives moves a message to the dead-letter queue after this
	// many receives. A drain stops at the first record the table refuses,
	// so during a long outage each hourly run receives at most one batch
	// again: 50 receives is two days of a table that keeps failing.
	spillMaxReceives = 50
	// spillAgeAlarmSeconds: records older than two hourly drains mean the
	// drain is not working (the table still fails, or the rollup does).
	spillAgeAlarmSeconds = 2 * 3600
)

// addUsageQueue defines the usage spill queue (deployment.EnvUsageQueue):
// the gateway sends it the usage records the table did not take, and the
// rollup drains it into the table before every run. SQS-managed
// encryption, TLS enforced, 14-day retention, and a dead-letter queue with
// the same settings.
func (g *Gateway) addUsageQueue() {
	props := func() *awssqs.QueueProps {
		return &awssqs.QueueProps{
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(spillRetentionDays)),
			RemovalPolicy:   g.removalPolicy(),
		}
	}
	g.UsageDLQ = awssqs.NewQueue(g.Stack, jsii.String("UsageSpillDLQ"), props())
	p := props()
	p.DeadLetterQueue = &awssqs.DeadLetterQueue{Queue: g.UsageDLQ, MaxReceiveCount: jsii.Number(spillMaxReceives)}
	g.UsageQueue = awssqs.NewQueue(g.Stack, jsii.String("UsageSpill"), p)
}

// grantUsageQueue lets the gateway send to the spill queue and the rollup
// consume it (receive, delete); nothing else.
func (g *Gateway) grantUsageQueue() {
	g.UsageQueue.GrantSendMessages(g.gatewayRole)
	g.UsageQueue.GrantConsumeMessages(g.rollupRole)
}

// addQueueAlarms: spilled records waiting too long (the drain is not
// working), and any record in the dead-letter queue.
func (g *Gateway) addQueueAlarms() {
	gte := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
	g.alarm("UsageSpillAgeAlarm", "usage-spill-age", g.UsageQueue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
		Statistic: jsii.String("Maximum"),
		Period:    fiveMinutes(),
	}), awscloudwatch.CreateAlarmOptions{
		AlarmDescription: jsii.String(fmt.Sprintf("Usage records spilled to the queue (the table refused or timed out) have waited more than %d hours: the rollup's drain is not writing them into the table. Usage totals are short until it does; see the rollup log group.",
			spillAgeAlarmSeconds/3600)),
		Threshold:          jsii.Number(spillAgeAlarmSeconds),
		ComparisonOperator: gte,
	})
	g.alarm("UsageSpillDLQAlarm", "usage-spill-dlq", g.UsageDLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
		Statistic: jsii.String("Maximum"),
		Period:    fiveMinutes(),
	}), awscloudwatch.CreateAlarmOptions{
		AlarmDescription: jsii.String(fmt.Sprintf("Usage records reached the spill dead-letter queue after %d drains that could not write them; they are kept %d days. Once the table works, move them back with an SQS redrive to the %s queue.",
			spillMaxReceives, spillRetentionDays, deployment.EnvUsageQueue)),
		Threshold:          jsii.Number(1),
		ComparisonOperator: gte,
	})
}
