// Package toy is a provider kind that exists for one test: it shows that
// adding a kind takes this one package (an adapter and its descriptor)
// and one registry line (pkg/provider/registry's toykind_test.go). Its
// upstream speaks a made-up API: POST {base_url}/generate with
// {"model","request"} (the canonical chat request), answered with
// {"text","input_tokens","output_tokens"}; the key goes in x-toy-key.
package toy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// KeyHeader is the header the toy upstream reads its key from.
const KeyHeader = "x-toy-key"

// Descriptor is provider kind "toy": it speaks no client API (every
// request is translated to the toy API), needs a base_url, takes keys in
// x-toy-key, and its targets take one option, voice (loud or quiet).
var Descriptor = &provider.Descriptor{
	Config: config.Kind{
		Name:       "toy",
		AuthHeader: KeyHeader,
		Validate:   config.BaseURLRequired,
		TargetOptions: map[string]func(string) string{
			"voice": func(v string) string {
				if v != "loud" && v != "quiet" {
					return config.Show(v) + " is not loud or quiet"
				}
				return ""
			},
		},
	},
	New: func(_ context.Context, id string, p *config.Provider, hc *http.Client) (provider.Provider, error) {
		return &adapter{url: strings.TrimSuffix(p.BaseURL, "/") + "/generate",
			send: provider.Sender{Provider: id, Client: hc, Headers: p.Headers, AuthHeader: provider.KeyHeader(p, KeyHeader)}}, nil
	},
}

// Request is the toy API's request body: the model and the conversation's
// text, turn by turn.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
}

// Message is one turn of a toy request.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Response is the toy API's answer.
type Response struct {
	Text         string `json:"text"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
}

// adapter sends every request to the toy API, whole (a stream gets the
// whole answer as its events).
type adapter struct {
	url  string
	send provider.Sender
}

// Send implements provider.Provider.
func (a *adapter) Send(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	tr := Request{Model: call.Model()}
	for _, m := range call.Prompt().Messages {
		tr.Messages = append(tr.Messages, Message{Role: string(m.Role), Text: exchange.BlocksText(m.Content)})
	}
	body, err := json.Marshal(tr)
	if err != nil {
		return nil, &gwerr.Error{Category: gwerr.InvalidRequest, Message: "request could not be translated for the toy", Provider: a.send.Provider, Cause: err}
	}
	resp, err := a.send.Post(ctx, call, a.url, body, false, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r Response
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, provider.TransportError(ctx, a.send.Provider, err)
	}
	if json.Unmarshal(data, &r) != nil || r.Text == "" {
		return nil, provider.EmptyResponse(a.send.Provider)
	}
	u := exchange.TokenUsage{Input: r.InputTokens, Output: r.OutputTokens}
	return provider.Events(u,
		exchange.Event{Kind: exchange.Start, ID: "toy-1", Name: call.Model()},
		exchange.Event{Kind: exchange.Text, Text: r.Text},
		exchange.Event{Kind: exchange.Finish, Finish: exchange.FinishStop},
		exchange.Event{Kind: exchange.Usage, Usage: u},
	), nil
}
