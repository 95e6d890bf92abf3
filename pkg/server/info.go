package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/keyledger"
)

// modelObject is one entry of GET /v1/models.
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// anthropicModel is one entry of GET /v1/models in Anthropic's shape.
type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// modelEpoch is the created time of every logical model: routes have no
// creation date (OpenAI's list says 0, Anthropic's the same instant).
const modelEpoch = "1970-01-01T00:00:00Z"

// models serves GET /v1/models: the logical models (routes), in Anthropic's
// shape ({"data":[{"type":"model","id","display_name","created_at"}],
// "has_more","first_id","last_id"}) for Anthropic clients, else OpenAI's.
func (h *Handler) models(w http.ResponseWriter, r *http.Request, rid string) {
	cfg := h.current.Load().cfg
	if anthropicClient(r) {
		list := struct {
			Data    []anthropicModel `json:"data"`
			HasMore bool             `json:"has_more"`
			FirstID *string          `json:"first_id"`
			LastID  *string          `json:"last_id"`
		}{Data: []anthropicModel{}}
		caller := exchange.CallerFrom(r.Context())
		for _, name := range cfg.RouteNames() {
			if caller.MayUse(name) {
				list.Data = append(list.Data, anthropicModel{Type: "model", ID: name, DisplayName: name, CreatedAt: modelEpoch})
			}
		}
		if n := len(list.Data); n > 0 {
			list.FirstID, list.LastID = &list.Data[0].ID, &list.Data[n-1].ID
		}
		writeJSON(w, http.StatusOK, list)
		return
	}
	list := struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{Object: "list", Data: []modelObject{}}
	caller := exchange.CallerFrom(r.Context())
	for _, name := range cfg.RouteNames() {
		if caller.MayUse(name) {
			list.Data = append(list.Data, modelObject{ID: name, Object: "model", OwnedBy: "llmgw"})
		}
	}
	writeJSON(w, http.StatusOK, list)
}

// modelPath extracts the id from /v1/models/{id}.
func modelPath(p string) (string, bool) {
	id, ok := strings.CutPrefix(p, "/v1/models/")
	return id, ok && id != ""
}

// model serves GET /v1/models/{id}.
func (h *Handler) model(w http.ResponseWriter, r *http.Request, rid, id string) {
	if _, ok := h.current.Load().cfg.Routes[id]; !ok || !exchange.CallerFrom(r.Context()).MayUse(id) {
		writeErrorIn(w, r, errorShape(r, nil, nil), gwerr.New(gwerr.NotFound, "the model %q does not exist", clip(id)).WithCode("model_not_found"), rid)
		return
	}
	if anthropicClient(r) {
		writeJSON(w, http.StatusOK, anthropicModel{Type: "model", ID: id, DisplayName: id, CreatedAt: modelEpoch})
		return
	}
	writeJSON(w, http.StatusOK, modelObject{ID: id, Object: "model", OwnedBy: "llmgw"})
}

// targetHealth is one target in GET /healthz. It names keys only by
// fingerprint.
type targetHealth struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	Model    string `json:"model"`
	Disabled bool   `json:"disabled,omitempty"`
	// Status is "degraded" when the provider is configured with keys and
	// none is usable now (Reason says why: the environment variable that
	// is not set, ...); empty otherwise.
	Status  string             `json:"status,omitempty"`
	Reason  string             `json:"reason,omitempty"`
	Breaker breaker.Snapshot   `json:"breaker"`
	Keys    []keyledger.Status `json:"keys,omitempty"`
}

// keyHealth returns a target's status and reason from its keys: degraded
// when the provider has keys configured and none of them is usable now.
func keyHealth(p *config.Provider, keys []keyledger.Status) (status, reason string) {
	if len(p.Keys) == 0 {
		return "", ""
	}
	var why []string
	for _, k := range keys {
		switch {
		case k.Available:
			return "", ""
		case k.Ref != "":
			why = append(why, k.Describe())
		case k.Reason != "" && !slices.Contains(why, k.Reason):
			why = append(why, k.Reason)
		}
	}
	reason = "no usable provider key"
	if len(why) > 0 {
		reason += ": " + strings.Join(why, "; ")
	}
	return "degraded", reason
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
