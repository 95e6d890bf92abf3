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

// TestAfterResponseRunsThePostResponseWork: with AfterResponse set, the
// handler returns before the log line and the record, which run when the
// hook runs the work it was given (local mode's background runner); nil
// runs them before the handler returns (Lambda).
func TestAfterResponseRunsThePostResponseWork(t *testing.T) {
	up := newUpstream(t, okHandler)
	var pending []func()
	g := newGateway(t, oneRoute("", up.URL), func(o *server.Options) {
		o.AfterResponse = func(work func()) { pending = append(pending, work) }
	})
	returned := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.h.ServeHTTP(w, r)
		returned <- struct{}{}
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp.Body)
	<-returned
	if len(pending) != 1 || len(g.recs()) != 0 || strings.Contains(g.logs.String(), `"status":200`) {
		t.Fatalf("handler returned with %d pieces of work handed over, %d records, log %q: the work ran in the handler", len(pending), len(g.recs()), g.logs.String())
	}
	pending[0]()
	if recs := g.recs(); len(recs) != 1 || recs[0].Status != 200 || recs[0].LatencyMillis < 0 {
		t.Fatalf("records after the work ran: %+v", recs)
	}
	if !strings.Contains(g.logs.String(), `"status":200`) {
		t.Errorf("no request log line after the work ran: %s", g.logs.String())
	}

	inline := newGateway(t, oneRoute("", up.URL))
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inline.h.ServeHTTP(w, r)
		returned <- struct{}{}
	}))
	defer srv2.Close()
	resp, err = http.Post(srv2.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp.Body)
	<-returned
	if len(inline.recs()) != 1 {
		t.Fatalf("without AfterResponse the record must exist when the handler returns: %d", len(inline.recs()))
	}
}
