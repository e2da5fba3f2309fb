# The programs' CPU allocator: gperftools' tcmalloc (Debian's libtcmalloc-minimal4) instead of glibc malloc.
#
# Why: glibc serves every block over its mmap threshold (at most 32 MB) with a fresh mmap and unmaps it on free,
# so each UNet step's large activations arrive as new zero-filled pages: 1.2 million page faults a step at 512²
# (SD 1.5, fp32, ~15 s of the kernel's time in a 5-step run). tcmalloc keeps freed spans and reuses them: a
# 5-step run went 68 → 63 s as shipped, peak RSS 4.16 → 4.33 GiB (docs/benchmarks.md, "Session 10: the
# allocator"; core/memory/release_memory.h for where kept memory is given back).
# Not under the sanitizers, which bring their own allocator. DD_TCMALLOC=OFF keeps glibc malloc.
option(DD_TCMALLOC "Link gperftools' tcmalloc (libtcmalloc-minimal4) into the programs" ON)
set(DD_TCMALLOC_LIBRARY "")
if(DD_TCMALLOC AND NOT DD_SANITIZE)
  find_library(DD_TCMALLOC_LIB NAMES tcmalloc_minimal libtcmalloc_minimal.so.4)
  if(DD_TCMALLOC_LIB)
    set(DD_TCMALLOC_LIBRARY ${DD_TCMALLOC_LIB})
    message(STATUS "CPU allocator: tcmalloc (${DD_TCMALLOC_LIB})")
  else()
    message(WARNING "libtcmalloc-minimal4 not found: the programs use glibc malloc (slower CPU inference; "
                    "./scripts/setup.sh installs it)")
  endif()
endif()

# Links the allocator into a program. First on the link line and not "as needed" (nothing calls it by name):
# the program's malloc, and libtorch's, then resolve to tcmalloc before libc.
function(dd_use_fast_allocator target)
  if(DD_TCMALLOC_LIBRARY)
    target_link_options(${target} PRIVATE "LINKER:--push-state,--no-as-needed" ${DD_TCMALLOC_LIBRARY} "LINKER:--pop-state")
  endif()
  target_compile_definitions(${target} PRIVATE DD_EXPECT_TCMALLOC=$<BOOL:${DD_TCMALLOC_LIBRARY}>)
endfunction()
