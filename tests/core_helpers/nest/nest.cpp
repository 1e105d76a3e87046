// The C++ nested crash: main -> collate (here) -> loader::Batch::stage2 .. stage5 (libnestpp.so).
#include "nest.hpp"

namespace {
__attribute__((noinline)) int collate(int x) {
    loader::Batch b(x);
    return b.stage2(x + 1) + 7;
}
}  // namespace

int main(int argc, char **) { return collate(argc); }
