package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// StoreOptions chooses the state store.
type StoreOptions struct {
	// Kind is "embedded" (default: a bbolt file, no AWS) or "dynamodb".
	Kind string
	// StatePath is the embedded store's file (default .llmgw/state.db).
	StatePath string
	// Table is the DynamoDB table (default: $LLMGW_TABLE, else
	// deployment.DefaultTable).
	Table string
	// CreateTable creates a missing DynamoDB table (local mode only: in AWS
	// the stack owns the table).
	CreateTable bool
}

// DefaultStatePath is where local runs keep their embedded store.
const DefaultStatePath = deployment.DefaultStateFile

// OpenStore opens the configured store. DynamoDB loads AWS config the
// standard way (AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION, the credential chain).
func OpenStore(ctx context.Context, o StoreOptions) (store.Store, string, error) {
	switch o.Kind {
	case "", "embedded":
		path := statePath(o)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, "", err
		}
		// No fsync per commit: a local store survives a gateway crash, and
		// an fsync per request would dominate local latency.
		s, err := embedded.Open(path, embedded.WithNoSync())
		if err != nil {
			return nil, "", fmt.Errorf("embedded store %s: %w (is another gateway or command using it?)", path, err)
		}
		return s, "embedded:" + path, nil
	case "dynamodb":
		table := o.Table
		if table == "" {
			table = os.Getenv(deployment.EnvTable)
		}
		if table == "" {
			table = deployment.DefaultTable
		}
		client, err := dynamo.LoadClient(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("dynamodb: %w", err)
		}
		s := dynamo.New(client, table)
		if o.CreateTable {
			if err := s.EnsureTable(ctx); err != nil {
				return nil, "", fmt.Errorf("dynamodb table %s: %w", table, err)
			}
		}
		return s, "dynamodb:" + table, nil
	}
	return nil, "", fmt.Errorf("-store %q: want embedded or dynamodb", o.Kind)
}

// statePath is the embedded store file of o (the default when unset), and
// with DynamoDB where a local run keeps its other state (the usage spill).
func statePath(o StoreOptions) string {
	if o.StatePath != "" {
		return o.StatePath
	}
	return DefaultStatePath
}
