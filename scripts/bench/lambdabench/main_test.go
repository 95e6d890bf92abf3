package main

import (
	"testing"
	"time"
)

func TestItemKinds(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"TableName":"t","Item":{"pk":{"S":"usage#team#2026-12-01"},"sk":{"S":"x"}}}`, "usage"},
		{`{"TableName":"t","Key":{"pk":{"S":"breaker#mock/m"},"sk":{"S":"state"}}}`, "breaker"},
		{`{"TransactItems":[{"Put":{"Item":{"pk":{"S":"budget#a"}}}},{"Update":{"Key":{"pk":{"S":"usage#a"}}}}]}`, "budget+usage"},
		{`{"KeyConditionExpression":"pk = :pk","ExpressionAttributeValues":{":pk":{"S":"retry#mock"},":n":{"N":"1"}}}`, "retry"},
		{`{"TableName":"t"}`, "(no key)"},
		{`not json`, "?"},
	} {
		if got := itemKinds([]byte(tc.body)); got != tc.want {
			t.Errorf("itemKinds(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestDistOfNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	got := distOf(d)
	if got.N != 100 || got.P50 != 50000 || got.P99 != 99000 || got.Min != 1000 || got.Max != 100000 || got.Mean != 50500 {
		t.Errorf("distOf = %+v", got)
	}
}
