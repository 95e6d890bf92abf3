package openaiwire

import "encoding/json"

// MarshalJSON writes tool_choice as OpenAI takes it: "none", "auto" or
// "required", or {"type":"function","function":{"name":...}}. Translating
// adapters encode the canonical form (a request that arrived on another
// API) with it.
func (t ToolChoice) MarshalJSON() ([]byte, error) {
	if t.Mode == "function" {
		var v struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		v.Type, v.Function.Name = "function", t.Function
		return json.Marshal(v)
	}
	return json.Marshal(t.Mode)
}
