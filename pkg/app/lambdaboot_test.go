package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/ssmconfig"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// TestLambdaColdStartStoresTheLastGoodConfigOffThePath: a cold start
// reads its config from SSM and is ready without waiting on the table (the
// DynamoDB endpoint holds every call until released here; an inline store
// of the last good config would time out and never be retried); the
// booted config is stored as the last good one in the background, and
// Shutdown waits for that.
func TestLambdaColdStartStoresTheLastGoodConfigOffThePath(t *testing.T) {
	endpoint := storetest.StartDynalite(t)
	table := storetest.UniqueTableName(t)
	direct := dynamo.New(storetest.DynaliteClient(endpoint), table)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := direct.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	// A gate in front of dynalite: calls wait until it opens.
	u, _ := url.Parse(endpoint)
	gate, held := make(chan struct{}), atomic.Int64{}
	rp := httputil.NewSingleHostReverseProxy(u)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held.Add(1)
		<-gate
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	ssm := ssmtest.New()
	defer ssm.Close()
	const path = "/llmgw/test/config"
	ssm.Put(path+"/00-base", "String", fakeConfig)
	for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "fake", "AWS_SECRET_ACCESS_KEY": "fake",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL_SSM": ssm.URL, "AWS_ENDPOINT_URL_DYNAMODB": proxy.URL,
		"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"} {
		t.Setenv(k, v)
	}
	lg, err := NewLambdaHandler(ctx, LambdaEnv{ConfigPath: path, Table: table, Refresh: time.Hour, Stage: "test"},
		slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	last := &ssmconfig.LastGood{Store: direct}
	if _, found, err := last.Load(ctx, path); found || err != nil {
		t.Fatalf("last good config stored before the table answered (found %v, %v)", found, err)
	}
	close(gate)
	if err := lg.Gateway.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, found, err := last.Load(ctx, path); !found || err != nil {
		t.Fatalf("last good config not stored by the time Shutdown returned (found %v, %v; %d calls held)", found, err, held.Load())
	}
}
