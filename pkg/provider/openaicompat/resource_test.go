package openaicompat_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
)

// TestResponsesResourceCalls: the stored-response calls keep the base
// URL's own query (Azure's api-version) with the client's, send the
// method, the key and (compaction) the body with the model rewritten, and
// a provider that does not speak the Responses API refuses with no call.
func TestResponsesResourceCalls(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("Authorization")+" "+string(b))
		io.WriteString(w, `{"id":"resp_1","object":"response"}`)
	}))
	defer srv.Close()
	p := &config.Provider{Kind: "openai", BaseURL: srv.URL + "/v1?api-version=2025-04-01", APIs: []string{"responses"}}
	a, err := openaicompat.New("oa", p, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	call := &provider.Call{Req: &exchange.Request{API: exchange.Responses}, Step: config.Step{ID: "oa/gpt-5", Provider: "oa", Model: "gpt-5"},
		Key: exchange.NewKey("sk-pinned", 0)}
	ctx := context.Background()
	if body, err := a.ResponsesResource(ctx, call, http.MethodGet, "/resp_1/input_items", url.Values{"limit": {"2"}}, nil); err != nil || string(body) != `{"id":"resp_1","object":"response"}` {
		t.Fatalf("GET: %s %v", body, err)
	}
	if _, err := a.ResponsesResource(ctx, call, http.MethodPost, "/compact", nil, []byte(`{"model":"codex","input":"x"}`)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET /v1/responses/resp_1/input_items?api-version=2025-04-01&limit=2 Bearer sk-pinned ",
		`POST /v1/responses/compact?api-version=2025-04-01 Bearer sk-pinned {"model":"gpt-5","input":"x"}`,
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("upstream saw\n%q\nwant\n%q", got, want)
	}
	chat, _ := openaicompat.New("oc", &config.Provider{Kind: "openai", BaseURL: srv.URL + "/v1"}, srv.Client())
	if _, err := chat.ResponsesResource(ctx, call, http.MethodGet, "/resp_1", nil, nil); err == nil || len(got) != 2 {
		t.Errorf("a chat-only provider: %v, %d calls", err, len(got))
	}
}
