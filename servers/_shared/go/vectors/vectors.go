// Package vectors loads the shared test data in contracts/ (the calendar,
// contracts/vectors/workday.json and contracts/vectors/inputs.json) for the
// Go unit tests, and the microbenchmark's inputs
// (servers/_shared/microbench-cases.json) for the benchmark and the
// instruction counter.
package vectors

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// WorkdayCase is one case of workday.json: GET /workday?at=At answers Expect.
type WorkdayCase struct {
	At     string `json:"at"`
	Expect string `json:"expect"`
	Kind   string `json:"kind"`
	Note   string `json:"note"`
}

// Input is one query string of inputs.json, as sent on the wire.
type Input struct {
	Raw    string `json:"raw"`
	KB     int    `json:"kb"`
	Expect string `json:"expect"`
	Note   string `json:"note"`
}

// Inputs is inputs.json.
type Inputs struct {
	N struct {
		Valid   []Input `json:"valid"`
		Hello   []Input `json:"hello"`
		Invalid []Input `json:"invalid"`
	} `json:"n"`
	At struct {
		Valid   []Input `json:"valid"`
		Invalid []Input `json:"invalid"`
	} `json:"at"`
}

// BenchCase is one route and input shape of servers/_shared/microbench-cases.json,
// the inputs every language's microbenchmark reads.
type BenchCase struct {
	Name   string `json:"name"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Query  string `json:"query"`
	Status int    `json:"status"`
}

// benchFile is servers/_shared/microbench-cases.json.
type benchFile struct {
	HeldAtMs int64       `json:"held_at_ms"`
	Cases    []BenchCase `json:"cases"`
}

func loadBenchFile() (*benchFile, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(root, "servers", "_shared", "microbench-cases.json"))
	if err != nil {
		return nil, err
	}
	var file benchFile
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, err
	}
	return &file, nil
}

// RouteBenchCases returns the microbenchmark cases this library answers: GET
// on "/" and "/workday" (routing, 404, 405 and HEAD belong to each stack's
// own router).
func RouteBenchCases() ([]BenchCase, error) {
	file, err := loadBenchFile()
	if err != nil {
		return nil, err
	}
	var found []BenchCase
	for _, c := range file.Cases {
		if c.Method == "GET" && (c.Path == "/" || c.Path == "/workday") {
			found = append(found, c)
		}
	}
	if len(found) == 0 {
		return nil, errors.New("microbench-cases.json has no GET case on / or /workday")
	}
	return found, nil
}

// HeldAt returns the instant of microbench-cases.json's held_at_ms, the one
// the instruction counter hands the library as the time of every request.
func HeldAt() (time.Time, error) {
	file, err := loadBenchFile()
	if err != nil {
		return time.Time{}, err
	}
	if file.HeldAtMs <= 0 {
		return time.Time{}, errors.New("microbench-cases.json has no held_at_ms")
	}
	return time.UnixMilli(file.HeldAtMs), nil
}

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory (a test's package directory) holding
// contracts/vectors/workday.json.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "contracts", "vectors", "workday.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("contracts/vectors/workday.json not found above the working directory")
		}
		dir = parent
	}
}

// CalendarPath returns the path of the shared calendar file.
func CalendarPath() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "contracts", "calendar", "xshg-non-trading-weekdays.txt"), nil
}

// Workday loads workday.json.
func Workday() ([]WorkdayCase, error) {
	var v struct {
		Cases []WorkdayCase `json:"cases"`
	}
	if err := load("workday.json", &v); err != nil {
		return nil, err
	}
	if len(v.Cases) == 0 {
		return nil, errors.New("workday.json has no cases")
	}
	return v.Cases, nil
}

// LoadInputs loads inputs.json.
func LoadInputs() (*Inputs, error) {
	var v Inputs
	if err := load("inputs.json", &v); err != nil {
		return nil, err
	}
	if len(v.N.Valid) == 0 || len(v.N.Invalid) == 0 || len(v.At.Valid) == 0 || len(v.At.Invalid) == 0 {
		return nil, errors.New("inputs.json lacks a section")
	}
	return &v, nil
}

func load(name string, v any) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(root, "contracts", "vectors", name))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
