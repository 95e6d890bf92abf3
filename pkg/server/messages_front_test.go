package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/teams"
)

// The front for Anthropic clients: team keys in either header, errors in
// Anthropic's shape before the pipeline, count_tokens and the model list.

const teamKey = "llmgw_messages-test-key-0123456789abcdefghijklmnop"

// withTeams returns a config with one team holding teamKey, and the
// option that authenticates against it.
func withTeams(t *testing.T, yaml string) (string, func(*server.Options)) {
	t.Helper()
	yaml += "teams:\n  core:\n    keys: [{id: k1, sha256: \"" + teams.HashKey(teamKey) + "\"}]\n"
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	auth := teams.NewAuthenticator(func() *config.Config { return cfg }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return yaml, func(o *server.Options) { o.Authenticate = auth.Authenticate }
}

// errorOf decodes an Anthropic error body.
func errorOf(t *testing.T, body string) (typ, message string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Type != "error" {
		t.Fatalf("not an Anthropic error body: %s", body)
	}
	return e.Error.Type, e.Error.Message
}

func TestMessagesTeamKeyInEitherHeader(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	up := newUpstream(t, anthropicOK)
	yaml, auth := withTeams(t, msgRoute(t, "", "anthropic="+up.URL))
	g := newGateway(t, yaml, auth)
	params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 8, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
	for name, opt := range map[string]aoption.RequestOption{
		"x-api-key (ANTHROPIC_API_KEY)":                aoption.WithAPIKey(teamKey),
		"Authorization: Bearer (ANTHROPIC_AUTH_TOKEN)": aoption.WithAuthToken(teamKey),
	} {
		client := anthropic.NewClient(aoption.WithBaseURL(g.URL+"/"), aoption.WithMaxRetries(0), opt)
		if _, err := client.Messages.New(context.Background(), params); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for i := 0; i < int(up.hits.Load()); i++ {
		h := up.header(i)
		if strings.Contains(h.Get("x-api-key")+h.Get("Authorization"), teamKey) {
			t.Errorf("the team key reached the upstream: %v", h)
		}
	}
	var bodies []string
	for _, opt := range []aoption.RequestOption{aoption.WithAPIKey("llmgw_wrong"), aoption.WithAuthToken("llmgw_wrong"),
		aoption.WithMiddleware(func(r *http.Request, next aoption.MiddlewareNext) (*http.Response, error) {
			r.Header.Del("x-api-key") // no key at all
			return next(r)
		})} {
		client := anthropic.NewClient(aoption.WithBaseURL(g.URL+"/"), aoption.WithMaxRetries(0), opt)
		_, err := client.Messages.New(context.Background(), params)
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Type() != "authentication_error" {
			t.Fatalf("bad key: %v", err)
		}
		var e struct {
			Error map[string]any `json:"error"`
		}
		json.Unmarshal([]byte(ae.RawJSON()), &e)
		delete(e.Error, "request_id")
		delete(e.Error, "trace_id") // per request, like the request id
		b, _ := json.Marshal(e.Error)
		bodies = append(bodies, string(b))
	}
	if bodies[0] != bodies[1] || bodies[1] != bodies[2] {
		t.Errorf("401s differ by cause:\n%s", strings.Join(bodies, "\n"))
	}
	// The OpenAI API keeps the OpenAI envelope for the same refusal.
	resp := g.post(t, chatBody)
	if body := readAll(t, resp.Body); resp.StatusCode != 401 || !strings.HasPrefix(body, `{"error":{"message"`) {
		t.Errorf("chat 401 = %d %s", resp.StatusCode, body)
	}
	// Every path of the Messages API answers in Anthropic's shape, before routing.
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		req, _ := http.NewRequest(http.MethodPost, g.URL+path, strings.NewReader(`{}`))
		resp, _ := http.DefaultClient.Do(req)
		body := readAll(t, resp.Body)
		if typ, _ := errorOf(t, body); resp.StatusCode != 401 || typ != "authentication_error" {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

func TestMessagesFrontErrorsInAnthropicShape(t *testing.T) {
	up := newUpstream(t, anthropicOK)
	g := newGateway(t, "server: {max_body_bytes: 4096}\n"+msgRoute(t, "", "anthropic="+up.URL))
	client := g.anthropicSDK()
	_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "no-such-route", MaxTokens: 8,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Type() != "not_found_error" {
		t.Errorf("unknown model: %v", err)
	}
	cases := []struct {
		method, path, body string
		status             int
		typ, msg           string
	}{
		{"POST", "/v1/messages", `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "max_tokens: field required"},
		{"POST", "/v1/messages", `{"model":"claude","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "request_too_large", "the limit is 4096"},
		{"GET", "/v1/messages", ``, 405, "invalid_request_error", "method not allowed"},
		{"POST", "/v1/messages/batches", `{}`, 404, "not_found_error", "unknown path"},
		{"POST", "/v1/messages", `{"model":"claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, 415, "invalid_request_error", "Content-Type: application/json"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, g.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("anthropic-version", "2023-06-01")
		if c.status != 415 {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp.Body)
		typ, msg := errorOf(t, body)
		if rid := resp.Header.Get("request-id"); rid == "" || rid != resp.Header.Get("x-request-id") {
			t.Errorf("%s %s: request-id %q (the Anthropic SDKs report it)", c.method, c.path, rid)
		}
		if resp.StatusCode != c.status || typ != c.typ || !strings.Contains(msg, c.msg) {
			t.Errorf("%s %s: %d %s, want %d %s %q", c.method, c.path, resp.StatusCode, body, c.status, c.typ, c.msg)
		}
	}
	if up.hits.Load() != 0 {
		t.Errorf("%d upstream calls for refused requests", up.hits.Load())
	}
}

func TestMessagesCountTokens(t *testing.T) {
	anth := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if r.URL.Path != "/v1/messages/count_tokens" {
			t.Errorf("count went to %s", r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":2095}`)
	})
	g := newGateway(t, msgRoute(t, "", "anthropic="+anth.URL))
	client := g.anthropicSDK()
	params := anthropic.MessageCountTokensParams{Model: "claude", Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello, world"))}}
	var raw *http.Response
	n, err := client.Messages.CountTokens(context.Background(), params, aoption.WithResponseInto(&raw))
	if err != nil || n.InputTokens != 2095 || raw.Header.Get("x-gateway-estimate") != "" {
		t.Fatalf("upstream count = %+v, %v", n, err)
	}
	if !strings.Contains(string(anth.body(0)), `"model":"up-model-0"`) || anth.header(0).Get("x-api-key") != msgKey {
		t.Errorf("count request = %s", anth.body(0))
	}

	oai := newUpstream(t, okHandler)
	est := newGateway(t, msgRoute(t, "", "openai="+oai.URL))
	client = est.anthropicSDK()
	n, err = client.Messages.CountTokens(context.Background(), params, aoption.WithResponseInto(&raw))
	// 12 bytes of text: 3 tokens, +4 for the message, +3 for the reply (teams.EstimateInputTokens).
	if err != nil || n.InputTokens != 10 || raw.Header.Get("x-gateway-estimate") != "true" || !strings.Contains(n.RawJSON(), `"estimated":true`) {
		t.Errorf("estimate = %s, %v, header %q", n.RawJSON(), err, raw.Header.Get("x-gateway-estimate"))
	}
	if oai.hits.Load() != 0 {
		t.Errorf("the estimate called the upstream")
	}

	down := newGateway(t, msgRoute(t, "", "anthropic="+newUpstream(t, anthropicOverloaded).URL))
	client = down.anthropicSDK()
	if n, err := client.Messages.CountTokens(context.Background(), params, aoption.WithResponseInto(&raw)); err != nil || n.InputTokens != 10 || raw.Header.Get("x-gateway-estimate") != "true" {
		t.Errorf("count with the upstream down = %v, %v", n, err)
	}
}

func TestModelsInAnthropicShapeForAnthropicClients(t *testing.T) {
	g := newGateway(t, msgRoute(t, "", "anthropic=http://127.0.0.1:1"))
	client := g.anthropicSDK()
	page, err := client.Models.List(context.Background(), anthropic.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "claude" || page.Data[0].Type != "model" || page.Data[0].DisplayName != "claude" ||
		page.HasMore || page.FirstID != "claude" || page.LastID != "claude" || page.Data[0].CreatedAt.IsZero() && page.Data[0].JSON.CreatedAt.Raw() == "" {
		t.Errorf("models = %s", page.RawJSON())
	}
	m, err := client.Models.Get(context.Background(), "claude", anthropic.ModelGetParams{})
	if err != nil || m.ID != "claude" || m.Type != "model" {
		t.Errorf("model = %v, %v", m, err)
	}
	_, err = client.Models.Get(context.Background(), "nope", anthropic.ModelGetParams{})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Type() != "not_found_error" {
		t.Errorf("unknown model: %v", err)
	}
	resp, _ := http.Get(g.URL + "/v1/models")
	if body := readAll(t, resp.Body); !strings.HasPrefix(body, `{"object":"list","data":[{"id":"claude","object":"model"`) {
		t.Errorf("OpenAI clients got %s", body)
	}
}
