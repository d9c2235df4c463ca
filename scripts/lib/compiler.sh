# Sourced by scripts/build.sh and scripts/test-sanitizers.sh: which C++ compiler a build
# directory is configured with, in one place.
#
# clang, not GCC, for both builds: on this project's LibTorch and Qt translation units it
# compiles in 40-70 % of GCC's time (engine/worker.cpp at -O3: 13.9 s against 26.9 s;
# tests/engine/test_tensor_file.cpp 20.7 s against 29.5 s; clang's precompiled Qt headers are
# also far smaller than GCC's), and a fresh machine compiles everything twice. Debian's LibTorch
# and Qt are GCC builds; clang links against them through the same libstdc++.

# ddpdesk_cxx OVERRIDE: the compiler to use: OVERRIDE when set, else clang++, else the system's
# c++ (a machine where scripts/install-deps.sh has not run yet).
ddpdesk_cxx() {
  if [ -n "$1" ]; then
    command -v "$1" || { echo "ddpdesk: compiler '$1' not found" >&2; return 1; }
  else
    command -v clang++ || command -v c++
  fi
}

# ddpdesk_forget_other_compiler DIR CXX: CMake cannot change a configured directory's compiler,
# so a DIR configured with another one is removed (it is rebuilt, through ccache).
ddpdesk_forget_other_compiler() {
  local dir=$1 cxx=$2
  if [ -f "$dir/CMakeCache.txt" ] &&
    ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=$cxx\$" "$dir/CMakeCache.txt"; then
    echo "ddpdesk: $dir was configured with another compiler; configuring it for $cxx" >&2
    rm -rf "$dir"
  fi
}
