package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNonJSONContentTypeGets415WithoutUpstreamCall: a body not declared as
// JSON (the content types a browser sends cross-site without a preflight,
// and none at all) gets 415 in the client API's error shape, is recorded,
// and never reaches a provider; JSON with parameters and +json types pass.
func TestNonJSONContentTypeGets415WithoutUpstreamCall(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	for _, ct := range []string{
		"",                                  // fetch() with an untyped Blob body; sendBeacon
		"text/plain;charset=UTF-8",          // fetch() with a string body
		"application/x-www-form-urlencoded", // an HTML form; curl -d
		"multipart/form-data; boundary=x",
		"text/json",
		"application/jsonx",
		"application/json-seq",
		"not a media type",
	} {
		t.Run(ct, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(chatBody))
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			out := readAll(t, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnsupportedMediaType {
				t.Fatalf("status %d, want 415: %s", resp.StatusCode, out)
			}
			var env struct {
				Error struct {
					Message, Type, Code, Param string
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &env); err != nil {
				t.Fatalf("not the OpenAI error shape: %s", out)
			}
			e := env.Error
			if e.Type != "invalid_request" || e.Code != "unsupported_media_type" || e.Param != "Content-Type" ||
				!strings.Contains(e.Message, "application/json") || !strings.Contains(e.Message, "curl") {
				t.Errorf("error = %+v", e)
			}
			if resp.Header.Get("x-gateway-error-category") != "invalid_request" || resp.Header.Get("x-request-id") == "" {
				t.Errorf("headers = %v", resp.Header)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
	recs := g.waitRecs(t, 8)
	for _, r := range recs {
		if r.Status != http.StatusUnsupportedMediaType || r.Outcome != "invalid_request" {
			t.Errorf("record status %d outcome %q", r.Status, r.Outcome)
		}
	}

	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "application/vnd.example+json"} {
		resp := g.post(t, chatBody, "Content-Type", ct)
		if out := readAll(t, resp.Body); resp.StatusCode != 200 {
			t.Errorf("Content-Type %q: status %d: %s", ct, resp.StatusCode, out)
		}
	}
}
