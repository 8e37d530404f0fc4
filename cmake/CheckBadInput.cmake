# Runs BIN with a malformed input file (cmake -DBIN=... -DFLAG=--graph -DCONTENT="..." -DWORK=dir -P
# CheckBadInput.cmake) and checks the contract of docs/measuring.md for bad input: exit code 2, one
# error line on stderr naming the flag, the file and the line, and nothing on stdout (no device
# banner first). Needs no GPU: the file is read before the device is opened.
file(MAKE_DIRECTORY "${WORK}")
set(bad "${WORK}/malformed_input.txt")
file(WRITE "${bad}" "${CONTENT}")
execute_process(COMMAND "${BIN}" ${FLAG} "${bad}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(STRIP "${err}" err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "expected exit code 2, got ${rc}; stdout: ${out}; stderr: ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "expected nothing on stdout before the error, got: ${out}")
endif()
if(NOT err MATCHES "^error: ${FLAG}: [^\n]*malformed_input\\.txt:${LINE}: [^\n]+$")
  message(FATAL_ERROR "expected one line 'error: ${FLAG}: FILE:${LINE}: ...', got: ${err}")
endif()
