// Longer than 400 lines on purpose: it is the whole DynamoDB mapping of the
// store interface (expressions, conditions, TTL reads, batching) in one place,
// next to the conformance suite that checks it.

// Package dynamo implements store.Store on one DynamoDB table: the
// production backend, shared by all Lambda instances.
//
// Table: partition key "pk" (S), sort key "sk" (S); the TTL attribute is
// "ttl" (enable DynamoDB TTL on it in the infrastructure); "ver" (N) is the
// item version; "data" (B) the payload; every other attribute is a numeric
// (N) or string (S) attribute of store.Item. Attributes of other types,
// written by other tools, are ignored on read.
//
// Every operation is a single-item request; there are no transactions (see
// package store). The only multi-request operations are optimistic loops,
// each bounded (see [WithMaxAttempts]):
//   - Put with store.Always reads the current version (consistent GetItem)
//     and writes conditioned on it, because the version must increment and
//     PutItem cannot compute it;
//   - Put with store.IfAbsent over an expired item, and Add over an expired
//     item, replace the expired record with a PutItem conditioned on its old
//     version (expired items linger until DynamoDB's sweeper deletes them,
//     and DynamoDB's conditions would otherwise see their stale values);
//   - an Add whose condition fails reads the item once to tell a limit
//     (store.ErrLimit) from an expired item or a lost race.
//
// The common paths are one request: Get, Put IfAbsent/IfVersion, Add on a
// live or absent item, Delete, and one request per Query page. Reads are
// strongly consistent. Expiry is decided with the store's clock in every read
// and in every condition ("ttl" > now), never by DynamoDB's sweeper.
package dynamo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/llmgw/llmgw/pkg/store"
)

// API is the subset of the DynamoDB client that the store uses;
// *dynamodb.Client implements it. Tests may wrap it (to count or fail calls).
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

const defaultMaxAttempts = 16

// Store is the DynamoDB backend. Create it with [New]; it is safe for
// concurrent use.
type Store struct {
	api         API
	table       string
	now         func() time.Time
	pageSize    int32
	maxAttempts int
}

var _ store.Store = (*Store)(nil)

// Option configures [New].
type Option func(*Store)

// WithClock sets the clock used for expiry decisions (nil: time.Now). Tests
// use it to move time instead of sleeping.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// WithPageSize sets the Limit of each Query request (0, the default: no
// Limit, DynamoDB's 1 MB pages). Tests use a small value to exercise
// pagination cheaply.
func WithPageSize(n int32) Option {
	return func(s *Store) {
		if n >= 0 {
			s.pageSize = n
		}
	}
}

// WithMaxAttempts bounds the optimistic loops (default 16; retries wait a
// short random backoff). When a loop runs out, the call fails with
// store.ErrConflict.
func WithMaxAttempts(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxAttempts = n
		}
	}
}

// New returns a store on table through api.
func New(api API, table string, opts ...Option) *Store {
	s := &Store{api: api, table: table, now: time.Now, maxAttempts: defaultMaxAttempts}
	for _, o := range opts {
		o(s)
	}
	return s
}

// LoadClient builds a DynamoDB client from the standard AWS configuration
// (config.LoadDefaultConfig): environment, shared config files, the
// credentials chain, AWS_REGION, and AWS_ENDPOINT_URL_DYNAMODB for a local
// endpoint such as dynalite.
func LoadClient(ctx context.Context, optFns ...func(*config.LoadOptions) error) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return nil, fmt.Errorf("dynamo: load AWS config: %w", err)
	}
	return dynamodb.NewFromConfig(cfg), nil
}

// Close implements io.Closer; the client holds nothing to release.
func (s *Store) Close() error { return nil }

// EnsureTable creates the table (pay per request) when it does not exist and
// waits until it is ACTIVE, or ctx ends. For local runs and tests: in AWS
// the table, and its TTL setting on "ttl", belong to the infrastructure.
func (s *Store) EnsureTable(ctx context.Context) error {
	_, err := s.api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		_, err = s.api.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: &s.table,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String(store.AttrPK), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String(store.AttrSK), AttributeType: types.ScalarAttributeTypeS},
			},
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(store.AttrPK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(store.AttrSK), KeyType: types.KeyTypeRange},
			},
			BillingMode: types.BillingModePayPerRequest,
		})
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) { // in use: created concurrently
			return fmt.Errorf("dynamo: create table %s: %w", s.table, err)
		}
	case err != nil:
		return fmt.Errorf("dynamo: describe table %s: %w", s.table, err)
	}
	delay := 20 * time.Millisecond
	for {
		out, err := s.api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
		if err != nil {
			return fmt.Errorf("dynamo: describe table %s: %w", s.table, err)
		}
		if out.Table != nil && out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dynamo: wait for table %s: %w", s.table, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// ---- encoding ----

func num(v float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(v, 'f', -1, 64)}
}

func numInt(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func keyAttrs(k store.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{store.AttrPK: str(k.PK), store.AttrSK: str(k.SK)}
}

// encode renders a whole item with version ver and expiry ttl (0: none).
func encode(it store.Item, ver, ttl int64) map[string]types.AttributeValue {
	m := keyAttrs(it.Key)
	m[store.AttrVersion] = numInt(ver)
	if ttl != 0 {
		m[store.AttrTTL] = numInt(ttl)
	}
	if len(it.Data) > 0 {
		m[store.AttrData] = &types.AttributeValueMemberB{Value: it.Data}
	}
	for n, v := range it.Nums {
		m[n] = num(v)
	}
	for n, v := range it.Strs {
		m[n] = str(v)
	}
	return m
}

// raw is a decoded DynamoDB item before expiry is applied.
type raw struct {
	item store.Item
	ttl  int64
}

func decode(m map[string]types.AttributeValue) (raw, error) {
	var r raw
	for name, av := range m {
		switch name {
		case store.AttrPK:
			s, ok := av.(*types.AttributeValueMemberS)
			if !ok {
				return raw{}, fmt.Errorf("attribute %s is not a string", name)
			}
			r.item.Key.PK = s.Value
			continue
		case store.AttrSK:
			s, ok := av.(*types.AttributeValueMemberS)
			if !ok {
				return raw{}, fmt.Errorf("attribute %s is not a string", name)
			}
			r.item.Key.SK = s.Value
			continue
		case store.AttrVersion, store.AttrTTL:
			n, ok := av.(*types.AttributeValueMemberN)
			if !ok {
				return raw{}, fmt.Errorf("attribute %s is not a number", name)
			}
			v, err := strconv.ParseInt(n.Value, 10, 64)
			if err != nil {
				return raw{}, fmt.Errorf("attribute %s: %w", name, err)
			}
			if name == store.AttrVersion {
				r.item.Version = v
			} else {
				r.ttl = v
				r.item.Expires = store.ExpiresFromTTL(v)
			}
			continue
		case store.AttrData:
			if b, ok := av.(*types.AttributeValueMemberB); ok && len(b.Value) > 0 {
				r.item.Data = b.Value
			}
			continue
		}
		switch v := av.(type) {
		case *types.AttributeValueMemberN:
			f, err := strconv.ParseFloat(v.Value, 64)
			if err != nil {
				return raw{}, fmt.Errorf("attribute %q: %w", name, err)
			}
			if r.item.Nums == nil {
				r.item.Nums = map[string]float64{}
			}
			r.item.Nums[name] = f
		case *types.AttributeValueMemberS:
			if r.item.Strs == nil {
				r.item.Strs = map[string]string{}
			}
			r.item.Strs[name] = v.Value
		}
	}
	return r, nil
}

// expr accumulates expression attribute names and values.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
	byName map[string]string
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}, byName: map[string]string{}}
}

// name returns the placeholder of attribute a (every name goes through a
// placeholder: "ttl" and "data" are DynamoDB reserved words).
func (e *expr) name(a string) string {
	if p, ok := e.byName[a]; ok {
		return p
	}
	p := "#a" + strconv.Itoa(len(e.byName))
	e.byName[a] = p
	e.names[p] = a
	return p
}

// value returns a new placeholder bound to v.
func (e *expr) value(v types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = v
	return p
}

// live is the condition "the item, if any, has not expired at now".
func (e *expr) live(now time.Time) string {
	t := e.name(store.AttrTTL)
	return "(attribute_not_exists(" + t + ") OR " + t + " > " + e.value(numInt(now.Unix())) + ")"
}

func (e *expr) valuesOrNil() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// ---- errors ----

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// classify maps a DynamoDB error onto the store's errors: validation
// failures match store.ErrInvalid; anything else is returned as is
// (including context errors, which the SDK wraps).
func classify(err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" {
		return fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	return err
}

// ---- operations ----

// getRaw reads the item k (consistent), or returns found=false. With attrs,
// only those attributes (and the key) are read.
func (s *Store) getRaw(ctx context.Context, k store.Key, attrs ...string) (raw, bool, error) {
	in := &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            keyAttrs(k),
		ConsistentRead: aws.Bool(true),
	}
	if len(attrs) > 0 {
		e := newExpr()
		proj := make([]string, len(attrs))
		for i, a := range attrs {
			proj[i] = e.name(a)
		}
		in.ProjectionExpression = aws.String(strings.Join(proj, ", "))
		in.ExpressionAttributeNames = e.names
	}
	out, err := s.api.GetItem(ctx, in)
	if err != nil {
		return raw{}, false, classify(err)
	}
	if out.Item == nil {
		return raw{}, false, nil
	}
	r, err := decode(out.Item)
	if err != nil {
		return raw{}, false, fmt.Errorf("decode item: %w", err)
	}
	return r, true, nil
}

// Get implements store.Getter.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	if err := k.Validate(); err != nil {
		return store.Item{}, false, fmt.Errorf("dynamo: get %v: %w", k, err)
	}
	if err := ctx.Err(); err != nil {
		return store.Item{}, false, fmt.Errorf("dynamo: get %v: %w", k, err)
	}
	r, found, err := s.getRaw(ctx, k)
	if err != nil {
		return store.Item{}, false, fmt.Errorf("dynamo: get %v: %w", k, err)
	}
	if !found || store.Expired(r.ttl, s.now()) {
		return store.Item{}, false, nil
	}
	return r.item, true, nil
}

// putCond writes the whole item with version ver under condition cond
// (built in e). It returns errConditionFailed when the condition fails.
func (s *Store) putCond(ctx context.Context, it store.Item, ver int64, e *expr, cond string) error {
	_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 &s.table,
		Item:                      encode(it, ver, store.TTL(it.Expires)),
		ConditionExpression:       &cond,
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.valuesOrNil(),
	})
	if isConditionFailed(err) {
		return errConditionFailed
	}
	return classify(err)
}

var errConditionFailed = errors.New("condition failed")

// backoff waits before retry attempt n (n >= 1) of an optimistic loop: a
// random delay up to min(2^n ms, 50 ms), so contenders spread out. It returns
// ctx's error if ctx ends first.
func backoff(ctx context.Context, n int) error {
	if n == 0 {
		return ctx.Err()
	}
	ceiling := min(time.Millisecond<<min(n, 6), 50*time.Millisecond)
	t := time.NewTimer(rand.N(ceiling) + 1)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// putIfAbsentRaw creates it with version 1 when no record (live or expired)
// has its key.
func (s *Store) putIfAbsentRaw(ctx context.Context, it store.Item) error {
	e := newExpr()
	return s.putCond(ctx, it, 1, e, "attribute_not_exists("+e.name(store.AttrPK)+")")
}

// replaceVersion replaces the record whose version is old with it at
// version old+1.
func (s *Store) replaceVersion(ctx context.Context, it store.Item, old int64) error {
	e := newExpr()
	return s.putCond(ctx, it, old+1, e, e.name(store.AttrVersion)+" = "+e.value(numInt(old)))
}

// Put implements store.Putter.
func (s *Store) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	out, err := s.put(ctx, it, c)
	if err != nil {
		return store.Item{}, fmt.Errorf("dynamo: put %v: %w", it.Key, err)
	}
	return out, nil
}

func (s *Store) put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	if err := it.Validate(); err != nil {
		return store.Item{}, err
	}
	if err := c.Validate(false); err != nil {
		return store.Item{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Item{}, err
	}
	// The returned item: copies, normalised like a read.
	out := store.Item{Key: it.Key, Expires: store.ExpiresFromTTL(store.TTL(it.Expires))}
	if len(it.Nums) > 0 {
		out.Nums = maps.Clone(it.Nums)
	}
	if len(it.Strs) > 0 {
		out.Strs = maps.Clone(it.Strs)
	}
	if len(it.Data) > 0 {
		out.Data = bytes.Clone(it.Data)
	}

	if c.Kind == store.CondIfVersion {
		e := newExpr()
		cond := e.name(store.AttrVersion) + " = " + e.value(numInt(c.Version)) + " AND " + e.live(s.now())
		switch err := s.putCond(ctx, out, c.Version+1, e, cond); {
		case errors.Is(err, errConditionFailed):
			return store.Item{}, fmt.Errorf("%w: item absent, expired or not at version %d", store.ErrConflict, c.Version)
		case err != nil:
			return store.Item{}, err
		}
		out.Version = c.Version + 1
		return out, nil
	}

	// Always and IfAbsent: create, or replace the current record at its
	// version; IfAbsent replaces only an expired record.
	for attempt := 0; attempt < s.maxAttempts; attempt++ {
		lost := attempt // races lost so far
		if c.Kind == store.CondIfAbsent && attempt > 0 {
			lost-- // its first failure is no race: it just has to look
		}
		if err := backoff(ctx, lost); err != nil {
			return store.Item{}, err
		}
		var (
			cur   raw
			found bool
		)
		if c.Kind == store.CondAlways || attempt > 0 {
			var err error
			if cur, found, err = s.getRaw(ctx, it.Key, store.AttrVersion, store.AttrTTL); err != nil {
				return store.Item{}, err
			}
		}
		// IfAbsent tries the create first and reads only when it fails.
		if found && c.Kind == store.CondIfAbsent && !store.Expired(cur.ttl, s.now()) {
			return store.Item{}, fmt.Errorf("%w: item exists", store.ErrConflict)
		}
		var err error
		if found {
			err = s.replaceVersion(ctx, out, cur.item.Version)
			out.Version = cur.item.Version + 1
		} else {
			err = s.putIfAbsentRaw(ctx, out)
			out.Version = 1
		}
		switch {
		case err == nil:
			return out, nil
		case !errors.Is(err, errConditionFailed):
			return store.Item{}, err
		}
	}
	return store.Item{}, fmt.Errorf("%w: gave up after %d attempts (contention)", store.ErrConflict, s.maxAttempts)
}

// Add implements store.Adder.
func (s *Store) Add(ctx context.Context, k store.Key, deltas map[string]float64, opts store.AddOptions) (store.Item, error) {
	out, err := s.add(ctx, k, deltas, opts)
	if err != nil {
		return store.Item{}, fmt.Errorf("dynamo: add %v: %w", k, err)
	}
	return out, nil
}

func (s *Store) add(ctx context.Context, k store.Key, deltas map[string]float64, opts store.AddOptions) (store.Item, error) {
	if err := store.ValidateAdd(k, deltas, opts); err != nil {
		return store.Item{}, err
	}
	ttl := store.TTL(opts.Expires)
	for attempt := 0; attempt < s.maxAttempts; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			return store.Item{}, err
		}
		now := s.now()
		e := newExpr()
		adds := []string{e.name(store.AttrVersion) + " " + e.value(numInt(1))}
		for n, d := range deltas {
			adds = append(adds, e.name(n)+" "+e.value(num(d)))
		}
		update := "ADD " + strings.Join(adds, ", ")
		if ttl != 0 {
			t := e.name(store.AttrTTL)
			update += " SET " + t + " = if_not_exists(" + t + ", " + e.value(numInt(ttl)) + ")"
		}
		conds := []string{e.live(now)}
		for n, m := range opts.Max {
			// Conditions do no arithmetic: compare with max-delta. An absent
			// attribute counts as 0, which fits only if delta <= max.
			lim := m - deltas[n]
			c := e.name(n) + " <= " + e.value(num(lim))
			if lim >= 0 {
				c = "(attribute_not_exists(" + e.name(n) + ") OR " + c + ")"
			}
			conds = append(conds, c)
		}
		cond := strings.Join(conds, " AND ")
		res, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.table,
			Key:                       keyAttrs(k),
			UpdateExpression:          &update,
			ConditionExpression:       &cond,
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
			ReturnValues:              types.ReturnValueAllNew,
		})
		if err == nil {
			r, err := decode(res.Attributes)
			if err != nil {
				return store.Item{}, fmt.Errorf("decode item: %w", err)
			}
			return r.item, nil
		}
		if !isConditionFailed(err) {
			return store.Item{}, classify(err)
		}

		// The condition failed: expired item, limit, or a race. Look.
		cur, found, err := s.getRaw(ctx, k)
		if err != nil {
			return store.Item{}, err
		}
		if !found {
			// Absent: the condition failed on a limit that even zero
			// exceeds, or the item was deleted meanwhile (retry).
			if name, over := store.ExceedsMax(nil, deltas, opts.Max); over {
				return store.Item{}, fmt.Errorf("%w: attribute %q", store.ErrLimit, name)
			}
			continue
		}
		if !store.Expired(cur.ttl, s.now()) {
			if name, clash := store.StringClash(cur.item.Strs, deltas, opts.Max); clash {
				return store.Item{}, fmt.Errorf("%w: attribute %q is a string, not a number", store.ErrInvalid, name)
			}
			if name, over := store.ExceedsMax(cur.item.Nums, deltas, opts.Max); over {
				return store.Item{}, fmt.Errorf("%w: attribute %q", store.ErrLimit, name)
			}
			continue // it changed since the update was refused: retry
		}
		// Expired: the Add starts from an empty item, replacing the stale
		// record at its version (so a concurrent Add cannot be lost).
		if name, over := store.ExceedsMax(nil, deltas, opts.Max); over {
			return store.Item{}, fmt.Errorf("%w: attribute %q", store.ErrLimit, name)
		}
		fresh := store.Item{Key: k, Expires: store.ExpiresFromTTL(ttl)}
		if len(deltas) > 0 {
			fresh.Nums = maps.Clone(deltas)
		}
		switch err := s.replaceVersion(ctx, fresh, cur.item.Version); {
		case err == nil:
			fresh.Version = cur.item.Version + 1
			return fresh, nil
		case !errors.Is(err, errConditionFailed):
			return store.Item{}, err
		}
	}
	return store.Item{}, fmt.Errorf("%w: gave up after %d attempts (contention)", store.ErrConflict, s.maxAttempts)
}

// Delete implements store.Deleter.
func (s *Store) Delete(ctx context.Context, k store.Key, c store.Cond) error {
	if err := s.delete(ctx, k, c); err != nil {
		return fmt.Errorf("dynamo: delete %v: %w", k, err)
	}
	return nil
}

func (s *Store) delete(ctx context.Context, k store.Key, c store.Cond) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if err := c.Validate(true); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	in := &dynamodb.DeleteItemInput{TableName: &s.table, Key: keyAttrs(k)}
	if c.Kind == store.CondIfVersion {
		e := newExpr()
		cond := e.name(store.AttrVersion) + " = " + e.value(numInt(c.Version)) + " AND " + e.live(s.now())
		in.ConditionExpression = &cond
		in.ExpressionAttributeNames = e.names
		in.ExpressionAttributeValues = e.values
	}
	_, err := s.api.DeleteItem(ctx, in)
	if isConditionFailed(err) {
		return fmt.Errorf("%w: item absent, expired or not at version %d", store.ErrConflict, c.Version)
	}
	return classify(err)
}

// Query implements store.Querier: one Query request per page (Limit from
// [WithPageSize], else DynamoDB's 1 MB), expired items filtered out, fn
// called between pages so at most one page is in memory.
func (s *Store) Query(ctx context.Context, pk, skFrom, skTo string, fn func(store.Item) bool) error {
	if err := s.query(ctx, pk, skFrom, skTo, fn); err != nil {
		return fmt.Errorf("dynamo: query %q: %w", pk, err)
	}
	return nil
}

func (s *Store) query(ctx context.Context, pk, skFrom, skTo string, fn func(store.Item) bool) error {
	if err := store.ValidateQuery(pk, skFrom, skTo); err != nil {
		return err
	}
	if skTo != "" && skFrom >= skTo {
		return nil
	}
	var start map[string]types.AttributeValue
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := s.now()
		e := newExpr()
		keyCond := e.name(store.AttrPK) + " = " + e.value(str(pk))
		switch sk := store.AttrSK; {
		case skFrom != "" && skTo != "":
			// Only one sort key condition is allowed; BETWEEN is inclusive,
			// so an item at exactly skTo is dropped below.
			keyCond += " AND " + e.name(sk) + " BETWEEN " + e.value(str(skFrom)) + " AND " + e.value(str(skTo))
		case skFrom != "":
			keyCond += " AND " + e.name(sk) + " >= " + e.value(str(skFrom))
		case skTo != "":
			keyCond += " AND " + e.name(sk) + " < " + e.value(str(skTo))
		}
		filter := e.live(now)
		in := &dynamodb.QueryInput{
			TableName:                 &s.table,
			KeyConditionExpression:    &keyCond,
			FilterExpression:          &filter,
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		}
		if s.pageSize > 0 {
			in.Limit = aws.Int32(s.pageSize)
		}
		out, err := s.api.Query(ctx, in)
		if err != nil {
			return classify(err)
		}
		for _, m := range out.Items {
			r, err := decode(m)
			if err != nil {
				return fmt.Errorf("decode item: %w", err)
			}
			if r.item.Key.SK == skTo || store.Expired(r.ttl, now) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if !fn(r.item) {
				return nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		start = out.LastEvaluatedKey
	}
}
