# tut_add_chapter(<folder> TITLE <title> [PART <part>] [ALLOW_SPILLS])
# tut_add_baseline(<folder> TITLE <title> [PART <part>])
#
# One line per step. Each call builds <folder>/main.cu into the executable <folder> (in
# <build>/bin), registers its `--self-test` with CTest (label gpu, exit 77 = skipped), and records
# the step in <build>/chapters.tsv, the single list that the bench script and the plots read.
#
# A chapter kernel that spills registers to local memory fails the build (ptxas -warn-spills
# turned into an error) unless the chapter passes ALLOW_SPILLS because spilling is its subject.

set(TUT_WARNING_FLAGS -Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion)

# Compile options shared by every target of the project.
function(tut_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${TUT_WARNING_FLAGS}>
    $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo --Werror=cross-execution-space-call>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(TUT_PTXAS_VERBOSE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-v>)
  endif()
endfunction()

function(_tut_add_step kind folder)
  # MATH fp32|tf32: the math the step computes in (default fp32); the harness picks the baseline
  # and the tolerance from it (main.cu passes TUT_STEP_MATH). ARCH: the one CUDA architecture the
  # step is built for instead of the project's (90a: Hopper-only instructions such as wgmma).
  cmake_parse_arguments(ARG "ALLOW_SPILLS" "TITLE;PART;MATH;ARCH" "" ${ARGN})
  if(NOT ARG_TITLE)
    message(FATAL_ERROR "${kind} ${folder}: TITLE is required")
  endif()
  if(NOT ARG_PART)
    set(ARG_PART gemm)
  endif()
  if(NOT ARG_MATH)
    set(ARG_MATH fp32)
  endif()
  if(ARG_MATH STREQUAL "fp32")
    set(_math tut::Math::Fp32)
  elseif(ARG_MATH STREQUAL "tf32")
    set(_math tut::Math::Tf32)
  else()
    message(FATAL_ERROR "${kind} ${folder}: MATH must be fp32 or tf32, not '${ARG_MATH}'")
  endif()
  if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/main.cu)
    message(FATAL_ERROR "${kind} ${folder}: ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/main.cu not found")
  endif()

  add_executable(${folder} ${folder}/main.cu)
  target_link_libraries(${folder} PRIVATE tut::${ARG_PART})
  target_include_directories(${folder} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/${folder})
  target_compile_definitions(${folder} PRIVATE TUT_STEP_NAME="${folder}" TUT_STEP_TITLE="${ARG_TITLE}"
                                               TUT_STEP_MATH=${_math})
  if(ARG_ARCH)
    if(NOT ARG_ARCH MATCHES "^([0-9]+)a?$")
      message(FATAL_ERROR "${kind} ${folder}: ARCH must look like 90a, not '${ARG_ARCH}'")
    endif()
    set_property(TARGET ${folder} PROPERTY CUDA_ARCHITECTURES ${ARG_ARCH})
    target_compile_definitions(${folder} PRIVATE TUT_STEP_ONLY_CC=${CMAKE_MATCH_1})
  else()
    target_compile_definitions(${folder} PRIVATE TUT_STEP_ONLY_CC=0)
  endif()
  set_target_properties(${folder} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  tut_target_defaults(${folder})
  if(NOT ARG_ALLOW_SPILLS)
    # -warn-spills reports any spill to local memory, -Werror makes ptxas fail on it.
    target_compile_options(${folder} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-warn-spills,-Werror>)
  endif()

  add_test(NAME ${folder}.self_test COMMAND ${folder} --self-test)
  set_tests_properties(${folder}.self_test PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)

  set_property(GLOBAL APPEND PROPERTY TUT_STEPS
    "${kind}\t${ARG_PART}\t${folder}\t${ARG_TITLE}\t$<TARGET_FILE:${folder}>\t${CMAKE_CURRENT_SOURCE_DIR}/${folder}\t${ARG_MATH}")
endfunction()

function(tut_add_chapter folder)
  if(NOT folder MATCHES "^[0-9][0-9]_[a-z0-9_]+$")
    message(FATAL_ERROR "chapter folder '${folder}' must be named NN_short_name")
  endif()
  _tut_add_step(chapter ${folder} ${ARGN})
endfunction()

function(tut_add_baseline folder)
  _tut_add_step(baseline ${folder} ${ARGN})
endfunction()

# Writes <build>/chapters.tsv: kind, part, name, title, binary, source folder, math; one step per line,
# in the order of the tut_add_* calls (baselines first, then chapters in reading order).
function(tut_write_manifest)
  get_property(steps GLOBAL PROPERTY TUT_STEPS)
  set(content "kind\tpart\tname\ttitle\tbinary\tsource\tmath\n")
  foreach(step IN LISTS steps)
    string(APPEND content "${step}\n")
  endforeach()
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/chapters.tsv CONTENT "${content}")
endfunction()
