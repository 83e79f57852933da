package contract_test

import (
	"testing"
	"time"

	"serverlab/contract/contracttest"
	"serverlab/contract/vectors"
)

// BenchmarkContract times one request per route and input shape, the clock
// read included (a stack reads it per request for hello and workday-now):
//
//	go test -run '^$' -bench Contract -benchmem
func BenchmarkContract(b *testing.B) {
	svc := contracttest.Service(b, "Go net/http")
	cases, err := vectors.RouteBenchCases()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cases {
		answer := contracttest.Answerer(svc, c.Path)
		if status, _ := answer(c.Query, time.Now()); status != c.Status {
			b.Fatalf("%s: status %d, expected %d", c.Name, status, c.Status)
		}
		b.Run(c.Name, func(b *testing.B) {
			query := c.Query
			for b.Loop() {
				answer(query, time.Now())
			}
		})
	}
}
