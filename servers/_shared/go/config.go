package contract

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
)

// Config is the server configuration from the environment.
type Config struct {
	// Addr is HOST:PORT to listen on. HOST defaults to 0.0.0.0.
	Addr string
	// Workers is GOMAXPROCS from WORKERS, or 0 when WORKERS is unset.
	Workers int
	// CalendarPath is WORKDAY_CALENDAR.
	CalendarPath string
}

// ConfigFromEnv reads PORT, HOST, WORKERS and WORKDAY_CALENDAR.
func ConfigFromEnv() (Config, error) {
	return configFrom(os.LookupEnv)
}

func configFrom(lookup func(string) (string, bool)) (Config, error) {
	var c Config
	port, _ := lookup("PORT")
	if port == "" {
		return c, errors.New("PORT is not set")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return c, fmt.Errorf("PORT=%q is not a port number (1..65535)", port)
	}
	host, _ := lookup("HOST")
	if host == "" {
		host = "0.0.0.0"
	}
	c.Addr = net.JoinHostPort(host, port)

	if w, _ := lookup("WORKERS"); w != "" {
		n, err := strconv.Atoi(w)
		if err != nil || n < 1 {
			return c, fmt.Errorf("WORKERS=%q is not a positive integer", w)
		}
		c.Workers = n
	}

	c.CalendarPath, _ = lookup(CalendarEnv)
	if c.CalendarPath == "" {
		return c, errors.New(CalendarEnv + " is not set (path of the calendar file)")
	}
	return c, nil
}

// ApplyWorkers maps WORKERS onto GOMAXPROCS, the number of OS threads that
// run Go code at once; goroutines (one per connection in net/http) are
// scheduled onto them. With WORKERS unset it leaves GOMAXPROCS alone: since
// Go 1.25 the runtime's default is already the CPUs the process may use,
// from sched_getaffinity (cpuset) and the cgroup CPU quota (rounded up, at
// least 2), and it follows changes of the quota at run time. It returns the
// GOMAXPROCS in effect.
func (c Config) ApplyWorkers() int {
	if c.Workers > 0 {
		runtime.GOMAXPROCS(c.Workers)
	}
	return runtime.GOMAXPROCS(0)
}
