package config

import (
	"regexp"
	"strings"
	"sync"
)

// IAMCaller maps AWS callers to a team when the Function URL's auth type
// is AWS_IAM (Lambda has verified the SigV4 signature and put the caller
// in the request context):
//
//	iam_callers:
//	  - {principal: "arn:aws:iam::123456789012:role/search-*", team: search}
//	  - {account: "210987654321", team: partners}
//	  - {org_id: o-a1b2c3d4e5, principal: "arn:aws:iam::*:role/ci-runner", team: ci}
//
// A rule matches when every field it sets matches; the first matching rule
// (in order) decides. An unmapped caller is refused (403).
type IAMCaller struct {
	// Principal is an ARN pattern; "*" matches any run of characters
	// (slashes included). A role's callers are matched by the role's ARN
	// (arn:aws:iam::<account>:role/<name>, without its path) as well as by
	// their session ARN (arn:aws:sts::<account>:assumed-role/<name>/<session>).
	Principal string `json:"principal,omitempty"`
	// Account is the caller's 12-digit AWS account id.
	Account string `json:"account,omitempty"`
	// OrgID is the caller's AWS Organizations id (principalOrgId).
	OrgID string `json:"org_id,omitempty"`
	// Team is the configured team the caller is served as.
	Team string `json:"team"`
}

var (
	accountID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{12}$`) })
	orgID     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^o-[a-z0-9]{10,32}$`) })
)

// prepareIAMCallers validates the iam_callers rules.
func (c *Config) prepareIAMCallers() error {
	for i := range c.IAMCallers {
		r, at := &c.IAMCallers[i], pathOf("iam_callers").Index(i)
		if r.Principal == "" && r.Account == "" && r.OrgID == "" {
			return errAt(at, "a rule needs a principal, an account or an org_id")
		}
		if r.Principal != "" && (!strings.HasPrefix(r.Principal, "arn:") || len(r.Principal) > 2048) {
			return errAt(at.Key("principal"), "%s is not an ARN pattern (arn:aws:iam::<account>:role/<name>, * for any characters)", show(r.Principal))
		}
		if r.Account != "" && !accountID().MatchString(r.Account) {
			return errAt(at.Key("account"), "%s is not a 12-digit AWS account id (quote it in YAML)", show(r.Account))
		}
		if r.OrgID != "" && !orgID().MatchString(r.OrgID) {
			return errAt(at.Key("org_id"), "%s is not an AWS Organizations id (o-...)", show(r.OrgID))
		}
		if _, ok := c.Teams[r.Team]; !ok {
			return errAt(at.Key("team"), "unknown team %s%s", show(r.Team), didYouMean(r.Team, c.TeamNames()))
		}
	}
	return nil
}

// IAMTeam returns the team of a verified AWS caller (principal ARN,
// account id, organization id; see IAMCaller) and the index of the rule
// that matched; ok is false when no rule matches.
func (c *Config) IAMTeam(principal, account, org string) (team string, rule int, ok bool) {
	arns := []string{principal}
	if role := roleARN(principal); role != "" {
		arns = append(arns, role)
	}
	for i, r := range c.IAMCallers {
		if r.Account != "" && r.Account != account || r.OrgID != "" && r.OrgID != org {
			continue
		}
		if r.Principal != "" && !anyGlob(r.Principal, arns) {
			continue
		}
		return r.Team, i, true
	}
	return "", -1, false
}

// roleARN returns the role ARN of an assumed-role session ARN
// (arn:<partition>:sts::<account>:assumed-role/<role>/<session>), else "".
func roleARN(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[2] != "sts" {
		return ""
	}
	rest, ok := strings.CutPrefix(parts[5], "assumed-role/")
	role, _, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || role == "" {
		return ""
	}
	return "arn:" + parts[1] + ":iam::" + parts[4] + ":role/" + role
}

func anyGlob(pattern string, ss []string) bool {
	for _, s := range ss {
		if glob(pattern, s) {
			return true
		}
	}
	return false
}

// glob matches s against pattern, where "*" matches any run of characters
// and everything else matches itself.
func glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
