package moderation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/retryafter"
	"github.com/llmgw/llmgw/pkg/stage"
)

// maxEndpointBody caps a moderation endpoint's answer.
const maxEndpointBody = 1 << 20

// EndpointAPI is the API of a moderation endpoint call (layer one): its
// request is built here, its answer is one whole body.
const EndpointAPI exchange.API = "moderations"

var errEndpointTimeout = errors.New("moderation endpoint timeout")

// endpoint is layer one: POST <base_url>/moderations {"model", "input"},
// answered by {"results": [{"flagged": bool, "categories": {name: bool}}]}.
// A result blocks when it is flagged (and, when the policy lists
// categories, one of them is set). The call goes through the failover
// engine (env.Call) as one attempt at the target provider/model: its
// breaker, the provider's key from the key ledger (which learns from the
// answer), the layer's timeout; it is an attempt in the request's trace.
func (m *Moderator) endpoint(ctx context.Context, env stage.ModerationEnv, req *exchange.Request, e *config.ModerationEndpoint, text, stageName string) (verdict, error) {
	prov := env.Config.Providers[e.Provider]
	u, err := url.Parse(prov.BaseURL)
	if err != nil {
		attempt(&req.Trace, exchange.Attempt{Target: e.Provider + "/" + e.Model, Stage: stageName, Category: gwerr.Internal}, m.now(), m.now())
		return verdict{}, &layerError{"bad endpoint URL"}
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/moderations"
	auth := strings.ToLower(prov.AuthHeader)
	if auth == "" {
		auth = "authorization"
	}
	client := m.Client
	if client == nil {
		client = defaultClient
	}
	body, _ := json.Marshal(map[string]string{"model": e.Model, "input": text})
	id := e.Provider + "/" + e.Model
	mreq := &exchange.Request{ID: req.ID, TraceID: req.TraceID, TraceParent: req.TraceParent, API: EndpointAPI, Start: m.now(),
		Caller: req.Caller, Route: id, Body: body,
		Steps:  []config.Step{{ID: id, Provider: e.Provider, Model: e.Model, Attempts: 1, FirstTokenTimeout: e.Timeout.D()}},
		Policy: config.Policy{Attempts: 1, ResponseTimeout: e.Timeout, FirstTokenTimeout: e.Timeout}}
	cctx, cancel := context.WithTimeoutCause(ctx, e.Timeout.D(), errEndpointTimeout)
	defer cancel()
	data, err := env.Call(cctx, mreq, func(ctx context.Context, call *provider.Call) ([]byte, error) {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
		if err != nil {
			return nil, &gwerr.Error{Category: gwerr.Internal, Message: "bad endpoint request", Cause: err}
		}
		provider.SetRequestHeaders(hr.Header, call, false, prov.Headers, auth)
		resp, err := provider.Do(ctx, client, e.Provider, call, hr)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxEndpointBody))
		if err != nil {
			return nil, provider.TransportError(ctx, e.Provider, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, provider.StatusError(e.Provider, resp.StatusCode, "", "", retryafter.Parse(resp.Header, m.now()))
		}
		return data, nil
	})
	for _, a := range mreq.Trace.Attempts {
		a.Stage = stageName
		req.Trace.Attempts = append(req.Trace.Attempts, a)
	}
	if err != nil {
		return verdict{}, &layerError{endpointReason(ctx, cctx, err, e)}
	}
	v, ok := readResults(data, e.Categories)
	if !ok {
		if n := len(req.Trace.Attempts); n > 0 {
			req.Trace.Attempts[n-1].Category = gwerr.Unavailable
		}
		return verdict{}, &layerError{"malformed response"}
	}
	return v, nil
}

// endpointReason says, safely (no body, no text), why layer one's call
// failed.
func endpointReason(ctx, cctx context.Context, err error, e *config.ModerationEndpoint) string {
	ge := gwerr.As(err)
	switch {
	case ctx.Err() != nil:
		return "request ended"
	case errors.Is(context.Cause(cctx), errEndpointTimeout), ge.Category == gwerr.Timeout:
		return "timeout after " + e.Timeout.D().String()
	case ge.Status != 0:
		return "status " + strconv.Itoa(ge.Status)
	case ge.Provider == "":
		return ge.Message // the engine's own: a skip (an open breaker, no usable key)
	}
	return "transport error"
}

// readResults reads a moderation response; ok is false when it is not one.
func readResults(data []byte, only []string) (verdict, bool) {
	if !gjson.ValidBytes(data) {
		return verdict{}, false
	}
	results := gjson.GetBytes(data, "results")
	if !results.IsArray() || len(results.Array()) == 0 {
		return verdict{}, false
	}
	var v verdict
	for _, r := range results.Array() {
		flagged, cats := r.Get("flagged"), r.Get("categories")
		if (flagged.Type != gjson.True && flagged.Type != gjson.False) || !cats.IsObject() {
			return verdict{}, false
		}
		if !flagged.Bool() {
			continue
		}
		var set []string
		cats.ForEach(func(k, val gjson.Result) bool {
			if val.Type == gjson.True && (len(only) == 0 || contains(only, k.String())) {
				set = append(set, k.String())
			}
			return true
		})
		sort.Strings(set)
		switch {
		case len(set) > 0:
			v = verdict{block: true, category: set[0]}
		case len(only) == 0:
			v = verdict{block: true, category: "flagged"}
		}
		if v.block {
			return v, true
		}
	}
	return v, true
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// defaultClient calls moderation endpoints when Moderator.Client is nil: it
// follows no redirect (provider.NoRedirects), so neither the key nor the
// text reaches another host.
var defaultClient = &http.Client{CheckRedirect: provider.NoRedirects}
