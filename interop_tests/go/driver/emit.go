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

// Main runs the command named by the first argument: produce, consume or group.
func Main(client string, produce, consume func(), group func(GroupConfig) Member) {
	if len(os.Args) < 2 {
		Failf("usage: %s produce|consume|group CONFIG", client)
	}
	switch os.Args[1] {
	case "produce":
		produce()
	case "consume":
		consume()
	case "group":
		config := ReadGroupConfig()
		RunGroup(config, group(config))
	default:
		Failf("%s: unknown command %q", client, os.Args[1])
	}
}
