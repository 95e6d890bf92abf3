// Package registry lists the client APIs the gateway serves and the paths
// each is served at. Adding an API is one package under pkg/ingress and
// one line here.
package registry

import (
	"github.com/llmgw/llmgw/pkg/ingress"
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
