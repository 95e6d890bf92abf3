package chatwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// CheckObject runs the checks every OpenAI-shaped request body gets before
// it is decoded, whatever its API: not empty, valid UTF-8, nested at most
// depthLimit levels (0 means 64), valid JSON, no object at any depth with
// duplicate or case-variant keys (jsonb.CheckKeys: so that the gateway and
// the upstream never disagree on the model or on a text), and a top-level
// object without the fields that try to choose an upstream address or
// credential. It returns the set of top-level keys. Every failure is an
// invalid_request *gwerr.Error.
func CheckObject(body []byte, depthLimit int) (map[string]bool, error) {
	keys, _, err := CheckDecode(body, depthLimit, nil)
	return keys, err
}

// CheckDecode is CheckObject that also decodes the body into v with
// encoding/json, in the pass that checks its syntax (json.Unmarshal
// validates the whole document before decoding: no separate json.Valid
// scan). A syntax error is CheckObject's; any other decoding error comes
// back as decodeErr, for the caller to report after its own checks of the
// keys (which take precedence), with err nil. A nil v only checks.
func CheckDecode(body []byte, depthLimit int, v any) (keys map[string]bool, decodeErr, err error) {
	if depthLimit == 0 {
		depthLimit = 64
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, gwerr.New(gwerr.InvalidRequest, "request body is empty; expected a JSON object")
	}
	if !utf8.Valid(body) {
		return nil, nil, gwerr.New(gwerr.InvalidRequest, "request body is not valid UTF-8")
	}
	if d := maxDepth(body); d > depthLimit {
		return nil, nil, gwerr.New(gwerr.InvalidRequest, "request JSON is nested %d levels deep; the limit is %d", d, depthLimit)
	}
	if v == nil {
		if !json.Valid(body) {
			return nil, nil, gwerr.New(gwerr.InvalidRequest, "request body is not valid JSON")
		}
	} else {
		decodeErr = json.Unmarshal(body, v)
		if decodeErr != nil {
			if syntax := (*json.SyntaxError)(nil); errors.As(decodeErr, &syntax) {
				return nil, nil, gwerr.New(gwerr.InvalidRequest, "request body is not valid JSON")
			}
		}
	}
	keys, err = topLevelKeys(body)
	if err != nil {
		return nil, nil, err
	}
	for k := range keys {
		if redirectFields[k] {
			return nil, nil, gwerr.New(gwerr.InvalidRequest, "field %q is not accepted: the gateway chooses upstream addresses and credentials from its own config", k).WithParam(k)
		}
	}
	if err := jsonb.CheckKeys(body); err != nil {
		return nil, nil, err
	}
	return keys, decodeErr, nil
}
