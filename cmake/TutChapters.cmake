# tut_add_chapter(<folder> TITLE <title> PART <part> [MATH <math>] [OP <op>] [LAYOUT <layout>] [TAGS <tag>...] [ARCH <arch>] [ALLOW_SPILLS])
# tut_add_baseline(<folder> TITLE <title> PART <part> [MATH ...] [OP ...] [LAYOUT ...] [TAGS ...])
#
# One line per step, and the only place that says what a step is. Each call builds <folder>/main.cu
# into the executable <folder> (in <build>/bin), registers its `--self-test` with CTest (label gpu,
# exit 77 = skipped, one GPU test at a time), and records the step in <build>/chapters.tsv, the
# single list that the bench script reads. The step's declaration reaches main.cu as TUT_THIS_STEP
# (tut/core/step.hpp) and from there every CSV row the binary writes (columns part, math, op, tags).
#
#   PART   the family: gemm, conv or gcn (required)
#   MATH   the arithmetic: gemm and conv: fp32 (default) or tf32; gcn: fp64 (default, the only one)
#   OP     what the step computes: gemm: gemm (default); conv: conv (default) or conv_bias_relu (the
#          fused epilogue); gcn (required): xw, spmm, log_softmax or layer
#   LAYOUT conv: where the step's tensors keep their channels: nchw (default: x NCHW, w KCRS, y NKPQ)
#          or nhwc (channels last: x NHWC, w KRSC, y NPQK; the harness makes the copies outside the
#          timed run, reports what they cost, and turns y back to check it); gemm, gcn: none
#   TAGS   gemm: suite (runs chapter 10's suite of small and odd problems), planned (chooses a plan
#          per problem: bench.py times every candidate with --explain); conv: all_layers (runs every
#          layer of the table), layer_chart (shown in the per-layer chart and table); gcn: none
#   ARCH   the one CUDA architecture the step is built for instead of the project's (90a: Hopper-only
#          instructions such as wgmma); other GPUs skip it in one line
# A chapter kernel that spills registers to local memory fails the build (ptxas -warn-spills
# turned into an error) unless the chapter passes ALLOW_SPILLS because spilling is its subject.
# docs/architecture.md says how to add a step and a family.

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

# What each family accepts: its MATH and OP (the first of each is the default, except that a part in
# _TUT_OP_REQUIRED has no default OP) and its TAGS.
set(_TUT_PARTS gemm conv gcn)
set(_TUT_gemm_MATH fp32 tf32)
set(_TUT_gemm_OP gemm)
set(_TUT_gemm_TAGS suite planned)
set(_TUT_conv_MATH fp32 tf32)
set(_TUT_conv_OP conv conv_bias_relu)
set(_TUT_conv_TAGS all_layers layer_chart)
set(_TUT_conv_LAYOUT nchw nhwc)
set(_TUT_gcn_MATH fp64)
set(_TUT_gcn_OP xw spmm log_softmax layer)
set(_TUT_gcn_TAGS "")
set(_TUT_OP_REQUIRED gcn)  # a GCN step computes one of the layer's pieces: it says which

function(_tut_one_of kind folder what value allowed)
  if(NOT value IN_LIST allowed)
    string(REPLACE ";" ", " _valid "${allowed}")
    if(_valid STREQUAL "")
      set(_valid "none")
    endif()
    if(what STREQUAL "PART")
      message(FATAL_ERROR "${kind} ${folder}: PART '${value}' is not a family (valid: ${_valid})")
    endif()
    message(FATAL_ERROR "${kind} ${folder}: ${what} '${value}' is not valid for PART ${ARG_PART} (valid: ${_valid})")
  endif()
endfunction()

function(_tut_add_step kind folder)
  cmake_parse_arguments(ARG "ALLOW_SPILLS" "TITLE;PART;MATH;OP;LAYOUT;ARCH" "TAGS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${kind} ${folder}: unknown argument(s) '${ARG_UNPARSED_ARGUMENTS}' "
                        "(valid: TITLE PART MATH OP LAYOUT TAGS ARCH ALLOW_SPILLS)")
  endif()
  if(NOT ARG_TITLE)
    message(FATAL_ERROR "${kind} ${folder}: TITLE is required")
  endif()
  if(NOT ARG_PART)
    message(FATAL_ERROR "${kind} ${folder}: PART is required (valid: gemm, conv, gcn)")
  endif()
  _tut_one_of(${kind} ${folder} PART "${ARG_PART}" "${_TUT_PARTS}")
  set(_maths ${_TUT_${ARG_PART}_MATH})
  if(NOT ARG_MATH)
    list(GET _maths 0 ARG_MATH)
  endif()
  _tut_one_of(${kind} ${folder} MATH "${ARG_MATH}" "${_maths}")
  set(_ops ${_TUT_${ARG_PART}_OP})
  if(NOT ARG_OP)
    if(ARG_PART IN_LIST _TUT_OP_REQUIRED)
      string(REPLACE ";" ", " _valid "${_ops}")
      message(FATAL_ERROR "${kind} ${folder}: OP is required for PART ${ARG_PART} (valid: ${_valid})")
    endif()
    list(GET _ops 0 ARG_OP)
  endif()
  _tut_one_of(${kind} ${folder} OP "${ARG_OP}" "${_ops}")
  # LAYOUT: the family's first layout by default; a family without layouts accepts none.
  set(_layouts ${_TUT_${ARG_PART}_LAYOUT})
  if(NOT ARG_LAYOUT AND _layouts)
    list(GET _layouts 0 ARG_LAYOUT)
  endif()
  if(ARG_LAYOUT)
    _tut_one_of(${kind} ${folder} LAYOUT "${ARG_LAYOUT}" "${_layouts}")
  endif()
  foreach(tag IN LISTS ARG_TAGS)
    _tut_one_of(${kind} ${folder} TAGS "${tag}" "${_TUT_${ARG_PART}_TAGS}")
  endforeach()
  list(REMOVE_DUPLICATES ARG_TAGS)
  string(REPLACE ";" " " _tags "${ARG_TAGS}")
  string(TOUPPER "${ARG_MATH}" _math)
  string(SUBSTRING "${_math}" 0 1 _first)
  string(TOLOWER "${_math}" _rest)
  string(SUBSTRING "${_rest}" 1 -1 _rest)
  set(_math tut::Math::${_first}${_rest})  # fp32 -> tut::Math::Fp32
  if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/main.cu)
    message(FATAL_ERROR "${kind} ${folder}: ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/main.cu not found")
  endif()

  add_executable(${folder} ${folder}/main.cu)
  target_link_libraries(${folder} PRIVATE tut::${ARG_PART})
  target_include_directories(${folder} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/${folder})
  target_compile_definitions(${folder} PRIVATE TUT_STEP_NAME="${folder}" TUT_STEP_TITLE="${ARG_TITLE}"
                                               TUT_STEP_PART="${ARG_PART}" TUT_STEP_MATH=${_math}
                                               TUT_STEP_OP="${ARG_OP}" TUT_STEP_TAGS="${_tags}"
                                               TUT_STEP_LAYOUT="${ARG_LAYOUT}")
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
  # RESOURCE_LOCK gpu: under ctest -j the GPU tests run one at a time (each sizes its problems to the
  # free GPU memory, and timings in one would be disturbed by another).
  set_tests_properties(${folder}.self_test PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 RESOURCE_LOCK gpu)
  if(ARG_PART STREQUAL "gcn")
    # A malformed --graph file: one error line naming the file and line, exit 2, before the device
    # banner (no GPU needed: the harness reads the file first).
    add_test(NAME ${folder}.bad_graph_file COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:${folder}> -DFLAG=--graph
             "-DCONTENT=0 1\n2 x\n" -DLINE=2 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/${folder}_bad_input
             -P ${PROJECT_SOURCE_DIR}/cmake/CheckBadInput.cmake)
  endif()

  set_property(GLOBAL APPEND PROPERTY TUT_STEPS
    "${kind}\t${ARG_PART}\t${folder}\t${ARG_TITLE}\t$<TARGET_FILE:${folder}>\t${CMAKE_CURRENT_SOURCE_DIR}/${folder}\t${ARG_MATH}\t${ARG_OP}\t${_tags}\t${ARG_LAYOUT}")
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

# Writes <build>/chapters.tsv: kind, part, name, title, binary, source folder, math, op, tags (space-
# separated), layout (conv only); one step per line,
# in the order of the tut_add_* calls (baselines first, then chapters in reading order).
function(tut_write_manifest)
  get_property(steps GLOBAL PROPERTY TUT_STEPS)
  set(content "kind\tpart\tname\ttitle\tbinary\tsource\tmath\top\ttags\tlayout\n")
  foreach(step IN LISTS steps)
    string(APPEND content "${step}\n")
  endforeach()
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/chapters.tsv CONTENT "${content}")
endfunction()
