package contract

import (
	"fmt"
	"os"
)

// Setup is what a Go stack has once it has started: its configuration,
// the GOMAXPROCS in effect and the calendar, read once.
type Setup struct {
	Config   Config
	Procs    int
	Calendar *Calendar
}

// Main is the whole start-up of every Go stack: read PORT, HOST, WORKERS
// and WORKDAY_CALENDAR from the environment, map WORKERS onto GOMAXPROCS,
// load the calendar once, then call serve (which builds the stack's router
// and usually ends in [Serve]). Any error, from the start-up or from serve,
// ends the process with status 1 and one line on stderr, "name: error";
// the calendar errors name WORKDAY_CALENDAR and the path.
func Main(name string, serve func(Setup) error) {
	if err := start(os.LookupEnv, serve); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

func start(lookup func(string) (string, bool), serve func(Setup) error) error {
	cfg, err := configFrom(lookup)
	if err != nil {
		return err
	}
	procs := cfg.ApplyWorkers()
	cal, err := LoadCalendar(cfg.CalendarPath)
	if err != nil {
		return err
	}
	return serve(Setup{Config: cfg, Procs: procs, Calendar: cal})
}
