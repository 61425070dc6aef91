// Command franz-go drives franz-go's kgo client for the interop tests.
//
//	franz-go produce   < job   idempotent producer, acks=all; prints {"type": "produced", "acks": [[p, o], ...]}
//	franz-go consume   < job   direct partition consumer; prints {"type": "consumed", "records": [...]}
//	franz-go group CONFIG      a group member speaking interop_tests/group_driver.py's protocol
//
// Jobs and events are described in package driver.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"wirekafka/interop_tests/go/driver"
)

const (
	timeout  = 120 * time.Second
	clientID = "wirekafka-interop-franz-go"
)

func main() { driver.Main("franz-go", produce, consume, newMember) }

// newClient is a kgo client of bootstrap, logging its warnings on stderr.
func newClient(bootstrap, clientID string, options ...kgo.Opt) *kgo.Client {
	options = append([]kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID(clientID),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)),
	}, options...)
	client, err := kgo.NewClient(options...)
	if err != nil {
		driver.Fail(err)
	}
	return client
}

var codecs = map[string]kgo.CompressionCodec{
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
}

func produce() {
	var job driver.ProduceJob
	driver.ReadJob(&job)
	codec, ok := codecs[job.Codec()]
	if !ok {
		driver.Failf("unknown codec %q", job.Codec())
	}
	client := newClient(job.Bootstrap, clientID,
		kgo.DefaultProduceTopic(job.Topic),
		kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), // and idempotence, kgo's default
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	acks := make([][2]int64, len(job.Records))
	var mu sync.Mutex
	var failures []error
	for i, sample := range job.Records {
		record := &kgo.Record{
			Partition: sample.Partition,
			Key:       sample.KeyBytes(),
			Value:     sample.ValueBytes(),
			Timestamp: sample.Time(),
		}
		for _, h := range sample.HeaderList() {
			record.Headers = append(record.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		client.Produce(ctx, record, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, fmt.Errorf("record %d: %w", i, err))
				return
			}
			acks[i] = [2]int64{int64(r.Partition), r.Offset}
		})
	}
	if err := client.Flush(ctx); err != nil {
		driver.Fail(err)
	}
	if len(failures) > 0 {
		driver.Failf("%d records not acknowledged, the first: %v", len(failures), failures[0])
	}
	driver.Produced(acks)
}

func consume() {
	var job driver.ConsumeJob
	driver.ReadJob(&job)
	counts := job.Partitions()
	start := map[int32]kgo.Offset{}
	for p := range counts {
		start[p] = kgo.NewOffset().AtStart()
	}
	client := newClient(job.Bootstrap, clientID,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{job.Topic: start}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	read := map[int32]int64{}
	done := func() bool {
		for p, n := range counts {
			if read[p] < n {
				return false
			}
		}
		return true
	}
	var got []driver.Got
	for !done() {
		fetches := client.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			driver.Failf("read %v of %v records: %v", read, counts, err)
		}
		for _, e := range fetches.Errors() {
			driver.Failf("fetching %s partition %d: %v", e.Topic, e.Partition, e.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			headers := make([]driver.Header, 0, len(r.Headers))
			for _, h := range r.Headers {
				headers = append(headers, driver.Header{Key: h.Key, Value: h.Value})
			}
			got = append(got, driver.NewGot(r.Partition, r.Offset, r.Key, r.Value, headers, r.Timestamp))
			read[r.Partition]++
		})
	}
	driver.Consumed(got)
}

// member is a kgo group consumer. Rebalances wait while a poll's records are
// being printed and committed (BlockRebalanceOnPoll), so a partition is never
// revoked with records returned and not yet committed.
type member struct {
	client *kgo.Client
	topic  string
}

var balancers = map[string]kgo.GroupBalancer{
	"range":              kgo.RangeBalancer(),
	"roundrobin":         kgo.RoundRobinBalancer(),
	"sticky":             kgo.StickyBalancer(),
	"cooperative-sticky": kgo.CooperativeStickyBalancer(),
}

func newMember(config driver.GroupConfig) driver.Member {
	assignment := config.Assignment
	if assignment == "" {
		assignment = "cooperative-sticky" // kgo's default
	}
	balancer, ok := balancers[assignment]
	if !ok {
		driver.Failf("unknown balancer %q", assignment)
	}
	owned := driver.NewOwned(assignment == "cooperative-sticky")
	notice := func(kind string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, partitions map[string][]int32) {
			owned.Change(kind, partitions[config.Topic])
		}
	}
	client := newClient(config.Bootstrap, config.Name,
		kgo.ConsumerGroup(config.Group),
		kgo.ConsumeTopics(config.Topic),
		kgo.Balancers(balancer),
		kgo.SessionTimeout(config.SessionTimeout()),
		kgo.HeartbeatInterval(config.HeartbeatInterval()),
		kgo.RebalanceTimeout(config.RebalanceTimeout()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(notice("assigned")),
		kgo.OnPartitionsRevoked(notice("revoked")),
		kgo.OnPartitionsLost(notice("lost")),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	return &member{client: client, topic: config.Topic}
}

func (m *member) Poll(ctx context.Context) ([]driver.Polled, error) {
	fetches := m.client.PollRecords(ctx, driver.MaxPollRecords)
	var errs []error
	for _, e := range fetches.Errors() {
		if !errors.Is(e.Err, context.DeadlineExceeded) {
			errs = append(errs, fmt.Errorf("%s partition %d: %w", e.Topic, e.Partition, e.Err))
		}
	}
	var polled []driver.Polled
	fetches.EachRecord(func(r *kgo.Record) {
		polled = append(polled, driver.Polled{Partition: r.Partition, Offset: r.Offset, Key: r.Key})
	})
	return polled, errors.Join(errs...)
}

func (m *member) Commit(ctx context.Context, offsets map[int32]int64) error {
	partitions := map[int32]kgo.EpochOffset{}
	for p, o := range offsets {
		partitions[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var failed error
	m.client.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{m.topic: partitions},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				failed = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil && failed == nil {
						failed = fmt.Errorf("partition %d: %w", p.Partition, err)
					}
				}
			}
		})
	return failed
}

func (m *member) Processed() { m.client.AllowRebalance() }

func (m *member) Close() error {
	m.client.Close()
	return nil
}
