/* Crash on purpose, one way per argument, so tests get real cores.
 * bus: map a /dev/shm file, shrink it under the mapping, touch it -> SIGBUS BUS_ADRERR.
 * segv: write through a wild pointer -> SIGSEGV SEGV_MAPERR.  abort: abort() -> SIGABRT.
 * big MIB: touch MIB mebibytes of heap, then abort(): a multi-GB core for the benchmark. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) static void touch(volatile char *p, long n) {
    for (long i = 0; i < n; i += 4096) p[i] = 1;
}

__attribute__((noinline)) static int crash_bus(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) { perror("open"); return 2; }
    long len = 16 * 4096;
    if (ftruncate(fd, len) != 0) { perror("ftruncate"); return 2; }
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 2; }
    if (ftruncate(fd, 4096) != 0) { perror("ftruncate"); return 2; }
    touch(p, len);
    return 0;
}

__attribute__((noinline)) static int crash_segv(void) {
    volatile long *wild = (long *)0xdead0000;
    *wild = 42;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: crash bus PATH | segv | abort\n"); return 2; }
    if (!strcmp(argv[1], "bus") && argc > 2) return crash_bus(argv[2]);
    if (!strcmp(argv[1], "segv")) return crash_segv();
    if (!strcmp(argv[1], "abort")) abort();
    if (!strcmp(argv[1], "big") && argc > 2) {
        size_t n = (size_t)atol(argv[2]) << 20;
        char *p = malloc(n);
        if (!p) { perror("malloc"); return 2; }
        for (size_t i = 0; i < n; i += 4096) p[i] = (char)i | 1;
        abort();
    }
    return 2;
}
