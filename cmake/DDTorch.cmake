# libtorch from the pinned torch wheel in .venv (see requirements.txt).
#
# We do not call find_package(Torch): its Caffe2 config probes for a GPU and links the system CUDA
# toolkit's runtime (13.0 here) while the wheel was built against the CUDA 13.2 libraries it ships under
# site-packages/nvidia. Instead `dd::torch` links the wheel's own libraries, so the binaries load exactly
# the CUDA libraries torch itself uses. The programs link libtorch_cpu and libc10 only: libtorch_cuda, and the
# CUDA libraries under it, are loaded while the program starts and only where an NVIDIA driver exists
# (core/memory/cuda_backend.h), which saves a CPU-only run ~0.4 s and ~370 MB of resident pages.
# DD_TORCH_CUDA=OFF never loads it and packages without it: a CPU-only install whose private copy of libtorch is
# ~0.5 GB instead of ~4 GB (see docs/install.md).
option(DD_TORCH_CUDA "Load libtorch's CUDA backend (libtorch_cuda) where an NVIDIA driver exists, and package it" ON)
if(NOT DEFINED DD_PYTHON)
  if(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
    set(DD_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  else()
    find_program(DD_PYTHON python3 REQUIRED)
  endif()
endif()
set(DD_PYTHON ${DD_PYTHON} CACHE FILEPATH "Python interpreter whose torch provides libtorch")
execute_process(
  COMMAND ${DD_PYTHON} -c "import torch, os, sysconfig; print(os.path.dirname(torch.__file__), end=';'); print(torch.__version__, end=';'); print(int(torch.compiled_with_cxx11_abi()), end=';'); print(sysconfig.get_paths()['purelib'], end='')"
  OUTPUT_VARIABLE _dd_torch RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "DiffusionDesk needs the pinned torch wheel: run ./scripts/setup.sh (python: ${DD_PYTHON})")
endif()
list(GET _dd_torch 0 DD_TORCH_DIR)
list(GET _dd_torch 1 DD_TORCH_VERSION)
list(GET _dd_torch 2 _dd_abi)
list(GET _dd_torch 3 _dd_site)
message(STATUS "libtorch ${DD_TORCH_VERSION} from ${DD_TORCH_DIR}")

set(DD_TORCH_LIB_DIR ${DD_TORCH_DIR}/lib)
file(GLOB _dd_nvidia_lib_dirs LIST_DIRECTORIES true ${_dd_site}/nvidia/*/lib)
set(_dd_cuda_include ${_dd_site}/nvidia/cu13/include)
if(NOT EXISTS ${_dd_cuda_include}/cuda_runtime_api.h AND EXISTS /usr/local/cuda/include/cuda_runtime_api.h)
  set(_dd_cuda_include /usr/local/cuda/include)  # a torch without the CUDA header wheels, beside a toolkit
endif()

add_library(dd_torch INTERFACE)
add_library(dd::torch ALIAS dd_torch)
target_include_directories(dd_torch SYSTEM INTERFACE
  ${DD_TORCH_DIR}/include ${DD_TORCH_DIR}/include/torch/csrc/api/include)
if(DD_TORCH_CUDA AND EXISTS ${_dd_cuda_include})
  target_include_directories(dd_torch SYSTEM INTERFACE ${_dd_cuda_include})
  set(DD_HAVE_CUDA_HEADERS ON)
endif()
target_compile_definitions(dd_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=${_dd_abi})
set(_dd_rpath_link "")
foreach(d ${_dd_nvidia_lib_dirs})
  string(APPEND _dd_rpath_link ",-rpath-link,${d}")
endforeach()
target_link_libraries(dd_torch INTERFACE ${DD_TORCH_LIB_DIR}/libtorch_cpu.so ${DD_TORCH_LIB_DIR}/libc10.so
  "-Wl,-rpath,${DD_TORCH_LIB_DIR}${_dd_rpath_link}")
