/* The yardstick, rebuilt so that it is measured on the same machine in the same run: a
 * plain single-threaded C loop over a reused 8 MB read() buffer that frames a pcap file and
 * computes, per packet, the 20 sliding-window maxima (one trailing pointer per window, walked one
 * packet at a time) and the 8 Lindley backlogs. No skipping, no vector lanes, no threads.
 *
 * It is a yardstick, not a peer: pcap only (both timestamp resolutions, either byte order), bytes
 * are wire lengths, windows half-open [s, s+tau), rates in bit/s exact in integers. Backlogs are
 * kept in bit-nanoseconds in 64 bits, so they wrap past about 2.3 GB (the benchmark's captures
 * peak at 0.45 GB). It prints its E(tau) and B_max(r): the report compares its E(tau) with
 * burstcore's, and the smoke test both.
 *
 * Usage: reference_loop FILE WINDOWS_NS RATES_BPS   (each comma-separated; windows ascending)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXW 64
#define MAXR 64
#define BUF (8u << 20)

static uint32_t rd32(const unsigned char *p, int swap) {
    uint32_t v;
    memcpy(&v, p, 4);
    return swap ? __builtin_bswap32(v) : v;
}

/* Comma-separated positive integers into out (at most max); returns how many, or -1. */
static int parse_list(const char *text, int64_t *out, int max) {
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v <= 0 || n == max) return -1;
        out[n++] = v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

int main(int argc, char **argv) {
    int64_t tau[MAXW], rate_in[MAXR];
    int nw = argc == 4 ? parse_list(argv[2], tau, MAXW) : -1;
    int nr = argc == 4 ? parse_list(argv[3], rate_in, MAXR) : -1;
    if (nw < 1 || nr < 1) {
        fprintf(stderr, "usage: reference_loop FILE WINDOWS_NS RATES_BPS (comma-separated)\n");
        return 2;
    }
    for (int w = 1; w < nw; w++)
        if (tau[w] <= tau[w - 1]) {
            fprintf(stderr, "windows must be ascending\n");
            return 2;
        }
    uint64_t rate[MAXR];
    for (int k = 0; k < nr; k++) rate[k] = (uint64_t)rate_in[k];
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 2;
    }

    /* Ring of recent packets: timestamp and prefix sum of bytes; grows by doubling. */
    size_t cap = 1 << 16;
    int64_t *rts = malloc(cap * sizeof *rts);
    uint64_t *rsum = malloc(cap * sizeof *rsum);
    uint64_t head = 0, oldest = 0;
    uint64_t trail[MAXW] = {0}, best[MAXW] = {0}, bestp[MAXW] = {0};
    uint64_t total = 0;
    /* Backlog in bit-nanoseconds (bits × 1e9), so that draining r bit/s for dt ns is r·dt. */
    uint64_t q[MAXR] = {0}, qmax[MAXR] = {0};
    int64_t last = 0;

    unsigned char *buf = malloc(BUF);
    size_t have = 0, pos = 0;
    int swap = 0, nano = 0, started = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        /* Refill: keep the unread tail, read after it. */
        memmove(buf, buf + pos, have - pos);
        have -= pos;
        pos = 0;
        ssize_t n = read(fd, buf + have, BUF - have);
        if (n < 0) {
            perror("read");
            return 1;
        }
        if (n == 0) break;
        have += (size_t)n;
        if (!started) {
            if (have < 24) continue;
            uint32_t magic;
            memcpy(&magic, buf, 4);
            if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d) swap = 0;
            else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1) swap = 1;
            else {
                fprintf(stderr, "not a pcap file\n");
                return 2;
            }
            nano = rd32(buf, swap) == 0xa1b23c4d;
            pos = 24;
            started = 1;
        }
        while (have - pos >= 16) {
            const unsigned char *h = buf + pos;
            uint32_t incl = rd32(h + 8, swap);
            if (have - pos - 16 < incl) break;
            int64_t ts = (int64_t)rd32(h, swap) * 1000000000 +
                         (int64_t)rd32(h + 4, swap) * (nano ? 1 : 1000);
            uint64_t size = rd32(h + 12, swap);
            pos += 16 + incl;

            if (head - oldest == cap) {
                size_t ncap = cap * 2;
                int64_t *nts = malloc(ncap * sizeof *nts);
                uint64_t *nsum = malloc(ncap * sizeof *nsum);
                for (uint64_t s = oldest; s != head; s++) {
                    nts[s & (ncap - 1)] = rts[s & (cap - 1)];
                    nsum[s & (ncap - 1)] = rsum[s & (cap - 1)];
                }
                free(rts);
                free(rsum);
                rts = nts;
                rsum = nsum;
                cap = ncap;
            }
            total += size;
            rts[head & (cap - 1)] = ts;
            rsum[head & (cap - 1)] = total;
            uint64_t seq = head++;

            for (int w = 0; w < nw; w++) {
                uint64_t t = trail[w];
                while (ts - rts[t & (cap - 1)] > tau[w] - 1) t++;
                trail[w] = t;
                uint64_t before = t == 0 ? 0 : rsum[(t - 1) & (cap - 1)];
                uint64_t bytes = total - before;
                if (bytes > best[w]) best[w] = bytes;
                if (seq - t + 1 > bestp[w]) bestp[w] = seq - t + 1;
            }
            oldest = trail[nw - 1]; /* the longest window's trail is the oldest */

            uint64_t dt = seq ? (uint64_t)(ts - last) : 0;
            uint64_t add = size * 8 * 1000000000ull;
            for (int k = 0; k < nr; k++) {
                unsigned __int128 d = (unsigned __int128)rate[k] * dt;
                uint64_t v = d >= q[k] ? 0 : q[k] - (uint64_t)d;
                v += add;
                q[k] = v;
                if (v > qmax[k]) qmax[k] = v;
            }
            last = ts;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* A record cut short by the end of the file, or longer than the buffer, is not counted. */
    if (have != pos) fprintf(stderr, "%zu bytes at the end were not a whole record\n", have - pos);
    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("{\"seconds\": %.6f, \"packets\": %llu, \"wire_bytes\": %llu, \"envelope\": [", secs,
           (unsigned long long)head, (unsigned long long)total);
    for (int w = 0; w < nw; w++) printf("%s%llu", w ? ", " : "", (unsigned long long)best[w]);
    printf("], \"envelope_packets\": [");
    for (int w = 0; w < nw; w++) printf("%s%llu", w ? ", " : "", (unsigned long long)bestp[w]);
    /* Bit-nanoseconds to bytes. */
    printf("], \"bmax\": [");
    for (int k = 0; k < nr; k++) printf("%s%.17g", k ? ", " : "", qmax[k] / 8e9);
    printf("]}\n");
    return 0;
}
