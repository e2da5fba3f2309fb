# Install rules and packages (`cpack`: a .deb and a relocatable .tar.gz). See docs/install.md.
#
#   <prefix>/bin/diffusiondesk, diffusiondesk-cli   RUNPATH $ORIGIN/../lib/diffusiondesk
#   <prefix>/lib/diffusiondesk/                      the libtorch (and, with DD_TORCH_CUDA, CUDA) libraries the
#                                                    binaries were linked against: private, never on the system
#                                                    library path, RPATH $ORIGIN so they only find each other
#   <prefix>/share/diffusiondesk/                    resources/ (core/resources.cpp looks in <exe>/../share/diffusiondesk)
#   <prefix>/share/{applications,icons,mime,metainfo} desktop integration (packaging/)
#   <prefix>/share/bash-completion/completions/     diffusiondesk-cli's completion, written by the built CLI
#
# Qt, OpenCV, OpenSSL and zlib come from the system: the .deb depends on Debian's runtime packages
# (computed by dpkg-shlibdeps), the tarball expects them installed.
set(DD_PRIVATE_LIB_DIR lib/diffusiondesk)
get_filename_component(_dd_root ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
set(_dd_pkg ${_dd_root}/packaging)

set(_dd_programs diffusiondesk-cli)
if(TARGET diffusiondesk)
  list(APPEND _dd_programs diffusiondesk)
endif()
set_target_properties(${_dd_programs} PROPERTIES INSTALL_RPATH "$ORIGIN/../${DD_PRIVATE_LIB_DIR}")
install(TARGETS ${_dd_programs} RUNTIME DESTINATION bin)
install(DIRECTORY ${_dd_root}/resources/ DESTINATION share/diffusiondesk)

# The wheel's libraries the programs load: their DT_NEEDED closure inside the wheel (resolved at install
# time by packaging/bundle_libs.cmake) plus what torch opens with dlopen, which no DT_NEEDED names.
get_filename_component(_dd_wheel_site ${DD_TORCH_DIR} DIRECTORY)
file(GLOB _dd_wheel_lib_dirs LIST_DIRECTORIES true ${_dd_wheel_site}/nvidia/*/lib)
set(_dd_dlopened "")
if(DD_TORCH_CUDA)
  # CUDA linear algebra (torch), cuDNN's per-operation libraries, NVRTC's builtins. (libcaffe2_nvrtc is
  # only for Python's torch: libtorch_cuda links NVRTC itself; it would also demand the driver's libcuda.)
  # libtorch_cuda itself is loaded at run time too (core/memory/cuda_backend.h); its closure comes with it.
  file(GLOB _dd_dlopened ${DD_TORCH_LIB_DIR}/libtorch_cuda.so ${DD_TORCH_LIB_DIR}/libtorch_cuda_linalg.so
    ${_dd_wheel_site}/nvidia/cudnn/lib/libcudnn*.so.* ${_dd_wheel_site}/nvidia/cu13/lib/libnvrtc-builtins.so.*)
endif()
set(_dd_exe_files "")
foreach(t ${_dd_programs})
  list(APPEND _dd_exe_files "$<TARGET_FILE:${t}>")
endforeach()
install(CODE "
  set(DD_BUNDLE_EXECUTABLES \"${_dd_exe_files}\")
  set(DD_BUNDLE_DLOPENED \"${_dd_dlopened}\")
  set(DD_BUNDLE_SEARCH_DIRS \"${DD_TORCH_LIB_DIR};${_dd_wheel_lib_dirs}\")
  set(DD_BUNDLE_DESTINATION \"${DD_PRIVATE_LIB_DIR}\")
  include(\"${_dd_pkg}/bundle_libs.cmake\")")

# The CLI writes its bash completion from its option tables (app/cli_completion.cpp), so it cannot drift from
# the options; bash-completion loads it from there when the command is first completed.
set(_dd_completion ${CMAKE_BINARY_DIR}/share/bash-completion/completions/diffusiondesk-cli)
add_custom_command(OUTPUT ${_dd_completion}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/share/bash-completion/completions
  COMMAND diffusiondesk-cli completion bash --out ${_dd_completion}
  DEPENDS diffusiondesk-cli VERBATIM)
add_custom_target(dd_bash_completion ALL DEPENDS ${_dd_completion})
install(FILES ${_dd_completion} DESTINATION share/bash-completion/completions)

# Desktop integration. Debian's dpkg triggers (desktop-file-utils, shared-mime-info, hicolor-icon-theme)
# refresh the caches, so the .deb needs no postinst for them.
install(FILES ${_dd_pkg}/diffusiondesk.desktop DESTINATION share/applications)
install(FILES ${_dd_pkg}/diffusiondesk.metainfo.xml DESTINATION share/metainfo)
install(FILES ${_dd_pkg}/diffusiondesk-mime.xml DESTINATION share/mime/packages RENAME diffusiondesk.xml)
install(FILES ${_dd_pkg}/icons/diffusiondesk.svg DESTINATION share/icons/hicolor/scalable/apps)
foreach(s 16 22 24 32 48 64 128 256 512)
  install(FILES ${_dd_pkg}/icons/diffusiondesk-${s}.png DESTINATION share/icons/hicolor/${s}x${s}/apps RENAME diffusiondesk.png)
endforeach()

# ---- CPack: one .deb per variant, and a relocatable tarball with a launcher.
# The CUDA build is "diffusiondesk"; a DD_TORCH_CUDA=OFF build is "diffusiondesk-cpu"; they replace each other.
if(DD_TORCH_CUDA)
  set(CPACK_PACKAGE_NAME diffusiondesk)
  set(_dd_other diffusiondesk-cpu)
  set(_dd_variant "with the CUDA libraries of the PyTorch ${DD_TORCH_VERSION} wheel (runs on NVIDIA GPUs, falls back to the CPU)")
else()
  set(CPACK_PACKAGE_NAME diffusiondesk-cpu)
  set(_dd_other diffusiondesk)
  set(_dd_variant "CPU-only build (no CUDA libraries)")
endif()
set(CPACK_PACKAGE_VENDOR "DiffusionDesk")
set(CPACK_PACKAGE_CONTACT "DiffusionDesk maintainers <diffusiondesk@users.noreply.github.com>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Stable Diffusion image generation desktop app")
set(CPACK_PACKAGE_DESCRIPTION "DiffusionDesk generates images from text prompts with Stable Diffusion 1.x/2.x and SDXL
models on your own computer: a Qt desktop app (diffusiondesk) and a command-line tool (diffusiondesk-cli).
This package is the ${_dd_variant}; libtorch is bundled privately under /usr/lib/diffusiondesk.")
set(CPACK_PACKAGE_FILE_NAME ${CPACK_PACKAGE_NAME}-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR})
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_STRIP_FILES ON)            # our two programs; the wheel's libraries ship already stripped
set(CPACK_THREADS 0)                 # zstd/xz use all cores (run cpack under `nice` on a shared machine)
set(CPACK_PRE_BUILD_SCRIPTS ${_dd_pkg}/tarball_extras.cmake)
set(CPACK_DD_PACKAGING_DIR ${_dd_pkg})  # for tarball_extras.cmake (CPackConfig.cmake carries CPACK_* only)

set(CPACK_DEBIAN_PACKAGE_NAME ${CPACK_PACKAGE_NAME})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION graphics)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE zstd)   # dpkg >= 1.21.18 (Debian 12); several times faster than xz on GBs of CUDA code
# Runtime dependencies (Qt 6, OpenCV, OpenSSL, zlib, libc, libstdc++) from the ELF files; the private
# libraries are found through their $ORIGIN paths and, outside public library directories, never demanded
# from other packages.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS usr/${DD_PRIVATE_LIB_DIR})
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "qt6-wayland, hicolor-icon-theme, shared-mime-info, desktop-file-utils")
if(DD_TORCH_CUDA)
  set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nvidia-driver (>= 580)")  # CUDA 13 needs the R580 driver (libcuda.so.1)
endif()
set(CPACK_DEBIAN_PACKAGE_CONFLICTS ${_dd_other})
set(CPACK_DEBIAN_PACKAGE_REPLACES ${_dd_other})
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${_dd_pkg}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
