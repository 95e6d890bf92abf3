package gwerr

// Codes of the moderation stage's refusals. Each ingress renders them in
// its own error shape (the category decides the status).
const (
	// CodeContentPolicyViolation: a moderation layer found the request (or
	// the answer) in violation of its policy (category ContentPolicy, 400).
	CodeContentPolicyViolation = "content_policy_violation"
	// CodeModerationUnavailable: a moderation layer failed, timed out or
	// answered something that is not a verdict, under a fail_closed policy
	// (category Unavailable, 502). Nothing was generated.
	CodeModerationUnavailable = "moderation_unavailable"
)
