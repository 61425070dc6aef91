package driver

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

var stdout sync.Mutex

// Emit prints one event as a JSON line on stdout, at once, with the time ("t",
// seconds since the epoch), so what was printed survives a SIGKILL.
func Emit(event map[string]any) {
	event["t"] = float64(time.Now().UnixNano()) / 1e9
	line, err := json.Marshal(event)
	if err != nil {
		panic(err)
	}
	stdout.Lock()
	defer stdout.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

// Fail prints an error event and exits 1.
func Fail(err error) {
	Emit(map[string]any{"type": "error", "error": err.Error()})
	os.Exit(1)
}

// Failf is Fail with a message made by fmt.Errorf.
func Failf(format string, args ...any) {
	Fail(fmt.Errorf(format, args...))
}
