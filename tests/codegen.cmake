# The template engine's differential test against Python Jinja2; included from tests/CMakeLists.txt
# after find_package(Python3 COMPONENTS Interpreter). The script exits 77 (skipped) when the
# interpreter has no jinja2 module.
if(Python3_Interpreter_FOUND)
  add_test(NAME codegen_jinja2_diff
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/unit/codegen/jinja2_diff.py
                   --codegen $<TARGET_FILE:dg-codegen>)
  set_tests_properties(codegen_jinja2_diff PROPERTIES SKIP_RETURN_CODE 77)
else()
  message(STATUS "No Python 3 interpreter: the codegen_jinja2_diff test is not registered")
endif()
