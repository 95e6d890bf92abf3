package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
)

// TestRecordContextEndsBeforeTheRequestDeadline: the context given to
// Settle and Record survives the client but ends by the request's own
// deadline (on Lambda the invocation's, after which the environment may
// freeze), so a record's retries leave time for its spill.
func TestRecordContextEndsBeforeTheRequestDeadline(t *testing.T) {
	up := newUpstream(t, okHandler)
	got := make(chan time.Time, 1)
	g := newGateway(t, oneRoute("", up.URL), func(o *server.Options) {
		o.Record = func(ctx context.Context, _ *exchange.Record) {
			dl, _ := ctx.Deadline()
			got <- dl
		}
	})
	deadline := time.Now().Add(2 * time.Second)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithDeadline(r.Context(), deadline) // what lambdaurl's context carries
		defer cancel()
		g.h.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp.Body)
	if dl := <-got; dl.IsZero() || dl.After(deadline) {
		t.Fatalf("record context deadline %v, after the request's %v", dl, deadline)
	}
}
