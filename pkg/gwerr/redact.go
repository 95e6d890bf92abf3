package gwerr

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxDetail caps upstream detail shown to a client.
const maxDetail = 300

// credentialish matches strings that look like credentials: bearer and
// AWS signature headers, common provider key prefixes, AWS access key ids,
// and long opaque tokens (base64 or URL-safe: session tokens, JWTs).
var credentialish = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)((bearer|x-amz-security-token:?|credential=|signature=)\s*\S+|\b(sk|gsk|xai|pk|rk)-[A-Za-z0-9_\-]{6,}|\bsk-ant-[A-Za-z0-9_\-]+|\bA(KIA|SIA)[A-Z0-9]{12,}|[A-Za-z0-9_\-+/]{32,}={0,2})`)
})

// Redact prepares upstream text for a client: every exact secret given is
// removed, anything credential-shaped is masked, control characters are
// dropped, and the result is truncated to a short, valid UTF-8 string.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	s = credentialish().ReplaceAllString(s, "[redacted]")
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || (r < 0x20 && r != ' ') || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > maxDetail {
		cut := maxDetail
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strings.TrimSpace(s)
}
