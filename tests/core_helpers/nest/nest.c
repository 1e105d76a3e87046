/* The nested crash: main -> level1 (here) -> nest_level2 .. nest_level5 (libnest.so), which
 * stores through a wild pointer: SIGSEGV five calls deep, through a shared library.
 * `nest threads`: two more threads, blocked in a wait, are running when it crashes. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "nest.h"

static pthread_barrier_t started;

__attribute__((noinline)) static void *idle_worker(void *arg) {
    (void)arg;
    pthread_barrier_wait(&started);
    for (;;) pause();
    return 0;
}

__attribute__((noinline)) static int level1(int x) {
    int r = nest_level2(x + 1);
    return r + 7;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "threads")) {
        pthread_t t[2];
        pthread_barrier_init(&started, 0, 3);
        for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, idle_worker, 0);
        pthread_barrier_wait(&started);
    }
    return level1(argc);
}
