package bedrock

import (
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// ProfilesPath is the control-plane read Claude Code's Bedrock mode makes
// on its base URL (ListInferenceProfiles).
const ProfilesPath = "/inference-profiles"

// WriteInferenceProfiles answers GET /inference-profiles from the routes
// the caller may use: one profile per route (its name as the id) and one
// per id in its bedrock_model_ids that is not an ARN, each routing to the
// route's targets' models. All are SYSTEM_DEFINED (the operator's, not the
// caller's): a ?type=APPLICATION filter lists none. One page; ARNs name
// the region in AWS_REGION (else us-east-1) and account 000000000000.
func WriteInferenceProfiles(w http.ResponseWriter, r *http.Request, cfg *config.Config, caller *exchange.Caller, now time.Time) int {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	var ps []bedrockwire.InferenceProfile
	if t := r.URL.Query().Get("type"); t == "" || t == "SYSTEM_DEFINED" {
		names := make([]string, 0, len(cfg.Routes))
		for name := range cfg.Routes {
			if caller.MayUse(name) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			var models []string
			steps, _, _ := cfg.Chain(name)
			for _, s := range steps {
				models = append(models, "arn:aws:bedrock:"+region+"::foundation-model/"+s.Model)
			}
			for _, id := range append([]string{name}, cfg.Routes[name].BedrockModelIDs...) {
				if strings.HasPrefix(id, "arn:") {
					continue
				}
				ps = append(ps, bedrockwire.InferenceProfile{ID: id, Name: id, Type: "SYSTEM_DEFINED", Models: models,
					Description: "gateway route " + name,
					ARN:         "arn:aws:bedrock:" + region + ":000000000000:inference-profile/" + id})
			}
		}
	}
	b := bedrockwire.AppendInferenceProfiles(nil, ps, now)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return http.StatusOK
}

// Owns reports whether a path belongs to the Bedrock APIs (an operation
// under /model/, known or not, or /inference-profiles), so the front
// answers its errors in Bedrock's shape.
func Owns(path string) bool {
	return path == ProfilesPath || strings.HasPrefix(path, bedrockwire.PathPrefix)
}
