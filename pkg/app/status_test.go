package app

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/status"
)

// TestStatusPageBehindTheFront: the assembled gateway serves the page to
// anyone (it holds no data) and its data to admin keys only; the data
// shows what this instance's requests did (the failover's overloaded
// primary) and the runbook's commands.
func TestStatusPageBehindTheFront(t *testing.T) {
	og := newOtelGateway(t)
	og.chat(t, "m", "hi", nil)
	srv := httptest.NewServer(og.g.Handler)
	defer srv.Close()
	resp, err := http.Get(srv.URL + status.PagePath)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(page), "status.json") {
		t.Errorf("page: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, err = http.Get(srv.URL + status.DataPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("keyless data: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+status.DataPath, nil)
	req.Header.Set("Authorization", "Bearer "+og.key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap status.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil || resp.StatusCode != 200 {
		t.Fatalf("admin data: %d %v", resp.StatusCode, err)
	}
	var primary *status.TargetState
	for i, r := range snap.Routes {
		if r.Name == "m" {
			primary = &snap.Routes[i].Targets[0]
		}
	}
	if primary == nil || primary.ID != "bad/gpt-a" || primary.Recent.Errors["overloaded"] != 1 || len(primary.Commands) == 0 {
		t.Fatalf("route m's primary: %+v", primary)
	}
	if snap.Extra["telemetry"] == nil {
		t.Error("no telemetry counters in the data")
	}
}
