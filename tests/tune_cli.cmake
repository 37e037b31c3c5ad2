# dg-tune's command line without a GPU: help and version, usage errors (exit 2, the usage text),
# an unreadable list (exit 1), and a list that fails before any GPU work (exit 1 with the reason).
# No table is written by a failing run. --prepare --offline compiles a list's kernels for a named
# GPU into the JIT cache with no GPU. Run as
#   cmake -DTUNE=<dg-tune> -DWORK=<scratch dir> -DLISTS=<tools/problems> -P tune_cli.cmake
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/bad.txt "dense fp8 nt n=7168 k=2048\n")
file(WRITE ${WORK}/small.txt "dense bf16 nt n=256 k=512 m=16,32\n")

# expect(<exit code> <stdout+stderr needle> <args>...)
function(expect code needle)
  execute_process(COMMAND ${TUNE} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc STREQUAL "${code}" OR NOT "${out}${err}" MATCHES "${needle}")
    message(SEND_ERROR "dg-tune ${ARGN}: exit '${rc}' (expected ${code}), output: ${out}${err}\nexpected it to match: ${needle}")
  endif()
endfunction()

expect(0 "Usage: dg-tune" --help)
expect(0 "dg-tune \\(libdg\\) [0-9]+\\.[0-9]+\\.[0-9]+" --version)
expect(2 "no problem list" )
expect(2 "unknown option '--bogus'" --bogus ${LISTS}/deepseek-v3.txt)
expect(2 "bad candidate count" -c 17 ${LISTS}/deepseek-v3.txt)
expect(2 "bad repetitions" --repetitions 0 ${LISTS}/deepseek-v3.txt)
expect(2 "more than one problem list" a.txt b.txt)
expect(1 "cannot open ${WORK}/missing.txt" ${WORK}/missing.txt)
# Without a GPU the stream cannot be created; with one, the list's line 1 is refused. Either way
# the run fails, says why and writes nothing.
expect(1 "dg-tune: DG_ERROR_" -o ${WORK}/table.txt ${WORK}/bad.txt)
if(EXISTS ${WORK}/table.txt)
  message(SEND_ERROR "a failing dg-tune wrote ${WORK}/table.txt")
endif()

expect(2 "--offline needs --prepare" --offline "NVIDIA H200" ${WORK}/small.txt)
expect(2 "bad SM count" --prepare --offline "NVIDIA H200" --sms 0 ${WORK}/small.txt)
expect(1 "gpu_name" --prepare --offline " H200" ${WORK}/small.txt)
# The offline run fills the cache it is given and writes no table.
execute_process(COMMAND ${CMAKE_COMMAND} -E env DG_JIT_CACHE_DIR=${WORK}/cache
                ${TUNE} --prepare --offline "NVIDIA H200" -o ${WORK}/table.txt ${WORK}/small.txt
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc STREQUAL "0" OR NOT "${out}${err}" MATCHES "prepared the kernels of 2 problems")
  message(SEND_ERROR "dg-tune --prepare --offline: exit '${rc}', output: ${out}${err}")
endif()
file(GLOB cubins ${WORK}/cache/libdg/*.cubin)
if(NOT cubins)
  message(SEND_ERROR "dg-tune --prepare --offline compiled nothing into ${WORK}/cache")
endif()
if(EXISTS ${WORK}/table.txt)
  message(SEND_ERROR "dg-tune --prepare wrote ${WORK}/table.txt")
endif()
