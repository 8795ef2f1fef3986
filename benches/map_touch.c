/* The machine's floor for a memory-mapped reader: map a file read-only, load one byte of every
 * page, and hand the pages passed back to the kernel 2 MiB at a time, as burstcore's reader does
 * (MADV_DONTNEED, so that resident memory stays bounded). No framing, no computing: whatever a
 * mapped scan does, it pays at least this, so the one-thread figure bounds the speed any mapped
 * reader can reach on this machine, and the two-thread figure (equal halves, one per thread)
 * shows how far the kernel's side of mapping scales on two cores.
 *
 * Usage: map_touch FILE THREADS      prints {"threads": N, "bytes": B, "seconds": S, "sum": X}
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAXT 64
#define PAGE 4096u
#define UNIT (2u << 20)

static const unsigned char *base;
static size_t len;
static int nthreads;

struct part {
    size_t from, to;
    uint64_t sum;
};

static void *touch(void *arg) {
    struct part *p = arg;
    uint64_t sum = 0;
    /* Hand back whole 2 MiB stretches inside this part only: the rest belongs to a neighbour. */
    size_t released = (p->from + UNIT - 1) / UNIT * UNIT;
    for (size_t at = p->from; at < p->to; at += PAGE) {
        sum += base[at];
        while (released + UNIT <= at && released + UNIT <= p->to) {
            madvise((void *)(base + released), UNIT, MADV_DONTNEED);
            released += UNIT;
        }
    }
    p->sum = sum;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3 || (nthreads = atoi(argv[2])) < 1 || nthreads > MAXT) {
        fprintf(stderr, "usage: map_touch FILE THREADS (1..%d)\n", MAXT);
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        perror(argv[1]);
        return 1;
    }
    len = (size_t)st.st_size;
    struct timespec t0, t1;
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
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("{\"threads\": %d, \"bytes\": %zu, \"seconds\": %.6f, \"sum\": %llu}\n", nthreads, len, s,
           (unsigned long long)sum);
    return 0;
}
