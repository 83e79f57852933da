package contract_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"serverlab/contract"
	"serverlab/contract/contracttest"
	"serverlab/contract/vectors"
)

// benchCase is one route and input shape of servers/_shared/microbench-cases.json,
// the inputs every language's microbenchmark reads.
type benchCase struct {
	Name   string `json:"name"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Query  string `json:"query"`
	Status int    `json:"status"`
}

// routeCases returns the cases this library answers: GET on "/" and "/workday"
// (routing, 404, 405 and HEAD belong to each stack's own router).
func routeCases(tb testing.TB) []benchCase {
	tb.Helper()
	root, err := vectors.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "servers", "_shared", "microbench-cases.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var file struct {
		Cases []benchCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		tb.Fatal(err)
	}
	var found []benchCase
	for _, c := range file.Cases {
		if c.Method == "GET" && (c.Path == "/" || c.Path == "/workday") {
			found = append(found, c)
		}
	}
	return found
}

// route returns the Service method that answers path.
func route(svc *contract.Service, path string) func(string, time.Time) (int, []byte) {
	if path == "/workday" {
		return svc.Workday
	}
	return svc.Root
}

// BenchmarkContract times one request per route and input shape, the clock
// read included (a stack reads it per request for hello and workday-now):
//
//	go test -run '^$' -bench Contract -benchmem
func BenchmarkContract(b *testing.B) {
	svc := contracttest.Service(b, "Go net/http")
	for _, c := range routeCases(b) {
		answer := route(svc, c.Path)
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
