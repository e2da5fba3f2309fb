# libtorch from the pinned torch wheel in .venv (see requirements.txt). The wheel is CUDA-enabled;
# its CMake config finds the CUDA toolkit when present, so CUDA code paths compile here too.
if(NOT DEFINED DD_PYTHON)
  if(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
    set(DD_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  else()
    find_program(DD_PYTHON python3 REQUIRED)
  endif()
endif()
set(DD_PYTHON ${DD_PYTHON} CACHE FILEPATH "Python interpreter whose torch provides libtorch")
execute_process(COMMAND ${DD_PYTHON} -c "import torch, os; print(torch.utils.cmake_prefix_path, end='')"
                OUTPUT_VARIABLE DD_TORCH_PREFIX RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "DiffusionDesk needs the pinned torch wheel: run ./scripts/setup.sh (python: ${DD_PYTHON})")
endif()
list(APPEND CMAKE_PREFIX_PATH ${DD_TORCH_PREFIX})
find_package(Torch REQUIRED)
# Torch's config adds its flags globally through TORCH_CXX_FLAGS (ABI define); keep them target-scoped.
get_filename_component(DD_TORCH_LIB_DIR ${TORCH_LIBRARY} DIRECTORY)
