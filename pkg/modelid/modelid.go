// Package modelid reads Amazon Bedrock model identifiers: a base model id
// (anthropic.claude-sonnet-4-5-20250929-v1:0), a cross-region inference
// profile id (the base id behind a geography prefix: us., us-gov., eu.,
// apac., jp., au., ca., global.), or an ARN of a foundation model or an
// inference profile. Base returns the base model behind any of them, so a
// profile is priced and treated like its model. Standard library only.
package modelid

import "strings"

// ProfilePrefixes are the geography prefixes of Bedrock's system-defined
// cross-region inference profiles.
var ProfilePrefixes = []string{"us.", "us-gov.", "eu.", "apac.", "jp.", "au.", "ca.", "global."}

// Base returns the base model id behind id: id itself for a base model,
// the id without its geography prefix for an inference profile, the model
// id inside a foundation-model or inference-profile ARN. It returns ""
// for an ARN whose model it cannot see (an application inference profile,
// a provisioned or custom model): configure the target's base_model for
// those.
func Base(id string) string {
	if strings.HasPrefix(id, "arn:") {
		parts := strings.SplitN(id, ":", 6)
		if len(parts) < 6 || parts[2] != "bedrock" {
			return ""
		}
		kind, name, ok := strings.Cut(parts[5], "/")
		if !ok {
			return ""
		}
		switch kind {
		case "foundation-model":
			return name
		case "inference-profile":
			return stripProfile(name)
		}
		return ""
	}
	return stripProfile(id)
}

// IsProfile reports whether id is a cross-region inference profile id or
// an inference-profile ARN.
func IsProfile(id string) bool {
	if strings.HasPrefix(id, "arn:") {
		return strings.Contains(id, ":inference-profile/") || strings.Contains(id, ":application-inference-profile/")
	}
	return stripProfile(id) != id
}

// stripProfile removes a geography prefix from an id of the form
// <geo>.<provider>.<model>.
func stripProfile(id string) string {
	for _, p := range ProfilePrefixes {
		if rest, ok := strings.CutPrefix(id, p); ok && strings.Contains(rest, ".") {
			return rest
		}
	}
	return id
}
