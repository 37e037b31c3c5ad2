# The template engine's differential test against Python Jinja2; included from tests/CMakeLists.txt
# after find_package(Python3 COMPONENTS Interpreter). The kernel templates are rendered with the
# contexts the library itself builds (written by the compile tests' "kernel contexts" case). The
# script exits 77 (skipped) when the interpreter has no jinja2 module.
if(Python3_Interpreter_FOUND)
  set(contexts ${CMAKE_CURRENT_BINARY_DIR}/kernel_contexts.json)
  add_test(NAME kernel_contexts COMMAND dg_compile_tests "--test-case=kernel contexts*")
  set_tests_properties(kernel_contexts PROPERTIES
    ENVIRONMENT "DG_KERNEL_CONTEXTS_OUT=${contexts}" FIXTURES_SETUP kernel_contexts)
  add_test(NAME codegen_jinja2_diff
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/unit/codegen/jinja2_diff.py
                   --codegen $<TARGET_FILE:dg-codegen> --contexts ${contexts})
  set_tests_properties(codegen_jinja2_diff PROPERTIES SKIP_RETURN_CODE 77 FIXTURES_REQUIRED kernel_contexts)
else()
  message(STATUS "No Python 3 interpreter: the codegen_jinja2_diff test is not registered")
endif()

# The CLI on directories and files it cannot use (missing, FIFOs, link loops): messages, no hang.
add_test(NAME codegen_cli COMMAND ${CMAKE_COMMAND} -DCODEGEN=$<TARGET_FILE:dg-codegen>
                                  -DWORK=${CMAKE_CURRENT_BINARY_DIR}/codegen-cli -P ${CMAKE_CURRENT_LIST_DIR}/codegen_cli.cmake)
set_tests_properties(codegen_cli PROPERTIES TIMEOUT 120)
