# The Python client that training scripts import (`import ddpdesk`, python/ddpdesk/,
# docs/python-client.md): pure Python, nothing to build. The monitor puts its folder on a script
# rank's PYTHONPATH, found beside the running ddpdesk as <bin>/../share/ddpdesk/python: installed
# that is <prefix>/share/ddpdesk/python (cmake/install.cmake); in the build tree it is
# build/share/ddpdesk/python, a link to the source's python/ made here, so a build runs the
# source's client as it is edited and no compiled-in path names the source tree.
# DDPDESK_PYTHON_DIR: the source folder, for tests and benchmarks that start Python with it.
set(DDPDESK_PYTHON_DIR ${PROJECT_SOURCE_DIR}/python CACHE INTERNAL
  "The folder holding the ddpdesk Python package (put it on PYTHONPATH)")
set(DDPDESK_BUILD_PYTHON_DIR ${CMAKE_BINARY_DIR}/share/ddpdesk/python)
if(NOT EXISTS ${DDPDESK_BUILD_PYTHON_DIR})
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/share/ddpdesk)
  file(CREATE_LINK ${DDPDESK_PYTHON_DIR} ${DDPDESK_BUILD_PYTHON_DIR} SYMBOLIC)
endif()
# Debian's python3 (with python3-torch), not whichever python3 comes first on PATH: the tests
# and the benchmark run the client with the interpreter the project's ranks are tested with.
if(EXISTS /usr/bin/python3)
  set(_python3 /usr/bin/python3)
else()
  find_program(_python3 python3)
endif()
set(DDPDESK_PYTHON3 ${_python3} CACHE FILEPATH "The python3 that runs the Python client's tests")
