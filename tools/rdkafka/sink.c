/*
 * A socket that reads and drops whatever it is sent: the receiving end of the
 * broker benchmark's plain-sendfile limit (tools/bench_peers.py), in C so the
 * reader costs no more than the consumer's own reads (a Python recv_into loop
 * measured a few per cent slower).
 *
 *     sink
 *
 * listens on 127.0.0.1 on a port of the kernel's choosing, prints the port on
 * a line of its own, takes one connection, reads it until end of file and then
 * prints the number of bytes read on a line of its own and exits.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHUNK (1 << 20)

int main(void) {
        struct sockaddr_in addr = {0};
        socklen_t len           = sizeof(addr);
        unsigned long long total = 0;
        char *buffer             = malloc(CHUNK);
        int listener             = socket(AF_INET, SOCK_STREAM, 0);
        int conn;
        ssize_t got;

        addr.sin_family      = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (!buffer || listener < 0 ||
            bind(listener, (struct sockaddr *)&addr, sizeof(addr)) ||
            listen(listener, 1) ||
            getsockname(listener, (struct sockaddr *)&addr, &len)) {
                perror("sink");
                return 1;
        }
        printf("%d\n", ntohs(addr.sin_port));
        fflush(stdout);
        conn = accept(listener, NULL, NULL);
        if (conn < 0) {
                perror("sink: accept");
                return 1;
        }
        while ((got = read(conn, buffer, CHUNK)) > 0)
                total += (unsigned long long)got;
        if (got < 0) {
                perror("sink: read");
                return 1;
        }
        printf("%llu\n", total);
        fflush(stdout);
        return 0;
}
