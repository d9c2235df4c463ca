# `cmake --install` lays ddpdesk out as a desktop application (GNUInstallDirs), and CPack turns
# that into a Debian package. The binaries go to bin/: the GUI and `ddpdesk --headless` start
# the ddpdesk-worker next to themselves (RunController::defaultWorkerProgram), torchrun/srun
# want the worker on PATH, and a Slurm script run's ranks start through the ddpdesk-rank beside
# the worker.
include(GNUInstallDirs)

# Libraries found outside the system directories (NCCL under /usr/local/cuda) stay findable
# from the installed binaries; the build tree's own paths are never recorded.
foreach(target ddpdesk ddpdesk-worker ddpdesk-rank)
  if(TARGET ${target})
    set_target_properties(${target} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
    install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

if(TARGET ddpdesk)
  set(_res ${PROJECT_SOURCE_DIR}/resources)
  install(FILES ${_res}/ddpdesk.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${_res}/icons/ddpdesk.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  install(FILES ${_res}/icons/ddpdesk.png
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/64x64/apps)
  # The presets the window offers (compiled in), also as files for `--config`.
  file(GLOB _presets ${_res}/presets/*.json)
  install(FILES ${_presets} DESTINATION ${CMAKE_INSTALL_DATADIR}/ddpdesk/presets)
endif()

# The Python client for training scripts (`import ddpdesk`): the monitor puts this folder on a
# script rank's PYTHONPATH (cmake/python_client.cmake).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/ddpdesk
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ddpdesk/python
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)

# The licence: GPL-3.0-or-later (LICENSE), since the window links QCustomPlot, which is GPL-3.0.
# Debian's place for it is /usr/share/doc/<package>/copyright, in the machine-readable format.
install(FILES ${PROJECT_SOURCE_DIR}/resources/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Debian package: `cpack -G DEB` in the build directory (README: "Install as a desktop application").
# Depends names the Debian packages that own the libraries the binaries link (checked against
# `dpkg -S` of their DT_NEEDED entries by tests/install/test_package.sh) plus what Qt needs at
# run time without linking it (the xcb platform plugin) and the BLAS LibTorch should use.
set(CPACK_PACKAGE_NAME ddpdesk)
set(CPACK_PACKAGE_VENDOR ddpdesk)
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_CONTACT "ddpdesk maintainers <ddpdesk@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "desktop launcher and live monitor for data-parallel training (LibTorch, Qt 6)")
set(CPACK_PACKAGE_DESCRIPTION
    "Pick a task, the number of CPU processes or GPUs, batch size and gradient accumulation \
steps, press Start and watch every rank's loss live; stop with a checkpoint and resume. \
Includes ddpdesk-worker, one rank of a run, for torchrun or Slurm.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6, libgcc-s1, libstdc++6, zlib1g, libtorch1.13, libgloo0, libopenblas0 | libopenblas0-pthread, \
libqt6core6 (>= 6.4), libqt6gui6 (>= 6.4), libqt6widgets6 (>= 6.4), libqt6network6 (>= 6.4), libqt6dbus6 (>= 6.4), \
libqt6printsupport6 (>= 6.4), qt6-qpa-plugins, libqcustomplot2.1-qt6, libsimdjson14")
# The engine's own extra runtime packages (engine/CMakeLists.txt: oneDNN for the matrix products).
get_property(_engine_depends GLOBAL PROPERTY DDPDESK_ENGINE_PACKAGE_DEPENDS)
foreach(_package IN LISTS _engine_depends)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", ${_package}")
endforeach()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dataset-fashion-mnist")
# gdb (or elfutils' eu-stack): the hang doctor's native stacks of a stalled run (docs/recovery.md).
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, gdb | elfutils")
set(CPACK_GENERATOR DEB)
include(CPack)
