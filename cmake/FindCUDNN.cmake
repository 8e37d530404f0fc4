# FindCUDNN: cuDNN's header and library, from the CUDA toolkit, the system's packages, or a pip
# `nvidia-cudnn-cu*` wheel (its site-packages/nvidia/cudnn folder). Hints: CUDNN_ROOT (a folder with
# include/ and lib/), and TUT_PYTHON / python3 to find the wheel.
#
# Defines CUDNN_FOUND, CUDNN_VERSION, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY and the target CUDNN::cudnn.
set(_cudnn_hints)
if(CUDNN_ROOT)
  list(APPEND _cudnn_hints ${CUDNN_ROOT})
endif()
if(DEFINED ENV{CUDNN_ROOT})
  list(APPEND _cudnn_hints $ENV{CUDNN_ROOT})
endif()
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _cudnn_hints ${CUDAToolkit_LIBRARY_ROOT})
endif()
# A pip wheel: ask the Python the project uses (or python3) where nvidia.cudnn is installed.
foreach(_py IN ITEMS "${TUT_PYTHON}" python3)
  if(_py)
    execute_process(COMMAND ${_py} -c "import nvidia.cudnn, os; print(os.path.dirname(list(nvidia.cudnn.__path__)[0] + '/x'))"
                    OUTPUT_VARIABLE _cudnn_wheel RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_rc EQUAL 0 AND _cudnn_wheel)
      list(APPEND _cudnn_hints ${_cudnn_wheel})
      break()
    endif()
  endif()
endforeach()

find_path(CUDNN_INCLUDE_DIR cudnn.h
          HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS}
          PATH_SUFFIXES include)
# The wheel ships libcudnn.so.9 without the unversioned link.
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 libcudnn.so.8
             HINTS ${_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)

if(CUDNN_INCLUDE_DIR)
  foreach(_h cudnn_version.h cudnn.h)
    if(EXISTS ${CUDNN_INCLUDE_DIR}/${_h})
      file(STRINGS ${CUDNN_INCLUDE_DIR}/${_h} _v REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
      if(_v)
        string(REGEX REPLACE ".*CUDNN_MAJOR +([0-9]+).*" "\\1" _major "${_v}")
        string(REGEX REPLACE ".*CUDNN_MINOR +([0-9]+).*" "\\1" _minor "${_v}")
        string(REGEX REPLACE ".*CUDNN_PATCHLEVEL +([0-9]+).*" "\\1" _patch "${_v}")
        set(CUDNN_VERSION "${_major}.${_minor}.${_patch}")
        break()
      endif()
    endif()
  endforeach()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR VERSION_VAR CUDNN_VERSION)
if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES IMPORTED_LOCATION ${CUDNN_LIBRARY}
                                                INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
