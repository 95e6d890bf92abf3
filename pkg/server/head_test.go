package server_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/llmgw/llmgw/pkg/server"
)

// TestHEADWhereverGET: every path that answers GET answers HEAD with the
// same status and headers (Content-Length included) and no body, through
// net/http and through a plain ResponseWriter that would send a body
// (lambdaurl's kind); a client API's path answers HEAD with 405.
func TestHEADWhereverGET(t *testing.T) {
	up := newUpstream(t, okHandler)
	usage := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"usage.report"}`))
	})
	g := newGateway(t, oneRoute("", up.URL), func(o *server.Options) {
		o.Extra = map[string]http.Handler{"/v1/usage": usage}
	})
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/v1/models", 200}, {"/models", 200}, {"/v1/models/m", 200}, {"/v1/models/nope", 404},
		{"/healthz", 200}, {"/v1/usage", 200}, {"/v1/nothing", 404},
	} {
		t.Run(tc.path, func(t *testing.T) {
			get, err := http.Get(g.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, get.Body)
			get.Body.Close()
			head, err := http.Head(g.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			head.Body.Close()
			if get.StatusCode != tc.status || head.StatusCode != tc.status {
				t.Fatalf("GET %d, HEAD %d, want %d", get.StatusCode, head.StatusCode, tc.status)
			}
			if got := head.Header.Get("Content-Length"); got != strconv.Itoa(len(body)) {
				t.Errorf("HEAD Content-Length %q, GET body %d bytes", got, len(body))
			}
			for _, k := range []string{"Content-Type", "X-Gateway-Error-Category", "Allow"} {
				if get.Header.Get(k) != head.Header.Get(k) {
					t.Errorf("%s: GET %q, HEAD %q", k, get.Header.Get(k), head.Header.Get(k))
				}
			}
			if head.Header.Get("x-request-id") == "" {
				t.Error("HEAD has no x-request-id")
			}

			rec := httptest.NewRecorder()
			g.h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, tc.path, nil))
			if rec.Code != tc.status || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != strconv.Itoa(len(body)) {
				t.Errorf("HEAD to the handler: status %d, %d body bytes, Content-Length %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
			}
		})
	}

	resp, err := http.Head(g.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("HEAD on the chat path: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	resp, err = http.Post(g.URL+"/healthz", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /healthz: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if up.hits.Load() != 0 {
		t.Error("an upstream was called")
	}
}
