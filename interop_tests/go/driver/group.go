package driver

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PollTimeout bounds one poll, so commands on stdin are seen within it.
const PollTimeout = 200 * time.Millisecond

// MaxPollRecords is the most records one poll returns.
const MaxPollRecords = 500

// CommitTimeout bounds one commit.
const CommitTimeout = 30 * time.Second

// GroupConfig is the group member's configuration, the JSON object that
// group_driver.Member passes as the last argument.
type GroupConfig struct {
	Name                string `json:"name"`
	Bootstrap           string `json:"bootstrap"`
	Topic               string `json:"topic"`
	Group               string `json:"group"`
	SessionTimeoutMs    int    `json:"session_timeout_ms"`
	HeartbeatIntervalMs int    `json:"heartbeat_interval_ms"`
	MaxPollIntervalMs   int    `json:"max_poll_interval_ms"`
	Commit              string `json:"commit"`     // "batch": commit what each poll returned
	Assignment          string `json:"assignment"` // the client's name of its assignor
}

func millis(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

func (c GroupConfig) SessionTimeout() time.Duration    { return millis(c.SessionTimeoutMs) }
func (c GroupConfig) HeartbeatInterval() time.Duration { return millis(c.HeartbeatIntervalMs) }
func (c GroupConfig) RebalanceTimeout() time.Duration  { return millis(c.MaxPollIntervalMs) }

// ReadGroupConfig decodes the configuration in the last argument.
func ReadGroupConfig() GroupConfig {
	var config GroupConfig
	if err := json.Unmarshal([]byte(os.Args[len(os.Args)-1]), &config); err != nil {
		Failf("bad group member configuration: %v", err)
	}
	return config
}

// Owned is the set of partitions a member holds, kept from its client's
// rebalance notices and printed at each change. With incremental (cooperative)
// assignments an "assigned" adds partitions; otherwise it replaces them.
type Owned struct {
	incremental bool
	mu          sync.Mutex
	partitions  map[int32]bool
}

func NewOwned(incremental bool) *Owned {
	return &Owned{incremental: incremental, partitions: map[int32]bool{}}
}

// Change applies one notice ("assigned", "revoked" or "lost") and prints it.
func (o *Owned) Change(kind string, partitions []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if kind == "assigned" && !o.incremental {
		o.partitions = map[int32]bool{}
	}
	for _, p := range partitions {
		if kind == "assigned" {
			o.partitions[p] = true
		} else {
			delete(o.partitions, p)
		}
	}
	owned := make([]int32, 0, len(o.partitions))
	for p := range o.partitions {
		owned = append(owned, p)
	}
	Emit(map[string]any{"type": kind, "partitions": sorted(partitions), "owned": sorted(owned)})
}

func sorted(partitions []int32) []int32 {
	out := append([]int32{}, partitions...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Polled is one record a poll returned, as the group events show it.
type Polled struct {
	Partition int32
	Offset    int64
	Key       []byte
}

// Member is one client's consumer in a group.
type Member interface {
	// Poll returns what is there within about ctx's deadline (nothing is not an error).
	Poll(ctx context.Context) ([]Polled, error)
	// Commit commits exactly these offsets (the next offset to read, by partition).
	Commit(ctx context.Context, offsets map[int32]int64) error
	// Processed is called once a poll's records are printed and, if asked, committed.
	Processed()
	// Close leaves the group and closes the client.
	Close() error
}

type command struct {
	name    string
	offsets map[int32]int64
}

// readCommands sends each line of stdin ("close", or "commit {"0": 17}"), then
// "close" at its end.
func readCommands(commands chan<- command) {
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		offsets := map[int32]int64{}
		if rest != "" {
			var raw map[string]int64
			if err := json.Unmarshal([]byte(rest), &raw); err != nil {
				Failf("bad command %q: %v", line, err)
			}
			for p, o := range raw {
				partition, err := strconv.ParseInt(p, 10, 32)
				if err != nil {
					Failf("bad partition in %q: %v", line, err)
				}
				offsets[int32(partition)] = o
			}
		}
		commands <- command{name, offsets}
	}
	commands <- command{name: "close"}
}

func commit(member Member, offsets map[int32]int64) {
	ctx, cancel := context.WithTimeout(context.Background(), CommitTimeout)
	defer cancel()
	if err := member.Commit(ctx, offsets); err != nil {
		Emit(map[string]any{"type": "commit_error", "error": err.Error()})
		return
	}
	printable := make(map[string]int64, len(offsets))
	for p, o := range offsets {
		printable[strconv.Itoa(int(p))] = o
	}
	Emit(map[string]any{"type": "committed", "offsets": printable})
}

// RunGroup polls until stdin says "close" (or ends), printing what each poll
// returns and committing it when config.Commit is "batch", then closes the member.
func RunGroup(config GroupConfig, member Member) {
	commands := make(chan command, 16)
	go readCommands(commands)
	Emit(map[string]any{"type": "started"})
	for {
		var next command
		select {
		case next = <-commands:
		default:
		}
		if next.name == "close" {
			break
		}
		if next.name == "commit" {
			commit(member, next.offsets)
		}
		ctx, cancel := context.WithTimeout(context.Background(), PollTimeout)
		polled, err := member.Poll(ctx)
		cancel()
		if err != nil {
			Emit(map[string]any{"type": "client_error", "error": err.Error()})
		}
		if len(polled) > 0 {
			records := make([][3]any, 0, len(polled))
			positions := map[int32]int64{}
			for _, r := range polled {
				var key any
				if r.Key != nil {
					key = strings.ToValidUTF8(string(r.Key), "\uFFFD")
				}
				records = append(records, [3]any{r.Partition, r.Offset, key})
				positions[r.Partition] = r.Offset + 1
			}
			Emit(map[string]any{"type": "records", "records": records})
			if config.Commit == "batch" {
				commit(member, positions)
			}
		}
		member.Processed()
	}
	if err := member.Close(); err != nil {
		Fail(err)
	}
	Emit(map[string]any{"type": "closed"})
}
