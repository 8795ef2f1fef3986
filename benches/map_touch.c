/* The floor under burstcore's memory-mapped reader: map a file read-only, load one byte every
 * STRIDE bytes, and hand the pages passed back to the kernel 8 MiB at a time, as the reader does
 * (MADV_DONTNEED, so that resident memory stays bounded). No framing, no computing. With a stride
 * of 64 it loads every cache line of the file, which the reader pulls through the cache too (it
 * prefetches every line ahead of the framing, because the record lengths it chases could point
 * anywhere, but loads only the record headers, which costs it a little less: benches/RESULTS.md,
 * "Eighteenth landing"); the two-thread figure (equal halves, one per thread) shows how far
 * streaming the file from memory scales on two cores of one process. With a stride of 4096 (one load per
 * page) it is the kernel's part alone: mapping the pages and handing them back.
 *
 * Usage: map_touch FILE THREADS STRIDE
 * prints {"threads": N, "stride": S, "bytes": B, "seconds": W, "cpu": C, "sum": X}: the wall and
 * CPU seconds (user + system, all threads) from mapping the file to unmapping it, measured here
 * because a run can take a few hundredths of a second, finer than GNU time's 10 ms; X is the sum
 * of the bytes loaded, for a check that they were.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAXT 64
#define PAGE 4096u
#define UNIT (2u << 20)
/* Bytes handed back at a time (the reader's RELEASE), in whole UNIT stretches. */
#define STEP (8u << 20)

static const unsigned char *base;
static size_t len, stride;
static int nthreads;

struct part {
    size_t from, to;
    uint64_t sum;
};

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *touch(void *arg) {
    struct part *p = arg;
    uint64_t sum = 0;
    /* Hand back whole 2 MiB stretches inside this part only: the rest belongs to a neighbour. */
    size_t released = (p->from + UNIT - 1) / UNIT * UNIT;
    for (size_t at = p->from; at < p->to; at += stride) {
        sum += base[at];
        while (released + STEP <= at && released + STEP <= p->to) {
            madvise((void *)(base + released), STEP, MADV_DONTNEED);
            released += STEP;
        }
    }
    p->sum = sum;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4 || (nthreads = atoi(argv[2])) < 1 || nthreads > MAXT || atoi(argv[3]) < 1 ||
        PAGE % (unsigned)atoi(argv[3]) != 0) {
        fprintf(stderr, "usage: map_touch FILE THREADS (1..%d) STRIDE (a divisor of %u)\n", MAXT, PAGE);
        return 2;
    }
    stride = (size_t)atoi(argv[3]);
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        perror(argv[1]);
        return 1;
    }
    len = (size_t)st.st_size;
    struct timespec t0, t1;
    double cpu0 = cpu_seconds();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    base = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise((void *)base, len, MADV_SEQUENTIAL);
    pthread_t tid[MAXT];
    struct part parts[MAXT];
    size_t share = (len / nthreads + PAGE - 1) / PAGE * PAGE;
    for (int i = 0; i < nthreads; i++) {
        parts[i].from = share * i < len ? share * i : len;
        parts[i].to = i == nthreads - 1 || share * (i + 1) > len ? len : share * (i + 1);
        pthread_create(&tid[i], NULL, touch, &parts[i]);
    }
    uint64_t sum = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(tid[i], NULL);
        sum += parts[i].sum;
    }
    munmap((void *)base, len);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double cpu = cpu_seconds() - cpu0;
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("{\"threads\": %d, \"stride\": %zu, \"bytes\": %zu, \"seconds\": %.6f, \"cpu\": %.6f, "
           "\"sum\": %llu}\n",
           nthreads, stride, len, s, cpu, (unsigned long long)sum);
    return 0;
}
