package teams_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// TestEarlyRejectionsAreRecordedUnderTheCaller: a request from an
// authenticated team that is refused before any upstream call - because
// its body does not parse, is too large, asks for a stream it cannot
// accept, names an unknown or forbidden model or a bad tag - is recorded
// under that team and key id, never under "anonymous" (the front
// authenticates before anything that depends on the body).
func TestEarlyRejectionsAreRecordedUnderTheCaller(t *testing.T) {
	usagetest.Run(t, []usagetest.Case{{Name: "Early", Fn: func(t *testing.T, open usagetest.Opener) {
		g := newGW(t, gwOptions{open: open, limits: "limits: {requests_per_minute: 1000}",
			extra: "\nserver: {max_body_bytes: 2048}\n"})
		big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`
		cases := []struct {
			name, body string
			hdr        []string
			chunked    bool // no Content-Length: the limit trips while reading
			status     int
		}{
			{"bad json", `{"model":"m",`, nil, false, 400},
			{"wrong type", `{"model":"m","messages":"hi"}`, nil, false, 400},
			{"too large (content-length)", big, nil, false, 400},
			{"too large (chunked)", big, nil, true, 400},
			{"bad accept", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, []string{"Accept", "image/png"}, false, 400},
			{"unknown model", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, nil, false, 404},
			{"forbidden model", `{"model":"other","messages":[{"role":"user","content":"hi"}]}`, nil, false, 403},
			{"bad tag", chatBody, []string{"x-gateway-tag", "no spaces allowed"}, false, 400},
		}
		ids := map[string]string{}
		for _, tc := range cases {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(strings.NewReader(tc.body)) // hides the length
			}
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+g.keys["search"])
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				req.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			g.inflight.Wait()
			if resp.StatusCode != tc.status {
				t.Fatalf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
			}
			ids[resp.Header.Get("x-request-id")] = tc.name
		}
		if g.up.hits.Load() != 0 {
			t.Fatalf("%d upstream calls for rejected requests", g.up.hits.Load())
		}
		got := map[string]exchange.Record{}
		for _, r := range g.records(t, "search") {
			got[r.RequestID] = r
		}
		for id, name := range ids {
			r, ok := got[id]
			if !ok {
				t.Errorf("%s: no record under team search", name)
				continue
			}
			if r.Team != "search" || r.KeyID != "k1" || r.Outcome == "ok" {
				t.Errorf("%s: record team %q key %q outcome %q", name, r.Team, r.KeyID, r.Outcome)
			}
		}
		if anon := g.records(t, config.AnonymousTeam); len(anon) != 0 {
			t.Errorf("%d records under %q: %+v", len(anon), config.AnonymousTeam, anon)
		}
	}}})
}
