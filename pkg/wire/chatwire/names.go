package chatwire

import (
	"fmt"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// MaxFunctionName is the longest tool (function) name the providers accept.
//
// OpenAI documents a function name as "a-z, A-Z, 0-9, or contain
// underscores and dashes, with a maximum length of 64", and Anthropic a
// tool name as ^[a-zA-Z0-9_-]{1,64}$; a chat request may fail over from
// one to the other, so the gateway holds every request to that common rule
// (ValidFunctionName) before any upstream call.
const MaxFunctionName = 64

// ValidFunctionName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func ValidFunctionName(name string) bool {
	return len(name) >= 1 && len(name) <= MaxFunctionName && badNameByte(name) < 0
}

// badNameByte returns the index of the first byte of name outside
// [a-zA-Z0-9_-], or -1.
func badNameByte(name string) int {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return i
		}
	}
	return -1
}

// checkFunctionName returns a 400 naming param when name breaks the
// providers' rule. It quotes the name only when it is short enough to
// quote.
func checkFunctionName(param, name string) error {
	const rule = "names are 1-64 characters of a-z, A-Z, 0-9, _ and -"
	var msg string
	switch {
	case name == "":
		msg = fmt.Sprintf("%s is empty; %s", param, rule)
	case len(name) > MaxFunctionName:
		msg = fmt.Sprintf("%s is %d bytes long; %s", param, len(name), rule)
	default:
		i := badNameByte(name)
		if i < 0 {
			return nil
		}
		msg = fmt.Sprintf("%s %q has a character outside a-z, A-Z, 0-9, _ and - at byte %d; %s", param, name, i, rule)
	}
	return gwerr.New(gwerr.InvalidRequest, "%s", msg).WithParam(param).WithCode("invalid_function_name")
}
