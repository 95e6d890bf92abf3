package chatwire

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// The errors Parse answers with: a field of the wrong type or value, and a
// decoding error turned into an invalid_request naming the field.

type fieldErr struct{ field, want string }

func (e *fieldErr) Error() string { return e.field + " must be " + e.want }

func fieldTypeError(field, want string) error  { return &fieldErr{field, want} }
func fieldValueError(field, want string) error { return &fieldErr{field, want} }

// decodeError turns a json decoding error into an invalid_request naming the field.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		return gwerr.New(gwerr.InvalidRequest, "field %s has the wrong type: got JSON %s, want %s", field, te.Value, jsonKind(te.Type.String())).WithParam(field)
	}
	var fe *fieldErr
	if errors.As(err, &fe) {
		return gwerr.New(gwerr.InvalidRequest, "%s", fe.Error()).WithParam(fe.field)
	}
	return gwerr.New(gwerr.InvalidRequest, "request body could not be decoded: %s", gwerr.Redact(err.Error()))
}

func jsonKind(goType string) string {
	switch {
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}
