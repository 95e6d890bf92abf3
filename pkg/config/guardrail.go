package config

import (
	"net/url"
	"regexp"
	"sync"
	"time"
)

// ModerationGuardrail is a Bedrock guardrail as a moderation layer: the
// text goes to Bedrock's ApplyGuardrail (source INPUT for the request,
// OUTPUT for the answer), and a GUARDRAIL_INTERVENED answer blocks it.
//
//	moderation:
//	  policies:
//	    aws-safety:
//	      mode: fail_closed
//	      guardrail: {id: abc123def456, version: "3", region: us-east-1, timeout: 2s}
//	      output: true
//	      output_window: 900
type ModerationGuardrail struct {
	// ID is the guardrail's identifier: its id (e.g. abc123def456) or
	// its ARN.
	ID string `json:"id"`
	// Version is the guardrail version: a number, or DRAFT.
	Version string `json:"version"`
	// Region is the guardrail's region (default: the AWS config's,
	// AWS_REGION).
	Region string `json:"region,omitempty"`
	// Endpoint overrides the Bedrock Runtime endpoint (a VPC endpoint, a
	// test server); default: the SDK's for the region
	// (AWS_ENDPOINT_URL_BEDROCK_RUNTIME is honoured too).
	Endpoint string `json:"endpoint,omitempty"`
	// Timeout bounds one ApplyGuardrail call (default 2s).
	Timeout Duration `json:"timeout,omitempty"`
}

// GuardrailPrices are the prices of Bedrock guardrail text units, in USD
// per 1,000 text units, per guardrail policy (the usage ApplyGuardrail
// reports). A text unit is up to 1,000 characters. Unset prices take the
// defaults (Bedrock's list prices): content 0.15, topic 0.15, word 0,
// sensitive_information 0.10, contextual_grounding 0.10,
// automated_reasoning 0.17.
type GuardrailPrices struct {
	// Content is the content filters' price (contentPolicyUnits).
	Content *float64 `json:"content,omitempty"`
	// Topic is the denied topics' price (topicPolicyUnits).
	Topic *float64 `json:"topic,omitempty"`
	// Word is the word filters' price (wordPolicyUnits).
	Word *float64 `json:"word,omitempty"`
	// SensitiveInformation is the sensitive information filters' price
	// (sensitiveInformationPolicyUnits; the free units of regex filters
	// are never charged).
	SensitiveInformation *float64 `json:"sensitive_information,omitempty"`
	// ContextualGrounding is the contextual grounding checks' price
	// (contextualGroundingPolicyUnits).
	ContextualGrounding *float64 `json:"contextual_grounding,omitempty"`
	// AutomatedReasoning is the automated reasoning checks' price
	// (automatedReasoningPolicyUnits).
	AutomatedReasoning *float64 `json:"automated_reasoning,omitempty"`
}

// Default guardrail prices, USD per 1,000 text units.
const (
	DefaultGuardrailContentPrice              = 0.15
	DefaultGuardrailTopicPrice                = 0.15
	DefaultGuardrailWordPrice                 = 0.0
	DefaultGuardrailSensitiveInformationPrice = 0.10
	DefaultGuardrailContextualGroundingPrice  = 0.10
	DefaultGuardrailAutomatedReasoningPrice   = 0.17
)

// GuardrailUnitPrices are the prices in force, defaults applied (USD per
// 1,000 text units).
type GuardrailUnitPrices struct {
	Content, Topic, Word, SensitiveInformation, ContextualGrounding, AutomatedReasoning float64
}

// Prices returns the prices in force: each set price, else its default.
func (p GuardrailPrices) Prices() GuardrailUnitPrices {
	or := func(v *float64, d float64) float64 {
		if v != nil {
			return *v
		}
		return d
	}
	return GuardrailUnitPrices{
		Content:              or(p.Content, DefaultGuardrailContentPrice),
		Topic:                or(p.Topic, DefaultGuardrailTopicPrice),
		Word:                 or(p.Word, DefaultGuardrailWordPrice),
		SensitiveInformation: or(p.SensitiveInformation, DefaultGuardrailSensitiveInformationPrice),
		ContextualGrounding:  or(p.ContextualGrounding, DefaultGuardrailContextualGroundingPrice),
		AutomatedReasoning:   or(p.AutomatedReasoning, DefaultGuardrailAutomatedReasoningPrice),
	}
}

// Guardrail defaults and bounds.
const (
	DefaultGuardrailTimeout = 2 * time.Second
	// DefaultGuardrailWindow is a guardrail policy's default
	// output_window: 900 characters, so that a window and the 100
	// characters of overlap before it are one text unit.
	DefaultGuardrailWindow = 900
	// ModerationWindowOverlap is how many characters before a window are
	// checked with it, so that a phrase cut by a window boundary is seen.
	ModerationWindowOverlap = 100
	maxModerationWindow     = 1 << 20
)

var (
	guardrailID = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(([a-z0-9]+)|(arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail/[a-z0-9]+))$`)
	})
	guardrailVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(([1-9][0-9]{0,7})|(DRAFT))$`) })
	awsRegion        = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`) })
)

// prepareGuardrail defaults and validates a policy's guardrail layer.
func prepareGuardrail(at Path, g *ModerationGuardrail) error {
	if !guardrailID().MatchString(g.ID) || len(g.ID) > 2048 {
		return errAt(at.Key("id"), "%s is not a guardrail id (lowercase letters and digits, e.g. abc123def456) or guardrail ARN", show(g.ID))
	}
	if !guardrailVersion().MatchString(g.Version) {
		return errAt(at.Key("version"), "%s is not a guardrail version: a number (quote it in YAML: \"1\") or DRAFT", show(g.Version))
	}
	if g.Region != "" && !awsRegion().MatchString(g.Region) {
		return errAt(at.Key("region"), "%s is not an AWS region", show(g.Region))
	}
	if g.Endpoint != "" {
		u, err := url.Parse(g.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errAt(at.Key("endpoint"), "%s is not an http(s) URL", show(g.Endpoint))
		}
	}
	if g.Timeout == 0 {
		g.Timeout = Duration(DefaultGuardrailTimeout)
	}
	return checkModerationTimeout(at.Key("timeout"), g.Timeout)
}

// GuardrailIDs returns the identifiers (ids or ARNs) of the distinct
// guardrails the policies name, in policy name order.
func (c *Config) GuardrailIDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range sortedKeys(c.Moderation.Policies) {
		if p := c.Moderation.Policies[n]; p != nil && p.Guardrail != nil && !seen[p.Guardrail.ID] {
			seen[p.Guardrail.ID] = true
			out = append(out, p.Guardrail.ID)
		}
	}
	return out
}
