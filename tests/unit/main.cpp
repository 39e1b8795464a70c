#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // As the CLI does (src/cli/main.cpp): keep the heap the evaluations free, so the recorded
  // fits' thousands of evaluations do not page-fault it in again each time.
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
#endif
  doctest::Context context(argc, argv);
  return context.run();
}
