# Precompiled headers for the Qt and GoogleTest sides of the build (DDPDESK_PCH, on by default).
# Measured on a monitor test: 9.7 s of compiler CPU without, 4.6 s with Qt's headers precompiled;
# most translation units of ui/ and tests/ spend half their time parsing Qt. LibTorch's header
# only with clang (DDPDESK_TORCH_PCH, below): GCC's was 600 MB and saved about 7 % per unit.
#
# A library with many translation units gets a header of its own (target_precompile_headers).
# Test executables have one translation unit each, so a header of their own would cost more than
# it saves: each test folder builds one "provider" and its tests reuse it (REUSE_FROM), which
# needs the same compile options and definitions that the precompiled headers depend on, so the
# provider links what the folder's tests link. With GCC, -Winvalid-pch makes a mismatch visible
# in the build log (GCC then falls back to the headers themselves: slower, never wrong); clang
# refuses a header made with other language options, so a file with options of its own (e.g.
# -fno-math-errno) needs SKIP_PRECOMPILE_HEADERS.
option(DDPDESK_PCH "Precompile the Qt and GoogleTest headers" ON)
# clang writes the header's time into a precompiled header and refuses it when that differs, so
# one restored from ccache would be refused: leave the time out (what ccache asks of clang).
set(DDPDESK_PCH_FLAGS -Winvalid-pch)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  list(APPEND DDPDESK_PCH_FLAGS "SHELL:-Xclang -fno-pch-timestamp")
endif()

# ddpdesk_pch_provider(NAME HEADERS header... LIBS target...)
function(ddpdesk_pch_provider name)
  cmake_parse_arguments(ARG "" "" "HEADERS;LIBS" ${ARGN})
  if(NOT DDPDESK_PCH)
    return()
  endif()
  set(carrier ${CMAKE_CURRENT_BINARY_DIR}/${name}.cpp)
  file(CONFIGURE OUTPUT ${carrier} CONTENT "// Carries the precompiled headers of ${name}.\n")
  add_library(${name} OBJECT ${carrier})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_precompile_headers(${name} PRIVATE ${ARG_HEADERS})
  target_compile_options(${name} PRIVATE ${DDPDESK_PCH_FLAGS})
  set_target_properties(${name} PROPERTIES AUTOMOC OFF)
endfunction()

# ddpdesk_reuse_pch(TARGET PROVIDER): TARGET compiles with PROVIDER's precompiled headers.
function(ddpdesk_reuse_pch target provider)
  if(DDPDESK_PCH AND TARGET ${provider})
    target_precompile_headers(${target} REUSE_FROM ${provider})
    target_compile_options(${target} PRIVATE ${DDPDESK_PCH_FLAGS})
  endif()
endfunction()

# LibTorch's headers too, with clang only: there <torch/torch.h> precompiles to 107 MB and a
# LibTorch translation unit compiles in less than half the CPU (test_models.cpp: 7.5 s instead of
# 17.1 s; 17 s once to make the header). GCC's was 600 MB and saved about 7 %.
set(DDPDESK_TORCH_PCH OFF)
if(DDPDESK_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(DDPDESK_TORCH_PCH ON)
endif()

# ddpdesk_own_pch(TARGET header...): a library's own precompiled headers.
function(ddpdesk_own_pch target)
  if(DDPDESK_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
    target_compile_options(${target} PRIVATE ${DDPDESK_PCH_FLAGS})
  endif()
endfunction()

# Unity builds for the libraries with many small translation units (DDPDESK_UNITY, on by
# default): batches of their sources compile as one unit, so the headers they share (Qt,
# nlohmann-json, simdjson) are parsed, and their templates instantiated, once per batch.
option(DDPDESK_UNITY "Compile the many-file libraries in batches (unity build)" ON)

# A unity source includes the real ones by absolute path, so __FILE__ (LibTorch's TORCH_CHECK
# messages) would name the checkout in the installed binaries (test_install looks for that):
# the prefix map writes those paths relative to it, as a source compiled on its own gets them.
#
# ddpdesk_unity(TARGET): TARGET's sources in batches of 8.
function(ddpdesk_unity target)
  if(DDPDESK_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    target_compile_options(${target} PRIVATE "-fmacro-prefix-map=${PROJECT_SOURCE_DIR}/=")
  endif()
endfunction()

# ddpdesk_moc_headers(TARGET): moc on the header beside each of TARGET's .cpp files, one build
# step per header, instead of AUTOMOC. AUTOMOC's step for a library waited for the libraries it
# links, then asked the compiler for its predefines and had moc follow every include on the path
# (23 s for the GUI library, 11 s for the monitor's, on the build's critical path). moc on the
# header alone writes the same code (compared for all 50 headers with Q_OBJECT); a header
# without one gives an empty file (-nn: without the note), so adding Q_OBJECT to any of them
# needs no reconfigure. As with AUTOMOC, one unit (mocs_TARGET.cpp) includes them all: in the
# unity batches, the empty ones would have taken the places of real sources.
function(ddpdesk_moc_headers target)
  get_target_property(sources ${target} SOURCES)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_moc)
  set(mocs "")
  set(includes "// moc's output for the headers of ${target} (ddpdesk_moc_headers).\n")
  foreach(src IN LISTS sources)
    if(NOT src MATCHES "\\.cpp$" OR IS_ABSOLUTE "${src}")
      continue()
    endif()
    string(REGEX REPLACE "\\.cpp$" "" base "${src}")
    set(header ${CMAKE_CURRENT_SOURCE_DIR}/${base}.h)
    if(NOT EXISTS ${header})
      continue()
    endif()
    get_filename_component(name ${base} NAME)
    add_custom_command(OUTPUT ${dir}/moc_${name}.cpp
      COMMAND Qt6::moc -nn ${header} -o ${dir}/moc_${name}.cpp
      DEPENDS ${header} Qt6::moc VERBATIM)
    list(APPEND mocs ${dir}/moc_${name}.cpp)
    string(APPEND includes "#include \"moc_${name}.cpp\"\n")
  endforeach()
  set(all ${dir}/mocs_${target}.cpp)
  file(CONFIGURE OUTPUT ${all} CONTENT "${includes}")
  # The moc files are the target's (so its build makes them first), compiled only through `all`.
  set_source_files_properties(${mocs} PROPERTIES HEADER_FILE_ONLY ON)
  set_source_files_properties(${all} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  target_sources(${target} PRIVATE ${mocs} ${all})
  set_target_properties(${target} PROPERTIES AUTOMOC OFF)
endfunction()
