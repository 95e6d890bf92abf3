// Package registry lists the client APIs the gateway serves and the paths
// each is served at. Adding an API is one package under pkg/ingress and
// one line here.
package registry

import (
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/ingress/bedrock"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/ingress/embeddings"
	"github.com/llmgw/llmgw/pkg/ingress/messages"
	"github.com/llmgw/llmgw/pkg/ingress/responses"
)

// Entry is one client API and the POST paths it answers: Paths for
// responses, CountPaths for token counts (the Ingress must then be an
// ingress.Counter).
type Entry struct {
	Paths      []string
	CountPaths []string
	Ingress    ingress.Ingress
}

// Ingresses is every client API the gateway serves.
var Ingresses = []Entry{
	{Paths: []string{"/v1/chat/completions", "/chat/completions"}, Ingress: chat.Ingress{}},
	{Paths: []string{"/v1/responses", "/responses"}, Ingress: responses.Ingress{}},
	{Paths: []string{"/v1/embeddings", "/embeddings"}, Ingress: embeddings.Ingress{}},
	{Paths: []string{"/v1/messages"}, CountPaths: []string{"/v1/messages/count_tokens"}, Ingress: messages.Ingress{}},
}

// Patterns are the client APIs served at paths with parameters (Bedrock
// Runtime's POST /model/{modelId}/{operation}): each returns the ingress
// (or, for a token-count path, the counter) of a path it serves, nil for
// any other.
var Patterns = []func(path string) (in, counter ingress.Ingress){bedrock.Match}

// Match returns the ingress or counter of a path no exact path names,
// from Patterns.
func Match(path string) (in, counter ingress.Ingress) {
	for _, m := range Patterns {
		if in, counter = m(path); in != nil || counter != nil {
			return in, counter
		}
	}
	return nil, nil
}

// Shape returns the client API whose error shape a path's errors take
// when no ingress serves the path itself (an unknown Bedrock operation,
// GET /inference-profiles), nil for none.
func Shape(path string) ingress.Ingress {
	if bedrock.Owns(path) {
		return bedrock.Ingress{}
	}
	return nil
}
