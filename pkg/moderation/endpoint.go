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
	"github.com/llmgw/llmgw/pkg/stage"
)

// maxEndpointBody caps a moderation endpoint's answer.
const maxEndpointBody = 1 << 20

var errEndpointTimeout = errors.New("moderation endpoint timeout")

// endpoint is layer one: POST <base_url>/moderations {"model", "input"},
// answered by {"results": [{"flagged": bool, "categories": {name: bool}}]}.
// A result blocks when it is flagged (and, when the policy lists
// categories, one of them is set).
func (m *Moderator) endpoint(ctx context.Context, env stage.ModerationEnv, req *exchange.Request, e *config.ModerationEndpoint, text, stageName string) (verdict, error) {
	prov := env.Config.Providers[e.Provider]
	start := m.now()
	rec := exchange.Attempt{Target: e.Provider + "/" + e.Model, Stage: stageName}
	fail := func(reason string, cat gwerr.Category) (verdict, error) {
		rec.Category = cat
		attempt(&req.Trace, rec, start, m.now())
		return verdict{}, &layerError{reason}
	}
	u, err := url.Parse(prov.BaseURL)
	if err != nil {
		return fail("bad endpoint URL", gwerr.Internal)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/moderations"
	key, ok := env.Keys.Pick(e.Provider, e.Model)
	if !ok {
		return fail("no usable key for provider "+e.Provider, gwerr.Unavailable)
	}
	rec.Key = key.Fingerprint
	body, _ := json.Marshal(map[string]string{"model": e.Model, "input": text})
	cctx, cancel := context.WithTimeoutCause(ctx, e.Timeout.D(), errEndpointTimeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(cctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fail("bad endpoint request", gwerr.Internal)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("User-Agent", "llmgw")
	for k, v := range prov.Headers {
		hr.Header.Set(k, v)
	}
	auth := strings.ToLower(prov.AuthHeader)
	if auth == "" {
		auth = "authorization"
	}
	provider.SetKeyHeader(hr.Header, auth, key)
	client := m.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return fail("request ended", gwerr.Timeout)
		}
		if errors.Is(context.Cause(cctx), errEndpointTimeout) {
			return fail("timeout after "+e.Timeout.D().String(), gwerr.Timeout)
		}
		return fail("transport error", gwerr.Unavailable)
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	env.Keys.Observe(e.Provider, e.Model, key, resp.StatusCode, resp.Header)
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxEndpointBody))
	switch {
	case err != nil && errors.Is(context.Cause(cctx), errEndpointTimeout):
		return fail("timeout after "+e.Timeout.D().String(), gwerr.Timeout)
	case err != nil:
		return fail("transport error", gwerr.Unavailable)
	case resp.StatusCode != http.StatusOK:
		return fail("status "+strconv.Itoa(resp.StatusCode), gwerr.Unavailable)
	}
	v, ok := readResults(data, e.Categories)
	if !ok {
		return fail("malformed response", gwerr.Unavailable)
	}
	attempt(&req.Trace, rec, start, m.now())
	return v, nil
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
