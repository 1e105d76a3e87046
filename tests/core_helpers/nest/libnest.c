/* Levels 2-5 of the nested crash, in a shared library (see nest.c). Built with -O2
 * -fomit-frame-pointer: no frame pointers, so only CFI finds the callers. Each level does
 * work after its call, so the call is no tail call; `poke` is always inlined into level 5
 * (an inlined frame for DWARF), and it stores through an address held in a global. */
#include "nest.h"

volatile long nest_target = 0xdead0000;

static inline __attribute__((always_inline)) int poke(int v) {
    *(volatile int *)nest_target = v;
    return v * 2;
}

__attribute__((noinline)) int nest_level5(int x) {
    int r = poke(x + 5);
    return r + 1;
}

__attribute__((noinline)) int nest_level4(int x) {
    int r = nest_level5(x + 1);
    return r * 3 + x;
}

__attribute__((noinline)) int nest_level3(int x) {
    int r = nest_level4(x + 1);
    return r ^ x;
}

__attribute__((noinline)) int nest_level2(int x) {
    int r = nest_level3(x + 1);
    return r - x;
}
