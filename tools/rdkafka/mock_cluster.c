/*
 * librdkafka's mock cluster as a process of its own: a C peer for the broker
 * benchmark (tools/bench_peers.py).
 *
 *     mock_cluster TOPIC[:PARTITIONS]...
 *
 * starts a one-broker mock cluster (rdkafka_mock.h), creates each TOPIC with
 * PARTITIONS partitions (default 1; the mock of Debian's librdkafka 2.0 serves
 * no CreateTopics), prints the cluster's bootstrap servers on a line of its
 * own and serves until SIGTERM or SIGINT. It keeps every record in memory.
 * (A topic name has no ':' in Kafka, so the last ':' starts the count.)
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
        char errstr[512];
        sigset_t stop;
        int sig, i;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *rk;
        rd_kafka_mock_cluster_t *mcluster;

        /* Signals are taken by sigwait below, in this thread only: block them
         * before librdkafka starts its threads, which inherit the mask. */
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        sigprocmask(SIG_BLOCK, &stop, NULL);

        rd_kafka_conf_set(conf, "log_level", "3", NULL, 0);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "mock_cluster: %s\n", errstr);
                return 1;
        }
        mcluster = rd_kafka_mock_cluster_new(rk, 1);
        if (!mcluster) {
                fprintf(stderr, "mock_cluster: no mock cluster\n");
                return 1;
        }
        for (i = 1; i < argc; i++) {
                char *topic = argv[i], *colon = strrchr(topic, ':'), *end;
                long partitions = 1;
                rd_kafka_resp_err_t err;

                if (colon) {
                        *colon     = '\0';
                        partitions = strtol(colon + 1, &end, 10);
                        if (*end || partitions < 1 || partitions > 100000) {
                                fprintf(stderr,
                                        "mock_cluster: %s: bad partition "
                                        "count %s\n",
                                        topic, colon + 1);
                                return 1;
                        }
                }
                err = rd_kafka_mock_topic_create(mcluster, topic,
                                                 (int)partitions, 1);
                if (err) {
                        fprintf(stderr, "mock_cluster: topic %s: %s\n", topic,
                                rd_kafka_err2str(err));
                        return 1;
                }
        }
        printf("%s\n", rd_kafka_mock_cluster_bootstraps(mcluster));
        fflush(stdout);

        sigwait(&stop, &sig);
        rd_kafka_mock_cluster_destroy(mcluster);
        rd_kafka_destroy(rk);
        return 0;
}
