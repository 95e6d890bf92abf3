package config

import "strings"

// validateBedrockIDs checks every route's bedrock_model_ids: non-empty,
// printable ids without spaces, each listed once across all routes and
// none another route's name (a Bedrock Runtime client's modelId must name
// exactly one route).
func (c *Config) validateBedrockIDs() error {
	owner := map[string]string{}
	for _, name := range sortedKeys(c.Routes) {
		for i, id := range c.Routes[name].BedrockModelIDs {
			at := pathOf("routes", name, "bedrock_model_ids").Index(i)
			switch {
			case id == "" || len(id) > 2048 || strings.ContainsAny(id, " \t\r\n?#"):
				return errAt(at, "%s is not a Bedrock model id, inference-profile id or ARN", show(id))
			case owner[id] != "":
				return errAt(at, "%s is listed by route %s too: a model id names one route", show(id), show(owner[id]))
			case c.Routes[id] != nil && id != name:
				return errAt(at, "%s is the name of another route", show(id))
			}
			owner[id] = name
		}
	}
	return nil
}

// BedrockRoute returns the route a Bedrock Runtime modelId names: the
// route of that name, else the route whose bedrock_model_ids lists it.
func (c *Config) BedrockRoute(modelID string) (string, bool) {
	if _, ok := c.Routes[modelID]; ok {
		return modelID, true
	}
	for _, name := range sortedKeys(c.Routes) {
		for _, id := range c.Routes[name].BedrockModelIDs {
			if id == modelID {
				return name, true
			}
		}
	}
	return "", false
}
