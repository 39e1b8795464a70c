#!/usr/bin/env bash
# paraplan's one entry point for building: installs the missing Debian packages, configures,
# builds, then runs what was asked.
#   ./build.sh run    build, then run the main job on the built-in default (paraplan rank,
#                     reports in reports/default.{md,csv,json})
#   ./build.sh test   build, then run every test (what CI runs)
#   ./build.sh asan   build with AddressSanitizer + UndefinedBehaviorSanitizer and run the tests
#   ./build.sh fuzz [SECONDS]   build the libFuzzer targets (clang-14, ASan + UBSan) and run each
#                     for SECONDS (default 20) on seeds from the presets and tests/data
#   ./build.sh tsan   build the concurrency test with ThreadSanitizer and run it
set -euo pipefail
cd "$(dirname "$0")"

what=${1:-run}
case "$what" in run|test|asan|fuzz|tsan) ;; *) echo "usage: ./build.sh run|test|asan|fuzz [SECONDS]|tsan" >&2; exit 2 ;; esac

# Debian packages the build needs; only the missing ones are installed.
packages=(cmake make g++ pkgconf python3-dev pybind11-dev libeigen3-dev libcli11-dev libyaml-cpp-dev libboost-math-dev doctest-dev python3-yaml)
if [ "$what" = fuzz ]; then packages+=(clang-14 libclang-rt-14-dev); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "build.sh: installing missing packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)

# The installed library as a consumer sees it: install BUILD_DIR, build tests/consumer
# against it with find_package, run the C++ and the C consumer.
consumer_find_package() {
  local build=$1 label=$2
  local prefix="$PWD/$build/install-test"
  rm -rf "$prefix"
  cmake --install "$build" --prefix "$prefix" >/dev/null
  cmake -S tests/consumer -B "$build/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$build/consumer" -j "$jobs"
  LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "./$build/consumer/consumer_cpp" >/dev/null
  LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "./$build/consumer/consumer_c" >/dev/null
  echo "consumer: find_package(paraplan) $label passed"
}
# A consumer without CMake: compile the library example with `pkg-config --cflags --libs
# paraplan` against an install prefix, then run it ($3 = --static for the static library).
consumer_pkg_config() {
  local prefix=$1 out=$2 static=${3:-}
  local pcdir
  pcdir=$(dirname "$(find "$prefix" -name paraplan.pc | head -n 1)")
  mkdir -p "$out"
  # shellcheck disable=SC2046
  g++ -std=c++20 -o "$out/example" examples/library/example.cpp \
    $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs $static paraplan)
  LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$out/example" >/dev/null
  echo "consumer: pkg-config ${static:+(static) }build and run passed"
}
only=(-DPARAPLAN_BUILD_TESTS=OFF -DPARAPLAN_BUILD_PYTHON=OFF -DPARAPLAN_BUILD_EXAMPLES=OFF -DPARAPLAN_BUILD_BENCH=OFF)
if [ "$what" = fuzz ]; then
  dir=build-fuzz
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DPARAPLAN_SANITIZE=ON -DPARAPLAN_FUZZ=ON "${only[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs" --target fuzz_yaml fuzz_calibrate fuzz_capi
  seconds=${2:-20}
  corpus="$dir/corpus"
  tests/fuzz/seed_corpus.sh "$corpus"
  for target in fuzz_yaml fuzz_calibrate fuzz_capi; do
    mkdir -p "$dir/findings/$target"
    # -seed=1: the same inputs in the same order on every run; -close_fd_mask=3: the targets
    # print nothing worth reading; a finding is written to findings/.
    "./$dir/$target" -seed=1 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 \
      -artifact_prefix="$dir/findings/$target/" "$corpus/$target" 2>&1 | tail -n 3
    echo "fuzz: $target ran ${seconds} s without a finding"
  done
  exit 0
elif [ "$what" = tsan ]; then
  dir=build-tsan
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARAPLAN_TSAN=ON "${only[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs" --target paraplan_concurrency
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "./$dir/paraplan_concurrency"
  exit 0
elif [ "$what" = asan ]; then
  dir=build-asan
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARAPLAN_SANITIZE=ON -DPARAPLAN_BUILD_PYTHON=OFF >/dev/null
else
  dir=build
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$dir" -j "$jobs"

case "$what" in
  run)
    # The main job: rank every strategy of the default search space (DeepSeek-V3 on
    # br166-ubbv2 at 16/32/64 nodes) and write the reports.
    "./$dir/paraplan" rank -o reports/default
    ;;
  asan)
    ctest --test-dir "$dir" --output-on-failure
    ;;
  test)
    ctest --test-dir "$dir" --output-on-failure
    # The installed library as a consumer sees it: find_package, the C++ and the C API.
    consumer_find_package "$dir" "build and run"
    consumer_pkg_config "$PWD/$dir/install-test" "$dir/consumer-pc" --static
    # The shared library: built, tested, installed and used the same two ways.
    shared=build-shared
    cmake -S . -B "$shared" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
      -DPARAPLAN_BUILD_BENCH=OFF -DPARAPLAN_BUILD_EXAMPLES=OFF -DPARAPLAN_BUILD_PYTHON=OFF >/dev/null
    cmake --build "$shared" -j "$jobs"
    ctest --test-dir "$shared" --output-on-failure
    consumer_find_package "$shared" "against the shared library"
    consumer_pkg_config "$PWD/$shared/install-test" "$shared/consumer-pc"
    ;;
esac
