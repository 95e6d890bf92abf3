package bedrockwire

import (
	"time"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// InferenceProfile is one entry of a ListInferenceProfiles answer (the
// Bedrock control plane's GET /inference-profiles, which Claude Code's
// Bedrock mode reads on its base URL).
type InferenceProfile struct {
	ID, Name, Description, ARN string
	// Models are the ARNs of the models the profile routes to.
	Models []string
	// Type is SYSTEM_DEFINED or APPLICATION.
	Type string
}

// AppendInferenceProfiles appends a ListInferenceProfiles response body:
// {"inferenceProfileSummaries":[...]} (no nextToken: one page). Every
// profile is ACTIVE; created and updated at `at`.
func AppendInferenceProfiles(dst []byte, ps []InferenceProfile, at time.Time) []byte {
	ts := at.UTC().Format(time.RFC3339)
	dst = append(dst, `{"inferenceProfileSummaries":[`...)
	for i, p := range ps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"inferenceProfileName":`...)
		dst = jsonb.AppendString(dst, p.Name)
		dst = append(dst, `,"description":`...)
		dst = jsonb.AppendString(dst, p.Description)
		dst = append(dst, `,"createdAt":`...)
		dst = jsonb.AppendString(dst, ts)
		dst = append(dst, `,"updatedAt":`...)
		dst = jsonb.AppendString(dst, ts)
		dst = append(dst, `,"inferenceProfileArn":`...)
		dst = jsonb.AppendString(dst, p.ARN)
		dst = append(dst, `,"models":[`...)
		for j, m := range p.Models {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"modelArn":`...)
			dst = jsonb.AppendString(dst, m)
			dst = append(dst, '}')
		}
		dst = append(dst, `],"inferenceProfileId":`...)
		dst = jsonb.AppendString(dst, p.ID)
		dst = append(dst, `,"status":"ACTIVE","type":`...)
		dst = jsonb.AppendString(dst, p.Type)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}
