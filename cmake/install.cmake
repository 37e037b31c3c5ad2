# What `cmake --install` puts in a prefix, included at the end of the top-level CMakeLists.txt:
#   lib/libdg.so*            stripped (DG_INSTALL_DEBUG_INFO=ON: the debug info beside it, in
#                            lib/debug/, linked with .gnu_debuglink)
#   include/dg.h, lib/pkgconfig/dg.pc, lib/cmake/dg/
#   bin/dg-info, bin/dg-tune, bin/dg-codegen, bin/dg-bench (where a CUDA compiler built it), stripped, each
#                            finding libdg in ../lib of its own prefix ($ORIGIN), so a prefix can move
# No installed file keeps a build-machine path in its RUNPATH: CMake replaces the build tree's
# RUNPATH by INSTALL_RPATH (empty for the library: NVRTC comes from the system loader's path).
# The Python wheel's copy (SKBUILD) is handled the same way: RUNPATH removed, stripped.

option(DG_INSTALL_DEBUG_INFO "Install libdg's debug info as a separate file (lib/debug/)" OFF)

# The programs that run from an installed prefix find libdg relative to themselves.
set(DG_TOOL_INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

# Strips a file of the install tree (optionally keeping its debug info in lib/debug/ first), when
# it was installed. Runs at install time; DESTDIR is honoured.
function(dg_install_strip relative_path component)
  if(NOT CMAKE_STRIP)
    return()
  endif()
  set(keep_debug "")
  if(DG_INSTALL_DEBUG_INFO AND CMAKE_OBJCOPY)
    set(keep_debug "
      get_filename_component(dg_name \"\${dg_file}\" NAME)
      set(dg_debug_dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/debug\")
      file(MAKE_DIRECTORY \"\${dg_debug_dir}\")
      execute_process(COMMAND \"${CMAKE_OBJCOPY}\" --only-keep-debug \"\${dg_file}\" \"\${dg_debug_dir}/\${dg_name}.debug\"
                      COMMAND_ERROR_IS_FATAL ANY)
      execute_process(COMMAND \"${CMAKE_OBJCOPY}\" --add-gnu-debuglink=\"\${dg_debug_dir}/\${dg_name}.debug\" \"\${dg_file}\"
                      COMMAND_ERROR_IS_FATAL ANY)")
  endif()
  install(CODE "
    set(dg_file \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${relative_path}\")
    if(EXISTS \"\${dg_file}\")
      ${keep_debug}
      execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-unneeded \"\${dg_file}\" COMMAND_ERROR_IS_FATAL ANY)
    endif()"
    COMPONENT ${component})
endfunction()

install(TARGETS dg EXPORT dgTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
dg_install_strip("${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:dg>" Unspecified)
install(FILES include/dg.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dg.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(EXPORT dgTargets NAMESPACE dg:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dg)
include(CMakePackageConfigHelpers)
configure_package_config_file(cmake/dgConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/dgConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dg)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dgConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dgConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/dgConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dg)

# OPTIONAL: a tree where only the library (and the demo) was built still installs; `cmake --build
# build` first for the tools.
foreach(tool dg-info dg-tune dg-codegen dg-bench)
  if(TARGET ${tool})
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH "${DG_TOOL_INSTALL_RPATH}")
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} OPTIONAL)
    dg_install_strip("${CMAKE_INSTALL_BINDIR}/${tool}" Unspecified)
  endif()
endforeach()

# The Python package's build (bindings/python/pyproject.toml, scikit-build-core): libdg.so as one
# file inside the package, where the binding's loader finds it, and nothing else. The build tree's
# RUNPATH (the toolkit's library folder, and the empty entry CMake pads it with, which would make
# the loader search the working directory) is removed: NVRTC comes from NVIDIA's wheel, which the
# binding loads first, or from the system loader.
if(SKBUILD)
  install(FILES $<TARGET_FILE:dg> DESTINATION dg RENAME libdg.so COMPONENT python)
  install(CODE "file(RPATH_REMOVE FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/dg/libdg.so\")" COMPONENT python)
  dg_install_strip("dg/libdg.so" python)
endif()

# The install tree as users get it: installed into a scratch prefix, then every ELF file's dynamic
# section (no empty, relative or build-machine RUNPATH entry), stripping, and each program's
# --version, --help and refusal of an unknown flag (cmake/check_install.py).
if(DG_BUILD_TESTS)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(DG_BUILD_TESTS AND Python3_Interpreter_FOUND)
  add_test(NAME install_tree
    COMMAND ${CMAKE_COMMAND} -E env CMAKE_COMMAND=${CMAKE_COMMAND}
            ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/check_install.py
            --build ${CMAKE_BINARY_DIR} --prefix ${CMAKE_BINARY_DIR}/tests/install-tree)
  # The programs users run from the build tree answer the same options as the installed ones.
  add_test(NAME tool_options
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/check_install.py
            --programs $<TARGET_FILE:dg-demo> $<TARGET_FILE:dg-moe-layer> $<TARGET_FILE:dg-gemm-estimate>)
endif()
