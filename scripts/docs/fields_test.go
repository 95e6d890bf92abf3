package docs

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
)

// configFields returns the path of every field of the config's YAML/JSON
// shape ("routes.*.targets[].provider"), walking structs, maps, slices and
// pointers; embedded structs without a name add their fields to the parent.
func configFields(t reflect.Type, prefix string, seen map[reflect.Type]bool, out *[]string) {
	switch t.Kind() {
	case reflect.Pointer:
		configFields(t.Elem(), prefix, seen, out)
		return
	case reflect.Slice, reflect.Array:
		configFields(t.Elem(), prefix+"[]", seen, out)
		return
	case reflect.Map:
		configFields(t.Elem(), prefix+".*", seen, out)
		return
	case reflect.Struct:
	default:
		return
	}
	if seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			configFields(f.Type, prefix, seen, out)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := strings.TrimPrefix(prefix+"."+name, ".")
		*out = append(*out, p)
		configFields(f.Type, p, seen, out)
	}
}

// TestEveryConfigFieldIsDocumented: every field of config.Config is named
// in docs/configuration.md, as a YAML key (`name:`) or in code (`name`).
// The reverse, that the reference names no unknown field, holds because
// its YAML blocks load with the strict loader (TestDocBlocks).
func TestEveryConfigFieldIsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var fields []string
	configFields(reflect.TypeFor[config.Config](), "", map[reflect.Type]bool{}, &fields)
	if !slices.Contains(fields, "routes.*.targets[].provider") || !slices.Contains(fields, "routes.*.first_token_timeout") {
		t.Fatalf("the walk is broken: %v", fields)
	}
	for _, f := range fields {
		name := f[strings.LastIndexAny(f, ".]")+1:]
		if !strings.Contains(doc, name+":") && !strings.Contains(doc, "`"+name+"`") && !strings.Contains(doc, "{"+name+":") {
			t.Errorf("docs/configuration.md does not document %s", f)
		}
	}
}
