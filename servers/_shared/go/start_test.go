package contract

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const sharedCalendar = "../../../contracts/calendar/xshg-non-trading-weekdays.txt"

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestStartHandsServeTheConfigWorkersAndCalendar(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	served := errors.New("served")
	var got Setup
	err := start(lookupIn(map[string]string{
		"PORT": "8101", "HOST": "127.0.0.1", "WORKERS": "3", CalendarEnv: sharedCalendar,
	}), func(s Setup) error { got = s; return served })
	if !errors.Is(err, served) {
		t.Fatalf("start returned %v, want serve's error", err)
	}
	if got.Config.Addr != "127.0.0.1:8101" || got.Procs != 3 || runtime.GOMAXPROCS(0) != 3 {
		t.Errorf("config %+v, procs %d, GOMAXPROCS %d", got.Config, got.Procs, runtime.GOMAXPROCS(0))
	}
	if got.Calendar == nil || got.Calendar.First != DateOf(2007, 1, 1) || got.Calendar.Len() < 300 {
		t.Errorf("calendar %+v", got.Calendar)
	}
}

func TestStartStopsBeforeServe(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.txt")
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("# range: 2007-01-01 2026-12-31\nnot a date\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want []string // every one must be in the error
	}{
		{map[string]string{CalendarEnv: sharedCalendar}, []string{"PORT is not set"}},
		{map[string]string{"PORT": "8101"}, []string{CalendarEnv + " is not set"}},
		{map[string]string{"PORT": "8101", CalendarEnv: missing}, []string{CalendarEnv, missing}},
		{map[string]string{"PORT": "8101", CalendarEnv: bad}, []string{CalendarEnv + "=" + bad, "line 2"}},
	} {
		err := start(lookupIn(tc.env), func(Setup) error {
			t.Errorf("%v: serve called", tc.env)
			return nil
		})
		for _, part := range tc.want {
			if err == nil || !strings.Contains(err.Error(), part) {
				t.Errorf("%v: error %v, want it to contain %q", tc.env, err, part)
			}
		}
	}
}

// TestMainExitsWithTheStackNameAndTheError runs Main in a child process (this test binary again), because
// Main ends the process: the exit status and stderr are what a user sees.
func TestMainExitsWithTheStackNameAndTheError(t *testing.T) {
	if os.Getenv("CONTRACT_MAIN_CHILD") != "" {
		Main("stack", func(Setup) error {
			if os.Getenv("CONTRACT_MAIN_CHILD") == "fail" {
				return errors.New("cannot listen")
			}
			return nil
		})
		return
	}
	missing := filepath.Join(t.TempDir(), "none.txt")
	for _, tc := range []struct {
		child, calendar string
		status          int
		stderr          string
	}{
		{"ok", sharedCalendar, 0, ""},
		{"fail", sharedCalendar, 1, "stack: cannot listen\n"},
		{"ok", missing, 1, "stack: " + CalendarEnv + ": cannot read calendar: open " + missing + ": no such file or directory\n"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMainExitsWithTheStackNameAndTheError$")
		cmd.Env = append(os.Environ(), "CONTRACT_MAIN_CHILD="+tc.child,
			"PORT=8101", "WORKERS=", CalendarEnv+"="+tc.calendar)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		status := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			status = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if status != tc.status || stderr.String() != tc.stderr {
			t.Errorf("%s with %s: status %d, stderr %q; want %d, %q",
				tc.child, tc.calendar, status, stderr.String(), tc.status, tc.stderr)
		}
	}
}
