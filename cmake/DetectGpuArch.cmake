# Sets <out> to the compute capability of GPU 0 as CMake wants it ("90" for 9.0),
# or to 90 when no GPU or driver is visible (a build machine, CI).
function(tut_detect_gpu_arch out)
  set(_arch 90)
  find_program(_tut_nvidia_smi nvidia-smi)
  if(_tut_nvidia_smi)
    execute_process(COMMAND ${_tut_nvidia_smi} --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE _cap RESULT_VARIABLE _rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_rc EQUAL 0 AND _cap MATCHES "^([0-9]+)\\.([0-9]+)")
      set(_arch "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      message(STATUS "Local GPU has compute capability ${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
    endif()
  endif()
  if(_arch STREQUAL "90" AND NOT _cap)
    message(STATUS "No local GPU found: building for sm_90 (override with -DCMAKE_CUDA_ARCHITECTURES=..)")
  endif()
  set(${out} ${_arch} PARENT_SCOPE)
endfunction()
