package config

import (
	"errors"
	"math/rand"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestExplainerAgreesWithDecoder mutates valid and invalid configs and
// checks, on every one, what FuzzParse checks: Parse fails with an *Error
// only, and the explainer finds nothing wrong in what is accepted (it is
// never stricter than the decoder, so it never blames the wrong field).
func TestExplainerAgreesWithDecoder(t *testing.T) {
	seeds := [][]byte{DemoYAML(), []byte(base)}
	for _, c := range errorCases {
		seeds = append(seeds, []byte(c.in))
	}
	pieces := []string{": ", "\n", "  ", "- ", "{", "}", "[", "]", ", ", "&a ", "*a", "<<: ", "1", "1.5", "-1s", "10s", "~", "\"", "'", "Kind", "kind: fake", "# c", "? "}
	r := rand.New(rand.NewSource(1))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		in := append([]byte(nil), seeds[r.Intn(len(seeds))]...)
		for m := 0; m < 1+r.Intn(3); m++ {
			at := r.Intn(len(in) + 1)
			switch r.Intn(3) {
			case 0: // delete a span
				end := min(len(in), at+r.Intn(8))
				in = append(in[:at], in[end:]...)
			default: // insert a piece
				p := pieces[r.Intn(len(pieces))]
				in = append(in[:at], append([]byte(p), in[at:]...)...)
			}
		}
		c, err := Parse(in)
		if err != nil {
			var e *Error
			if c != nil || !errors.As(err, &e) || e.Msg == "" {
				t.Fatalf("Parse(%q) = %v, %T %v", in, c != nil, err, err)
			}
			continue
		}
		var root yaml.Node
		if err := yaml.Unmarshal(in, &root); err != nil {
			t.Fatalf("accepted, but not a node tree: %v\n%s", err, in)
		}
		ck := checker{budget: 1 << 20}
		if err := ck.check(&root, reflect.TypeFor[Config](), nil); err != nil {
			t.Fatalf("the explainer rejects an accepted config: %v\n%s", err, in)
		}
	}
}
