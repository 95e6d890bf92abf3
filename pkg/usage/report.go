package usage

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// ReadRollups calls fn, in day order, with each stored rollup of team for
// the days from..to (both included). It stops early when fn returns false.
func ReadRollups(ctx context.Context, q store.Querier, team string, from, to time.Time, fn func(Rollup) bool) error {
	var decodeErr error
	err := q.Query(ctx, store.RollupPK(team), store.RollupSK(from), store.RollupSK(dayStart(to).AddDate(0, 0, 1)),
		func(it store.Item) bool {
			ru, err := DecodeRollup(it)
			if err != nil {
				decodeErr = err
				return false
			}
			return fn(ru)
		})
	if err == nil {
		err = decodeErr
	}
	return err
}

// DayTotals are one day's totals of a team.
type DayTotals struct {
	Day string `json:"day"`
	Totals
}

// TeamReport is one team's usage over a date range.
type TeamReport struct {
	Team string `json:"team"`
	Totals
	Outcomes map[string]int64   `json:"outcomes,omitempty"`
	Routes   map[string]*Totals `json:"routes,omitempty"`
	Tags     map[string]*Totals `json:"tags,omitempty"`
	// Days lists the days with usage, in order.
	Days []DayTotals `json:"days"`
	// ComputedAt is when the newest of its rollups was computed: usage
	// after it is not counted yet.
	ComputedAt time.Time `json:"computed_at,omitzero"`
}

// Report is usage per team over a date range, from the rollups: the body
// of GET /v1/usage and the source of the cost table.
type Report struct {
	Object string `json:"object"` // "usage.report"
	From   string `json:"from"`   // yyyy-mm-dd, UTC
	To     string `json:"to"`     // yyyy-mm-dd, UTC, included
	// Teams are sorted by cost, highest first (then by name).
	Teams []TeamReport `json:"teams"`
	// Total sums the teams.
	Total Totals `json:"total"`
}

// BuildReport reads the rollups of teams for the days from..to. Teams
// without usage in the range are left out unless keepEmpty is set.
func BuildReport(ctx context.Context, q store.Querier, teams []string, from, to time.Time, keepEmpty bool) (*Report, error) {
	rep := &Report{Object: "usage.report", From: store.Day(from), To: store.Day(to), Teams: []TeamReport{}}
	for _, team := range teams {
		tr := TeamReport{Team: team, Days: []DayTotals{}}
		err := ReadRollups(ctx, q, team, from, to, func(ru Rollup) bool {
			tr.Totals.Merge(ru.Totals)
			tr.Days = append(tr.Days, DayTotals{Day: ru.Day, Totals: ru.Totals})
			tr.Outcomes = mergeCounts(tr.Outcomes, ru.Outcomes)
			tr.Routes = mergeTotals(tr.Routes, ru.Routes)
			tr.Tags = mergeTotals(tr.Tags, ru.Tags)
			if ru.ComputedAt.After(tr.ComputedAt) {
				tr.ComputedAt = ru.ComputedAt
			}
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("usage: read rollups of %s: %w", team, err)
		}
		if tr.Requests == 0 && !keepEmpty {
			continue
		}
		rep.Total.Merge(tr.Totals)
		rep.Teams = append(rep.Teams, tr)
	}
	sort.SliceStable(rep.Teams, func(i, j int) bool {
		a, b := rep.Teams[i], rep.Teams[j]
		if a.CostNanoUSD != b.CostNanoUSD {
			return a.CostNanoUSD > b.CostNanoUSD
		}
		return a.Team < b.Team
	})
	return rep, nil
}

func mergeCounts(dst, src map[string]int64) map[string]int64 {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]int64{}
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

func mergeTotals(dst, src map[string]*Totals) map[string]*Totals {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]*Totals{}
	}
	for k, v := range src {
		if v == nil {
			continue
		}
		t := dst[k]
		if t == nil {
			t = &Totals{}
			dst[k] = t
		}
		t.Merge(*v)
	}
	return dst
}

// WriteTable prints the report for humans: one row per team, highest cost
// first, and a total; then the response cache's hits and the spend they
// saved, and the prompt cache's writes and what its reads and writes cost
// (CACHED TOKENS are its reads). With detail set, each team's routes and tags follow
// it, also by cost.
func (rep *Report) WriteTable(w io.Writer, detail bool) error {
	fmt.Fprintf(w, "Usage and cost per team, %s to %s (UTC days, from the rollups)\n\n", rep.From, rep.To)
	// Names are padded here so they read left-aligned; numbers align right.
	width := len("TOTAL")
	for _, tr := range rep.Teams {
		width = max(width, len(tr.Team))
		if detail {
			for name := range tr.Routes {
				width = max(width, len("  route ")+len(name))
			}
			for name := range tr.Tags {
				width = max(width, len("  tag ")+len(name))
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tREQUESTS\tERRORS\tFALLBACKS\tINPUT TOKENS\tOUTPUT TOKENS\tCACHED TOKENS\tCOST USD\tSHARE\tCACHE HITS\tSAVED USD\tCACHE WRITE TOKENS\tCACHE READ USD\tCACHE WRITE USD\t\n", width, "TEAM")
	row := func(name string, t Totals) {
		name = fmt.Sprintf("%-*s", width, name)
		share := "-"
		if rep.Total.CostNanoUSD > 0 {
			share = strconv.FormatFloat(100*float64(t.CostNanoUSD)/float64(rep.Total.CostNanoUSD), 'f', 1, 64) + "%"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, group(t.Requests), group(t.Errors), group(t.Fallbacks),
			group(t.InputTokens), group(t.OutputTokens), group(t.CachedTokens), money(t.CostNanoUSD), share,
			group(t.CacheHits), money(t.SavedNanoUSD), group(t.CacheWriteTokens), money(t.CacheReadNanoUSD), money(t.CacheWriteNanoUSD))
	}
	for _, tr := range rep.Teams {
		row(tr.Team, tr.Totals)
		if detail {
			for _, name := range byCost(tr.Routes) {
				row("  route "+name, *tr.Routes[name])
			}
			for _, name := range byCost(tr.Tags) {
				row("  tag "+name, *tr.Tags[name])
			}
		}
	}
	row("TOTAL", rep.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Teams) == 0 {
		_, err := fmt.Fprintln(w, "\n(no usage in this range: has the rollup run? use -refresh)")
		return err
	}
	return nil
}

// byCost returns a breakdown's names, highest cost first.
func byCost(m map[string]*Totals) []string {
	names := sortedNames(m)
	sort.SliceStable(names, func(i, j int) bool { return m[names[i]].CostNanoUSD > m[names[j]].CostNanoUSD })
	return names
}

// money formats nano-dollars as dollars with 4 decimals (rounded).
func money(nano int64) string {
	neg := nano < 0
	if neg {
		nano = -nano
	}
	tenths := (nano + 50_000) / 100_000 // units of $0.0001
	s := group(tenths/10_000) + "." + fmt.Sprintf("%04d", tenths%10_000)
	if neg {
		s = "-" + s
	}
	return s
}

// group formats n with thousands separators.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
