package gwstack

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/constructs-go/constructs/v10"
)

// ctxReader converts context values, which are strings when given with -c
// and JSON values when given in cdk.json, and collects errors.
type ctxReader struct {
	node constructs.Node
	errs []string
}

func (c *ctxReader) fail(key, value, want string) {
	c.errs = append(c.errs, fmt.Sprintf("%s=%q: want %s", key, value, want))
}

// raw returns the context value as a string, if present.
func (c *ctxReader) raw(key string) (string, bool) {
	v := c.node.TryGetContext(&key)
	switch t := v.(type) {
	case nil:
		return "", false
	case string:
		return strings.TrimSpace(t), true
	case float64:
		if t == math.Trunc(t) {
			return strconv.FormatInt(int64(t), 10), true
		}
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(t), true
	case []interface{}:
		parts := make([]string, 0, len(t))
		for _, e := range t {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, ","), true
	default:
		return fmt.Sprint(t), true
	}
}

func (c *ctxReader) str(key string, dst *string) {
	if v, ok := c.raw(key); ok && v != "" {
		*dst = v
	}
}

func (c *ctxReader) integer(key string, dst *int) {
	if v, ok := c.raw(key); ok && v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			c.fail(key, v, "an integer")
			return
		}
		*dst = n
	}
}

func (c *ctxReader) float(key string, dst *float64) {
	if v, ok := c.raw(key); ok && v != "" {
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil {
			c.fail(key, v, "a number")
			return
		}
		*dst = f
	}
}

// duration accepts Go durations ("15m", "900s") or a bare number of seconds.
func (c *ctxReader) duration(key string, dst *time.Duration) {
	v, ok := c.raw(key)
	if !ok || v == "" {
		return
	}
	if n, err := strconv.Atoi(v); err == nil {
		*dst = time.Duration(n) * time.Second
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		c.fail(key, v, "a duration such as 15m or a number of seconds")
		return
	}
	*dst = d
}

// list accepts a JSON array (cdk.json) or a comma-separated string (-c).
func (c *ctxReader) list(key string, dst *[]string) {
	v, ok := c.raw(key)
	if !ok {
		return
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	*dst = out
}
