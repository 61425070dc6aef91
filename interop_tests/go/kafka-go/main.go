// Command kafka-go drives segmentio/kafka-go for the interop tests.
//
//	kafka-go produce   < job   Writer, acks=all; prints {"type": "produced", "acks": [[p, o], ...]}
//	kafka-go consume   < job   one partition Reader per partition, all at once; prints {"type": "consumed", "records": [...]}
//	kafka-go group CONFIG      a Reader with a GroupID, speaking interop_tests/group_driver.py's protocol
//
// Jobs and events are described in package driver.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"wirekafka/interop_tests/go/driver"
)

const (
	timeout   = 120 * time.Second
	clientID  = "wirekafka-interop-kafka-go"
	subscribe = "subscribed to topics and partitions: %+v" // the Reader's log line after each assignment
)

var errorLog = kafka.LoggerFunc(log.New(os.Stderr, "kafka-go: ", log.LstdFlags|log.Lmicroseconds).Printf)

func main() { driver.Main("kafka-go", produce, consume, newMember) }

var codecs = map[string]kafka.Compression{
	"none":   0,
	"gzip":   kafka.Gzip,
	"snappy": kafka.Snappy,
	"lz4":    kafka.Lz4,
	"zstd":   kafka.Zstd,
}

func produce() {
	var job driver.ProduceJob
	driver.ReadJob(&job)
	codec, ok := codecs[job.Codec()]
	if !ok {
		driver.Failf("unknown codec %q", job.Codec())
	}
	acks := make([][2]int64, len(job.Records))
	acked := make([]bool, len(job.Records))
	var mu sync.Mutex
	writer := &kafka.Writer{
		Addr:  kafka.TCP(job.Bootstrap),
		Topic: job.Topic,
		// Each message carries its sample's index; the partition is the sample's.
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int {
			return int(job.Records[m.WriterData.(int)].Partition)
		}),
		RequiredAcks:           kafka.RequireAll,
		Compression:            codec,
		BatchSize:              1000,
		BatchTimeout:           5 * time.Millisecond,
		AllowAutoTopicCreation: true,
		Transport:              &kafka.Transport{ClientID: clientID},
		ErrorLogger:            errorLog,
		Completion: func(messages []kafka.Message, err error) {
			if err != nil {
				return // WriteMessages reports it
			}
			mu.Lock()
			defer mu.Unlock()
			for _, m := range messages {
				i := m.WriterData.(int)
				acks[i] = [2]int64{int64(m.Partition), m.Offset}
				acked[i] = true
			}
		},
	}
	messages := make([]kafka.Message, len(job.Records))
	for i, sample := range job.Records {
		messages[i] = kafka.Message{
			Key:        sample.KeyBytes(),
			Value:      sample.ValueBytes(),
			Time:       sample.Time(),
			WriterData: i,
		}
		for _, h := range sample.HeaderList() {
			messages[i].Headers = append(messages[i].Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := writer.WriteMessages(ctx, messages...); err != nil {
		var failed kafka.WriteErrors
		if errors.As(err, &failed) {
			driver.Failf("%d of %d messages not written: %v", failed.Count(), len(messages), err)
		}
		driver.Fail(err)
	}
	if err := writer.Close(); err != nil {
		driver.Fail(err)
	}
	for i, ok := range acked {
		if !ok {
			driver.Failf("message %d: written without a completion", i)
		}
	}
	driver.Produced(acks)
}

func consume() {
	var job driver.ConsumeJob
	driver.ReadJob(&job)
	counts := job.Partitions()
	partitions := make([]int32, 0, len(counts))
	for p := range counts {
		partitions = append(partitions, p)
	}
	sort.Slice(partitions, func(i, j int) bool { return partitions[i] < partitions[j] })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// One Reader a partition, all at once; their records are printed partition by partition.
	read := make([][]driver.Got, len(partitions))
	var wait sync.WaitGroup
	for i, p := range partitions {
		wait.Add(1)
		go func() {
			defer wait.Done()
			read[i] = consumePartition(ctx, job, p, counts[p])
		}()
	}
	wait.Wait()
	var got []driver.Got
	for _, records := range read {
		got = append(got, records...)
	}
	driver.Consumed(got)
}

// consumePartition reads count records of one partition from its beginning.
func consumePartition(ctx context.Context, job driver.ConsumeJob, p int32, count int64) []driver.Got {
	reader := kafka.NewReader(kafka.ReaderConfig{
		Brokers:     []string{job.Bootstrap},
		Topic:       job.Topic,
		Partition:   int(p),
		MaxBytes:    10 << 20,
		MaxWait:     500 * time.Millisecond,
		Dialer:      &kafka.Dialer{ClientID: clientID, Timeout: 10 * time.Second},
		ErrorLogger: errorLog,
	})
	if err := reader.SetOffset(kafka.FirstOffset); err != nil {
		driver.Fail(err)
	}
	got := make([]driver.Got, 0, count)
	for n := int64(0); n < count; n++ {
		m, err := reader.ReadMessage(ctx)
		if err != nil {
			driver.Failf("partition %d: read %d of %d records: %v", p, n, count, err)
		}
		got = append(got, driver.NewGot(int32(m.Partition), m.Offset, m.Key, m.Value, headers(m), m.Time))
	}
	if err := reader.Close(); err != nil {
		driver.Fail(err)
	}
	return got
}

func headers(m kafka.Message) []driver.Header {
	out := make([]driver.Header, 0, len(m.Headers))
	for _, h := range m.Headers {
		out = append(out, driver.Header{Key: h.Key, Value: h.Value})
	}
	return out
}

// member is a Reader with a GroupID. The Reader tells its assignments only in
// its log ("subscribed to topics and partitions"), after each join: the
// logger turns that line into an "assigned" event with the whole assignment.
type member struct {
	reader *kafka.Reader
	topic  string
}

var balancers = map[string]kafka.GroupBalancer{
	"range":      kafka.RangeGroupBalancer{},
	"roundrobin": kafka.RoundRobinGroupBalancer{},
}

func newMember(config driver.GroupConfig) driver.Member {
	assignment := config.Assignment
	if assignment == "" {
		assignment = "range" // the Reader's default, then round robin
	}
	balancer, ok := balancers[assignment]
	if !ok {
		driver.Failf("unknown balancer %q", assignment)
	}
	owned := driver.NewOwned(false)
	logger := kafka.LoggerFunc(func(format string, args ...any) {
		if format == subscribe && len(args) == 1 {
			owned.Change("assigned", assignedPartitions(args[0]))
		}
	})
	reader := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{config.Bootstrap},
		GroupID:           config.Group,
		Topic:             config.Topic,
		GroupBalancers:    []kafka.GroupBalancer{balancer},
		SessionTimeout:    config.SessionTimeout(),
		HeartbeatInterval: config.HeartbeatInterval(),
		RebalanceTimeout:  config.RebalanceTimeout(),
		JoinGroupBackoff:  500 * time.Millisecond,
		CommitInterval:    0, // CommitMessages commits before it returns
		StartOffset:       kafka.FirstOffset,
		MaxBytes:          10 << 20,
		MaxWait:           500 * time.Millisecond,
		Dialer:            &kafka.Dialer{ClientID: config.Name, Timeout: 10 * time.Second},
		Logger:            logger,
		ErrorLogger:       errorLog,
	})
	return &member{reader: reader, topic: config.Topic}
}

// assignedPartitions reads the partitions out of the Reader's
// map[topicPartition]int64 (offsets by partition), whose key type is unexported.
func assignedPartitions(offsets any) []int32 {
	value := reflect.ValueOf(offsets)
	if value.Kind() != reflect.Map {
		driver.Failf("the Reader logged its assignment as a %T", offsets)
	}
	partitions := []int32{}
	for _, key := range value.MapKeys() {
		partition := key.FieldByName("partition")
		if !partition.IsValid() {
			driver.Failf("the Reader logged its assignment with keys of type %s", key.Type())
		}
		partitions = append(partitions, int32(partition.Int()))
	}
	return partitions
}

// Poll returns what FetchMessage hands over within ctx, up to MaxPollRecords.
func (m *member) Poll(ctx context.Context) ([]driver.Polled, error) {
	var polled []driver.Polled
	for len(polled) < driver.MaxPollRecords {
		wait, cancel := ctx, context.CancelFunc(func() {})
		if len(polled) > 0 { // after the first, only what is already there
			wait, cancel = context.WithTimeout(ctx, 5*time.Millisecond)
		}
		msg, err := m.reader.FetchMessage(wait)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return polled, nil
			}
			return polled, err
		}
		polled = append(polled, driver.Polled{Partition: int32(msg.Partition), Offset: msg.Offset, Key: msg.Key})
	}
	return polled, nil
}

func (m *member) Commit(ctx context.Context, offsets map[int32]int64) error {
	messages := make([]kafka.Message, 0, len(offsets))
	for p, o := range offsets {
		// CommitMessages commits the offset after each message's.
		messages = append(messages, kafka.Message{Topic: m.topic, Partition: int(p), Offset: o - 1})
	}
	if err := m.reader.CommitMessages(ctx, messages...); err != nil {
		return fmt.Errorf("committing %v: %w", offsets, err)
	}
	return nil
}

func (m *member) Processed() {}

func (m *member) Close() error { return m.reader.Close() }
