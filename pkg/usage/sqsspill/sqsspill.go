// Package sqsspill is the usage spill of the gateway on Lambda: records
// the table did not take are sent to an SQS queue (the stack creates it,
// with a dead-letter queue and alarms; its URL is
// deployment.EnvUsageQueue), and the rollup function drains the queue
// into the table before every run (usage.Recorder.Drain). Writes are
// idempotent, so a message delivered twice is still one record.
package sqsspill

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/llmgw/llmgw/pkg/usage"
)

// API is the subset of the SQS client the queue uses; *sqs.Client
// implements it.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var (
	_ API         = (*sqs.Client)(nil)
	_ usage.Spill = (*Queue)(nil)
)

// Drain settings.
const (
	// batch is the most messages one ReceiveMessage returns.
	batch = 10
	// visibility hides received messages from other consumers while they
	// are written (seconds); a drain that dies leaves them to the next.
	visibility = 120
	// wait is the long-poll of a receive (seconds): an empty answer after
	// it means the queue is empty, not a sampled server.
	wait = 1
)

// Queue is a usage.Spill on one SQS queue.
type Queue struct {
	api API
	url string
}

// New returns the spill on the queue at url.
func New(api API, url string) *Queue { return &Queue{api: api, url: url} }

// Spill implements usage.Spill: one message per record.
func (q *Queue) Spill(ctx context.Context, record []byte) error {
	if _, err := q.api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q.url, MessageBody: aws.String(string(record))}); err != nil {
		return fmt.Errorf("sqsspill: send: %w", err)
	}
	return nil
}

// Drain implements usage.Spill: it receives batches until the queue is
// empty or ctx ends, puts each batch's records concurrently and deletes
// the messages whose record was put. At put's first error it stops; the
// batch's other messages come back after the visibility timeout.
func (q *Queue) Drain(ctx context.Context, put func(ctx context.Context, record []byte) error) (int, error) {
	n := 0
	for ctx.Err() == nil {
		out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q.url,
			MaxNumberOfMessages: batch, VisibilityTimeout: visibility, WaitTimeSeconds: wait})
		if err != nil {
			return n, fmt.Errorf("sqsspill: receive: %w", err)
		}
		if len(out.Messages) == 0 {
			return n, nil
		}
		errs := make([]error, len(out.Messages))
		var wg sync.WaitGroup
		for i, m := range out.Messages {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = put(ctx, []byte(aws.ToString(m.Body)))
			}()
		}
		wg.Wait()
		var done []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			if errs[i] == nil {
				done = append(done, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
			}
		}
		if len(done) > 0 {
			del, err := q.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &q.url, Entries: done})
			if err != nil {
				return n, fmt.Errorf("sqsspill: delete: %w", err)
			}
			n += len(del.Successful) // a failed delete is delivered again: a no-op put
		}
		if err := errors.Join(errs...); err != nil {
			return n, err
		}
	}
	return n, ctx.Err()
}
