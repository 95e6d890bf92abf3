package bedrock_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func (g *gateway) get(t *testing.T, method, path, key string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, g.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestInferenceProfilesFromRoutes(t *testing.T) {
	g := newGateway(t, newUpstream(t, false))
	resp, body := g.get(t, http.MethodGet, "/inference-profiles?type=SYSTEM_DEFINED", teamKey)
	var out struct {
		InferenceProfileSummaries []struct {
			InferenceProfileID, InferenceProfileArn, Status, Type string
			Models                                                []struct{ ModelArn string }
		}
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var ids []string
	for _, p := range out.InferenceProfileSummaries {
		ids = append(ids, p.InferenceProfileID)
		if p.Status != "ACTIVE" || p.Type != "SYSTEM_DEFINED" || len(p.Models) != 2 || !strings.HasSuffix(p.InferenceProfileArn, "/"+p.InferenceProfileID) {
			t.Errorf("profile %+v", p)
		}
	}
	if got := strings.Join(ids, ","); got != "claude,"+profileID {
		t.Errorf("profiles %s", got)
	}
	if _, body := g.get(t, http.MethodGet, "/inference-profiles?type=APPLICATION", teamKey); body != `{"inferenceProfileSummaries":[]}` {
		t.Errorf("APPLICATION profiles %s", body)
	}
	resp, body = g.get(t, http.MethodGet, "/inference-profiles", "")
	if resp.StatusCode != 403 || resp.Header.Get("X-Amzn-Errortype") != "AccessDeniedException" || !strings.Contains(body, `"message"`) {
		t.Errorf("no key: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

func TestUnknownOperationInBedrockShape(t *testing.T) {
	g := newGateway(t, newUpstream(t, false))
	resp, body := g.get(t, http.MethodPost, "/model/claude/explode", teamKey)
	if resp.StatusCode != 404 || resp.Header.Get("X-Amzn-Errortype") != "ResourceNotFoundException" || !strings.HasPrefix(body, `{"message":`) {
		t.Errorf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, _ = g.get(t, http.MethodGet, "/model/claude/converse", teamKey)
	if resp.StatusCode == 200 || resp.Header.Get("X-Amzn-Errortype") == "" {
		t.Errorf("GET converse: %d %v", resp.StatusCode, resp.Header)
	}
}
