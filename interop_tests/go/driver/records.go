// Package driver is what the Go client drivers of the interop suite share: the
// JSON the Python tests send and read (records as interop_tests/support.py
// writes them, group events as interop_tests/group_driver.py prints them) and
// the loop of a group member, whatever its client.
package driver

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Header is one record header; a nil Value is a null one.
type Header struct {
	Key   string
	Value []byte
}

// Sample is a record to produce, as support.sample_to_json writes it: bytes in
// base64, null as null; Timestamp in ms since the epoch, null for "now".
type Sample struct {
	Partition int32        `json:"partition"`
	Key       *string      `json:"key"`
	Value     *string      `json:"value"`
	Headers   [][2]*string `json:"headers"`
	Timestamp *int64       `json:"timestamp"`
}

// KeyBytes is the key, nil for a null key.
func (s Sample) KeyBytes() []byte { return decode(s.Key) }

// ValueBytes is the value, nil for a null value.
func (s Sample) ValueBytes() []byte { return decode(s.Value) }

// HeaderList is the headers in order, repeated keys and all.
func (s Sample) HeaderList() []Header {
	headers := make([]Header, 0, len(s.Headers))
	for _, h := range s.Headers {
		headers = append(headers, Header{Key: *h[0], Value: decode(h[1])})
	}
	return headers
}

// Time is the sample's timestamp, the zero time when the client is to set it.
func (s Sample) Time() time.Time {
	if s.Timestamp == nil {
		return time.Time{}
	}
	return time.UnixMilli(*s.Timestamp)
}

// Got is a record as a client read it, as support.got_from_json reads it.
type Got struct {
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Key       *string      `json:"key"`
	Value     *string      `json:"value"`
	Headers   [][2]*string `json:"headers"`
	Timestamp int64        `json:"timestamp"`
}

// NewGot turns what a client read into a Got.
func NewGot(partition int32, offset int64, key, value []byte, headers []Header, timestamp time.Time) Got {
	got := Got{
		Partition: partition,
		Offset:    offset,
		Key:       encode(key),
		Value:     encode(value),
		Headers:   make([][2]*string, 0, len(headers)),
		Timestamp: timestamp.UnixMilli(),
	}
	for _, h := range headers {
		key := h.Key
		got.Headers = append(got.Headers, [2]*string{&key, encode(h.Value)})
	}
	return got
}

// ProduceJob is what the produce command reads on stdin.
type ProduceJob struct {
	Bootstrap   string   `json:"bootstrap"`
	Topic       string   `json:"topic"`
	Compression *string  `json:"compression"` // null: uncompressed
	Records     []Sample `json:"records"`
}

// Codec is the job's compression: "none", "gzip", "snappy", "lz4" or "zstd".
func (j ProduceJob) Codec() string {
	if j.Compression == nil {
		return "none"
	}
	return *j.Compression
}

// ConsumeJob is what the consume command reads on stdin: read each partition
// from its beginning until it has given Counts[partition] records.
type ConsumeJob struct {
	Bootstrap string           `json:"bootstrap"`
	Topic     string           `json:"topic"`
	Counts    map[string]int64 `json:"counts"`
}

// Partitions is the job's counts by partition number.
func (j ConsumeJob) Partitions() map[int32]int64 {
	counts := make(map[int32]int64, len(j.Counts))
	for p, n := range j.Counts {
		partition, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			Failf("partition %q: %v", p, err)
		}
		counts[int32(partition)] = n
	}
	return counts
}

// ReadJob decodes the one JSON document on stdin into job, or fails.
func ReadJob(job any) {
	data, err := io.ReadAll(bufio.NewReader(os.Stdin))
	if err == nil {
		err = json.Unmarshal(data, job)
	}
	if err != nil {
		Failf("reading the job on stdin: %v", err)
	}
}

// Produced prints the acknowledgements: [partition, offset] of each record, in send order.
func Produced(acks [][2]int64) {
	Emit(map[string]any{"type": "produced", "acks": acks})
}

// Consumed prints the records read, in the order the client delivered them.
func Consumed(records []Got) {
	Emit(map[string]any{"type": "consumed", "records": records})
}

func decode(text *string) []byte {
	if text == nil {
		return nil
	}
	data, err := base64.StdEncoding.DecodeString(*text)
	if err != nil {
		Fail(fmt.Errorf("bad base64 %q: %w", *text, err))
	}
	return data // never nil: "" decodes to an empty slice
}

func encode(data []byte) *string {
	if data == nil {
		return nil
	}
	text := base64.StdEncoding.EncodeToString(data)
	return &text
}
