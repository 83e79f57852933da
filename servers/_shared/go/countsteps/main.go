// Command countsteps is the program scripts/count_instructions.py runs under
// valgrind's callgrind to count the instructions of one request per route and
// input shape (the GET cases of servers/_shared/microbench-cases.json, as
// BenchmarkContract times them): for each case it calls stepMarker before
// each of three steps (N requests of warm-up, no request, N requests) and
// prints the case's name. callgrind dumps its counters on entering
// stepMarker, so (N requests - none) / N is one request's instructions, the
// loop's set-up cancelled out.
//
// The clock is read on every request, as the stacks do, but the library is
// handed one instant, the same on every day: held_at_ms in
// microbench-cases.json, read once at start. The cost of formatting a time
// depends on its digits, so a live clock makes hello's count move with the
// hour it is taken at (0.60% between two days).
//
//	go run ./countsteps [-calls N] [case ...]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"serverlab/contract"
	"serverlab/contract/contracttest"
	"serverlab/contract/vectors"
)

// stepMarker is the function callgrind dumps before (--dump-before=main.stepMarker).
//
//go:noinline
func stepMarker() {}

func main() {
	calls := flag.Int("calls", 2000, "requests per case")
	flag.Parse()
	if err := run(*calls, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "countsteps:", err)
		os.Exit(1)
	}
}

func run(calls int, only []string) error {
	cases, err := vectors.RouteBenchCases()
	if err != nil {
		return err
	}
	heldAt, err := vectors.HeldAt()
	if err != nil {
		return err
	}
	path, err := vectors.CalendarPath()
	if err != nil {
		return err
	}
	cal, err := contract.LoadCalendar(path)
	if err != nil {
		return err
	}
	svc := contract.NewService("Go net/http", cal)
	// The request's own work only: no collection landing in one step
	// (allocation is still counted), and the goroutine on one thread, the
	// one callgrind's per-thread counts are read from.
	debug.SetGCPercent(-1)
	runtime.LockOSThread()
	for _, c := range cases {
		if len(only) > 0 && !slices.Contains(only, c.Name) {
			continue
		}
		answer := contracttest.Answerer(svc, c.Path)
		if status, _ := answer(c.Query, time.Now()); status != c.Status {
			return fmt.Errorf("%s: status %d, expected %d", c.Name, status, c.Status)
		}
		for _, n := range []int{calls, 0, calls} {
			stepMarker()
			answerN(answer, c.Query, heldAt, n)
		}
		fmt.Println(c.Name)
	}
	stepMarker()
	return nil
}

// clockRead keeps the compiler from dropping the clock reads of answerN.
var clockRead time.Time

func answerN(answer func(string, time.Time) (int, []byte), query string, held time.Time, n int) {
	for range n {
		clockRead = time.Now()
		answer(query, held)
	}
}
