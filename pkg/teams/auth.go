// Package teams identifies callers by team API key and enforces each
// team's limits and budgets before any provider spend.
//
// # Keys
//
// A team key is "llmgw_" followed by 32 random bytes in base64url ([NewKey],
// the scripts/newkey command). The config holds only its SHA-256 in hex.
// Clients send the key as `Authorization: Bearer <key>`, which is what the
// OpenAI SDKs send for api_key (and Claude Code for ANTHROPIC_AUTH_TOKEN),
// or as `x-api-key: <key>`, which is what the Anthropic SDKs send for
// api_key (Claude Code for ANTHROPIC_API_KEY). The [Authenticator] hashes what it is sent,
// looks the hash up in a map built from the config in force, and compares
// the stored hash with crypto/subtle, so response timing says nothing about
// how much of a guess was right. A missing, unknown or revoked key and a
// disabled team all get the same 401 (same message, same body). The raw key
// is never logged, stored or put in an error.
//
// # Limits
//
// The [Limiter] is the server's Admit hook. It enforces, per team and per
// (team, tag): requests and tokens per minute, cost per hour and per day
// (fixed UTC windows), and plan ceilings on input and output tokens; see
// [Limiter.Admit] for the estimator and the reservation protocol.
//
// # Hot keys
//
// Every counter of a team (all windows, all tags) lives in one partition,
// store.BudgetPK(team), and one DynamoDB partition takes at most 1,000
// write units per second (an item under 1 KB costs one). Counters are
// leased (lease.go): an instance writes an item once per lease it takes,
// not once per request. A lease of s reservations doubles from 1 up to
// min(limit x usage.lease.share, usage.lease.max_requests) reservations,
// and grows by the excess when the item's version shows the fleet writing
// it more than 100 times a second. At R requests per second an item takes
// about R/s writes per second: at 1,000 req/s and s = 64, 16 per item and
// about 100 for the partition of a team with all six counters (four team
// limits, two tag limits), where reserving and settling every request
// took 12,000. What a lease costs is stranding: each instance may hold one
// lease unused until it is given back, so with n instances up to n x s
// reservations of a window can sit idle (admitted per window: at most the
// limit; at least the limit less the leases outstanding when it closes).
// BenchmarkHotTeam measures it against dynalite.
package teams

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/iamcaller"
	"github.com/llmgw/llmgw/pkg/teamkey"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// KeyPrefix starts every team key, so leaked keys are easy to recognise
// (secret scanners) and to tell from provider keys (teamkey.Prefix).
const KeyPrefix = teamkey.Prefix

// maxKeyLen bounds the Authorization value considered; longer is refused.
const maxKeyLen = 512

// NewKey returns a new team key and the hex SHA-256 to put in the config
// (teamkey.New).
func NewKey() (key, sha256Hex string, err error) { return teamkey.New() }

// HashKey returns the lowercase hex SHA-256 of a key, as the config holds it
// (teamkey.Hash).
func HashKey(key string) string { return teamkey.Hash(key) }

// errUnauthenticated is the one answer to every authentication failure.
func errUnauthenticated() *gwerr.Error {
	return gwerr.New(gwerr.Authentication,
		"missing, invalid or revoked API key; send a team key as Authorization: Bearer <key> or x-api-key: <key>").WithCode("invalid_api_key")
}

// Authenticator identifies callers by team key against the config in
// force, read on every request, so revoking a key or disabling a team takes
// effect with the next config load, without a deploy. Create it with
// NewAuthenticator; use its Authenticate method as server.Options.Authenticate.
type Authenticator struct {
	config func() *config.Config
	log    *slog.Logger
	// AnonymousWithoutTeams lets every request through as an anonymous
	// caller while the config has no teams at all (local mode, which
	// serves on loopback only in that case). Never set it on Lambda.
	AnonymousWithoutTeams bool
	// BoundHosts are the host names or IPs (no port) of the address the
	// gateway listens on, accepted as the Host of a keyless request besides
	// localhost, 127.0.0.1 and [::1]; every other Host is refused (DNS
	// rebinding).
	BoundHosts []string

	index atomic.Pointer[keyIndex]
}

// keyIndex maps key hashes to keys for one config.
type keyIndex struct {
	cfg    *config.Config
	byHash map[[teamkey.Size]byte]keyEntry
}

type keyEntry struct {
	team    string
	id      string
	sum     [teamkey.Size]byte
	revoked bool
}

// NewAuthenticator returns an Authenticator reading the config in force
// from cfg on every request. log receives refusals, with the reason, team
// and key id when known, never the key (nil: slog.Default()).
func NewAuthenticator(cfg func() *config.Config, log *slog.Logger) *Authenticator {
	if log == nil {
		log = slog.Default()
	}
	return &Authenticator{config: cfg, log: log}
}

// indexFor returns the key index of cfg, rebuilding it when the config
// changed (a pointer compare per request; a rebuild per config load).
func (a *Authenticator) indexFor(cfg *config.Config) *keyIndex {
	if ix := a.index.Load(); ix != nil && ix.cfg == cfg {
		return ix
	}
	ix := &keyIndex{cfg: cfg, byHash: map[[teamkey.Size]byte]keyEntry{}}
	for _, name := range cfg.TeamNames() {
		for _, k := range cfg.Teams[name].Keys {
			if sum, err := teamkey.ParseHash(k.SHA256); err == nil {
				ix.byHash[sum] = keyEntry{team: name, id: k.ID, sum: sum, revoked: k.Revoked}
			}
		}
	}
	a.index.Store(ix)
	return ix
}

// Authenticate identifies the caller of r by the key in its Authorization
// (Bearer) header, else its x-api-key header; its signature is
// server.Authenticator. Every refusal is the same *gwerr.Error
// (authentication, 401), except a keyless request (no teams configured)
// whose Host is not local (permission, 403: localHost).
func (a *Authenticator) Authenticate(r *http.Request) (*exchange.Caller, error) {
	cfg := a.config()
	if id, ok := iamcaller.FromContext(r.Context()); ok {
		return a.iamCaller(r, cfg, id)
	}
	if len(cfg.Teams) == 0 && a.AnonymousWithoutTeams {
		if err := a.anonymous(r); err != nil {
			return nil, err
		}
		return &exchange.Caller{}, nil
	}
	key, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		key, ok = plainKey(r.Header.Get("x-api-key"))
	}
	if !ok {
		return a.refuse(r, "missing", "", "")
	}
	sum := teamkey.Sum(key)
	e, found := a.indexFor(cfg).byHash[sum]
	// The lookup is by hash; confirm in constant time anyway, so no code
	// path compares key material byte by byte.
	if !found || !teamkey.Equal(e.sum, sum) {
		return a.refuse(r, "unknown key", "", "")
	}
	t := cfg.Teams[e.team]
	switch {
	case e.revoked:
		return a.refuse(r, "revoked key", e.team, e.id)
	case t == nil || t.Disabled:
		return a.refuse(r, "disabled team", e.team, e.id)
	}
	return &exchange.Caller{Team: e.team, KeyID: e.id, Admin: t.Admin, Routes: slices.Clone(t.Routes)}, nil
}

// iamCaller identifies a caller Lambda verified (Function URL auth type
// AWS_IAM, iamcaller.FromContext) by the config's iam_callers: the first
// matching rule's team, recorded with key id "iam:<rule index>". An
// unmapped principal is refused with 403 (permission); a disabled team
// with the usual 401. Keys are not read: the signature is the credential.
func (a *Authenticator) iamCaller(r *http.Request, cfg *config.Config, id iamcaller.Identity) (*exchange.Caller, error) {
	team, rule, ok := cfg.IAMTeam(id.UserARN, id.AccountID, id.PrincipalOrgID)
	if !ok {
		a.log.LogAttrs(r.Context(), slog.LevelInfo, "authentication refused", slog.String("reason", "unmapped IAM principal"),
			slog.String("principal", fmt.Sprintf("%.256s", id.UserARN)), slog.String("account", fmt.Sprintf("%.16s", id.AccountID)),
			slog.String("org_id", fmt.Sprintf("%.40s", id.PrincipalOrgID)), slog.String("path", r.URL.Path))
		return nil, gwerr.New(gwerr.Permission, "the IAM principal %.256s is not mapped to a team; add it to iam_callers in the gateway config",
			id.UserARN).WithCode("iam_principal_not_mapped")
	}
	keyID := "iam:" + strconv.Itoa(rule)
	t := cfg.Teams[team]
	if t == nil || t.Disabled {
		return a.refuse(r, "disabled team", team, keyID)
	}
	return &exchange.Caller{Team: team, KeyID: keyID, Admin: t.Admin, Routes: slices.Clone(t.Routes)}, nil
}

func (a *Authenticator) refuse(r *http.Request, reason, team, keyID string) (*exchange.Caller, error) {
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "authentication refused", slog.String("reason", reason),
		slog.String("team", team), slog.String("key_id", keyID), slog.String("path", jsonb.Truncate(r.URL.Path, 200)),
		slog.String("remote", r.RemoteAddr))
	return nil, errUnauthenticated()
}

// bearer extracts the token of an "Authorization: Bearer <token>" value.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || len(tok) > maxKeyLen {
		return "", false
	}
	return tok, true
}

// plainKey reads an "x-api-key: <key>" value.
func plainKey(h string) (string, bool) {
	k := strings.TrimSpace(h)
	if k == "" || len(k) > maxKeyLen {
		return "", false
	}
	return k, true
}

// UsageViewer tells usage.NewHandler who is asking (HandlerOptions.Viewer)
// from the caller the server's Authenticator put in the request context. A
// caller without a team (no Authenticator: local mode) views the
// "anonymous" team only.
func UsageViewer(r *http.Request) (usage.Viewer, bool) {
	c := exchange.CallerFrom(r.Context())
	if c == nil {
		return usage.Viewer{}, false
	}
	if c.Team == "" {
		return usage.Viewer{Team: config.AnonymousTeam}, true
	}
	return usage.Viewer{Team: c.Team, Admin: c.Admin}, true
}

// UsageViewer is like the package's UsageViewer, but when the request did
// not pass through the server's authentication (the usage handler mounted
// on its own), it authenticates the request's key itself.
func (a *Authenticator) UsageViewer(r *http.Request) (usage.Viewer, bool) {
	if v, ok := UsageViewer(r); ok {
		return v, true
	}
	c, err := a.Authenticate(r)
	if err != nil {
		return usage.Viewer{}, false
	}
	if c.Team == "" {
		return usage.Viewer{Team: config.AnonymousTeam}, true
	}
	return usage.Viewer{Team: c.Team, Admin: c.Admin}, true
}
