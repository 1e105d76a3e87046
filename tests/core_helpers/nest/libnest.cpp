// The C++ nested crash's library: a class's methods five calls deep (see nest.cpp), built like
// libnest.c (-O2 -fomit-frame-pointer). `Batch::poke` is always inlined into `stage5`.
#include "nest.hpp"

volatile long nest_cpp_target = 0xdead0000;

namespace loader {

inline __attribute__((always_inline)) int Batch::poke(int v) {
    *reinterpret_cast<volatile int *>(nest_cpp_target) = v + size_;
    return v * 2;
}

__attribute__((noinline)) int Batch::stage5(int x) { return poke(x + 5) + 1; }
__attribute__((noinline)) int Batch::stage4(int x) { return stage5(x + 1) * 3 + x; }
__attribute__((noinline)) int Batch::stage3(int x) { return stage4(x + 1) ^ x; }
__attribute__((noinline)) int Batch::stage2(int x) { return stage3(x + 1) - x; }

}  // namespace loader
