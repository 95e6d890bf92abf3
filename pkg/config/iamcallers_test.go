package config

import (
	"strings"
	"testing"
)

// iam_callers rules map principals (ARN patterns, a role's sessions by the
// role's ARN), accounts and organizations to teams, first match first.
func TestIAMTeam(t *testing.T) {
	c, err := Parse([]byte(servingBase + `
teams: {search: {}, partners: {}, ci: {}, alice: {}}
iam_callers:
  - {principal: "arn:aws:iam::123456789012:role/search-*", team: search}
  - {principal: "arn:aws:iam::123456789012:user/alice", team: alice}
  - {org_id: o-a1b2c3d4e5, principal: "arn:aws:iam::*:role/ci-runner", team: ci}
  - {account: "210987654321", team: partners}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c2 := range []struct{ arn, account, org, team string }{
		{"arn:aws:sts::123456789012:assumed-role/search-indexer/i-0abc", "123456789012", "", "search"},
		{"arn:aws:iam::123456789012:role/search-api", "123456789012", "", "search"},
		{"arn:aws:iam::123456789012:user/alice", "123456789012", "", "alice"},
		{"arn:aws:iam::123456789012:user/alice2", "123456789012", "", ""},
		{"arn:aws:sts::123456789012:assumed-role/other/s", "123456789012", "", ""},
		{"arn:aws:sts::555555555555:assumed-role/ci-runner/build-7", "555555555555", "o-a1b2c3d4e5", "ci"},
		{"arn:aws:sts::555555555555:assumed-role/ci-runner/build-7", "555555555555", "o-zzzzzzzzzz", ""},
		{"arn:aws:sts::210987654321:assumed-role/anything/x", "210987654321", "", "partners"},
		{"arn:aws:sts::999999999999:assumed-role/search-indexer/x", "999999999999", "", ""},
	} {
		team, _, ok := c.IAMTeam(c2.arn, c2.account, c2.org)
		if team != c2.team || ok != (c2.team != "") {
			t.Errorf("%s %s %s: team %q %v, want %q", c2.arn, c2.account, c2.org, team, ok, c2.team)
		}
	}
}

func TestIAMCallersErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"iam_callers: [{team: t}]\n", "iam_callers[0]: a rule needs a principal, an account or an org_id"},
		{"iam_callers: [{principal: role/x, team: t}]\n", `iam_callers[0].principal: "role/x" is not an ARN pattern`},
		{"iam_callers: [{account: \"12\", team: t}]\n", `iam_callers[0].account: "12" is not a 12-digit AWS account id`},
		{"iam_callers: [{org_id: org1, team: t}]\n", `iam_callers[0].org_id: "org1" is not an AWS Organizations id`},
		{"iam_callers: [{account: \"123456789012\", team: tt}]\n", `iam_callers[0].team: unknown team "tt"`},
	} {
		_, err := Parse([]byte(servingBase + "teams: {t: {}}\n" + c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.in, err, c.want)
		}
	}
}
