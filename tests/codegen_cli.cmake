# dg-codegen on template directories and files it cannot use: each run must end (TIMEOUT fails it
# instead of hanging), exit non-zero and say why on stderr. Run as
#   cmake -DCODEGEN=<dg-codegen> -DWORK=<scratch dir> -P codegen_cli.cmake
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/tree/kernels)
file(WRITE ${WORK}/tree/kernels/ok.cu.j2 "k={{ k }}\n")
file(WRITE ${WORK}/ctx.json "{\"k\": 7}")
set(failures 0)

# expect(<exit code> <stderr needle> <args>...)
function(expect code needle)
  execute_process(COMMAND ${CODEGEN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 20)
  if(NOT rc STREQUAL "${code}" OR (NOT needle STREQUAL "" AND NOT err MATCHES "${needle}"))
    message(SEND_ERROR "dg-codegen ${ARGN}: exit '${rc}' (expected ${code}), stderr: ${err}\nexpected stderr to match: ${needle}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

# Working baselines: the list and a render with a context file.
expect(0 "" --template-dir ${WORK}/tree --list)
if(NOT last_out STREQUAL "ok\n")
  message(SEND_ERROR "--list printed '${last_out}' (expected ok)")
endif()
expect(0 "" --template-dir ${WORK}/tree ok --context ${WORK}/ctx.json)
if(NOT last_out STREQUAL "k=7\n")
  message(SEND_ERROR "render printed '${last_out}' (expected k=7)")
endif()

# --list on a directory that does not exist, or has no kernels/: a message and exit 1.
expect(1 "cannot list .*nothing/kernels: it does not exist" --template-dir ${WORK}/nothing --list)
file(MAKE_DIRECTORY ${WORK}/empty)
expect(1 "cannot list .*empty/kernels" --template-dir ${WORK}/empty --list)

# A kernels/ symlink loop: a clear message, not a raw filesystem exception.
file(MAKE_DIRECTORY ${WORK}/loop)
file(CREATE_LINK ${WORK}/loop/other ${WORK}/loop/kernels SYMBOLIC)
file(CREATE_LINK ${WORK}/loop/kernels ${WORK}/loop/other SYMBOLIC)
expect(1 "link loop" --template-dir ${WORK}/loop --list)
expect(1 "link loop" --template-dir ${WORK}/loop ok)

# FIFOs as the template or the context: refused at once (no writer would ever come).
execute_process(COMMAND mkfifo ${WORK}/tree/kernels/fifo.cu.j2 ${WORK}/ctx.fifo RESULT_VARIABLE mkfifo_rc)
if(mkfifo_rc EQUAL 0)
  expect(1 "fifo.cu.j2 is not a regular file \\(a FIFO\\)" --template-dir ${WORK}/tree fifo)
  expect(1 "ctx.fifo is not a regular file \\(a FIFO\\)" --template-dir ${WORK}/tree ok --context ${WORK}/ctx.fifo)
else()
  message(SEND_ERROR "mkfifo failed: cannot test FIFOs")
endif()

# A directory as the context file.
expect(1 "is not a regular file \\(a directory\\)" --template-dir ${WORK}/tree ok --context ${WORK}/empty)
# A missing context file.
expect(1 "cannot read .*missing.json" --template-dir ${WORK}/tree ok --context ${WORK}/missing.json)
file(REMOVE_RECURSE ${WORK})
