package storetest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
)

var _ dynamo.API = (*FaultyAPI)(nil)

// FaultyAPI wraps a DynamoDB client (e.g. [DynaliteClient]; pass it to
// [NewDynamoStoreWithAPI]) below the store: it counts the requests that
// reach DynamoDB - every write request per item, retries and refused
// conditions included, which is what a partition's write capacity pays -
// and, while throttled, answers every item request the way DynamoDB
// answers a partition over its throughput
// (ProvisionedThroughputExceededException).
type FaultyAPI struct {
	dynamo.API
	throttled atomic.Bool
	reads     atomic.Int64

	mu     sync.Mutex
	writes map[store.Key]int64
}

// NewFaultyAPI wraps api.
func NewFaultyAPI(api dynamo.API) *FaultyAPI {
	return &FaultyAPI{API: api, writes: map[store.Key]int64{}}
}

// SetThrottled turns throttling on or off for later requests.
func (f *FaultyAPI) SetThrottled(on bool) { f.throttled.Store(on) }

// Writes returns the write requests so far: in all, and per item.
func (f *FaultyAPI) Writes() (total int64, perItem map[store.Key]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	perItem = make(map[store.Key]int64, len(f.writes))
	for k, n := range f.writes {
		perItem[k] = n
		total += n
	}
	return total, perItem
}

// Reads returns the read requests (GetItem, Query pages) so far.
func (f *FaultyAPI) Reads() int64 { return f.reads.Load() }

func (f *FaultyAPI) throttle() error {
	if !f.throttled.Load() {
		return nil
	}
	return &types.ProvisionedThroughputExceededException{
		Message: aws.String("The level of configured provisioned throughput for the table was exceeded (injected)"),
	}
}

func (f *FaultyAPI) wrote(key map[string]types.AttributeValue) {
	k := store.Key{PK: attrS(key[deployment.AttrPK]), SK: attrS(key[deployment.AttrSK])}
	f.mu.Lock()
	f.writes[k]++
	f.mu.Unlock()
}

func attrS(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// GetItem implements dynamo.API.
func (f *FaultyAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.reads.Add(1)
	if err := f.throttle(); err != nil {
		return nil, err
	}
	return f.API.GetItem(ctx, in, o...)
}

// PutItem implements dynamo.API.
func (f *FaultyAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.wrote(in.Item)
	if err := f.throttle(); err != nil {
		return nil, err
	}
	return f.API.PutItem(ctx, in, o...)
}

// UpdateItem implements dynamo.API.
func (f *FaultyAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.wrote(in.Key)
	if err := f.throttle(); err != nil {
		return nil, err
	}
	return f.API.UpdateItem(ctx, in, o...)
}

// DeleteItem implements dynamo.API.
func (f *FaultyAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	f.wrote(in.Key)
	if err := f.throttle(); err != nil {
		return nil, err
	}
	return f.API.DeleteItem(ctx, in, o...)
}

// Query implements dynamo.API.
func (f *FaultyAPI) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.reads.Add(1)
	if err := f.throttle(); err != nil {
		return nil, err
	}
	return f.API.Query(ctx, in, o...)
}
