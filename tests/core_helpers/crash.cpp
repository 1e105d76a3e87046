// A C++ program that dies of SIGSEGV inside a member function of a class template in a
// namespace, so the core's innermost frame has a mangled name that must be demangled. Built
// and crashed at test time (core_helpers::cpp_helper); written for this project.
#include <cstdio>
#include <cstdlib>

namespace trainwreck_test {
namespace loader {

template <typename T>
struct Batch {
    T *slot;
    __attribute__((noinline)) void fill(T value) {
        // The slot was never allocated: a write through null.
        T *volatile p = slot;
        *p = value;
    }
};

__attribute__((noinline)) int collate(int n) {
    Batch<long> b{nullptr};
    b.fill(static_cast<long>(n));
    return n;
}

}  // namespace loader
}  // namespace trainwreck_test

int main(int argc, char **argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 7;
    std::printf("%d\n", trainwreck_test::loader::collate(n));
    return 0;
}
