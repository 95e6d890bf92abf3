package teams

import (
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// localHost reports whether host (a request's Host: a name or an IP
// literal, with or without a port) names this machine the way a keyless
// gateway may be addressed: localhost, 127.0.0.1, [::1], or one of the
// bound hosts (the listener's own address). A web page the browser
// resolved to 127.0.0.1 through DNS rebinding still sends its own name
// (Host: attacker.example), so it is refused.
func localHost(host string, bound []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	for _, b := range bound {
		if strings.EqualFold(host, strings.TrimSuffix(strings.TrimPrefix(b, "["), "]")) {
			return true
		}
	}
	return false
}

// errForeignHost is the refusal of a keyless request addressed to another
// host (403, in the client API's error shape).
func errForeignHost(host string) *gwerr.Error {
	return gwerr.New(gwerr.Permission,
		"this gateway has no team keys configured, so it serves only requests addressed to localhost, 127.0.0.1, [::1] or its bound address; Host %q is none of them (configure team keys to serve other names)",
		jsonb.Truncate(host, 100)).WithCode("host_not_allowed")
}

// anonymous admits a keyless request when it is addressed to this machine.
func (a *Authenticator) anonymous(r *http.Request) error {
	if localHost(r.Host, a.BoundHosts) {
		return nil
	}
	a.log.LogAttrs(r.Context(), slog.LevelWarn, "keyless request refused: Host is not local",
		slog.String("host", jsonb.Truncate(r.Host, 100)), slog.String("path", jsonb.Truncate(r.URL.Path, 200)),
		slog.String("remote", r.RemoteAddr))
	return errForeignHost(r.Host)
}
