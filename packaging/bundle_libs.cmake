# Install-time part of cmake/DDPackaging.cmake: copies the libraries of the torch wheel that the programs
# load into <prefix>/${DD_BUNDLE_DESTINATION}. Inputs (set by the install(CODE) that includes this file):
#   DD_BUNDLE_EXECUTABLES  the built programs (build tree; their RUNPATH still points into the wheel)
#   DD_BUNDLE_DLOPENED     libraries torch opens with dlopen (no DT_NEEDED names them)
#   DD_BUNDLE_SEARCH_DIRS  the wheel's library directories: only libraries found there are bundled
# Everything else the programs need (Qt, OpenCV, libc, the NVIDIA driver's libcuda) comes from the system.
set(_dirs_regex "")
foreach(d IN LISTS DD_BUNDLE_SEARCH_DIRS)
  string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" d "${d}")
  list(APPEND _dirs_regex "^${d}/")
endforeach()
file(GET_RUNTIME_DEPENDENCIES
  EXECUTABLES ${DD_BUNDLE_EXECUTABLES}
  LIBRARIES ${DD_BUNDLE_DLOPENED}
  DIRECTORIES ${DD_BUNDLE_SEARCH_DIRS}
  PRE_EXCLUDE_REGEXES "^libcuda\\.so" "^ld-linux" "^libc\\.so" "^libm\\.so" "^libstdc\\+\\+" "^libgcc_s"
  POST_INCLUDE_REGEXES ${_dirs_regex}
  POST_EXCLUDE_REGEXES ".*"
  RESOLVED_DEPENDENCIES_VAR _resolved
  UNRESOLVED_DEPENDENCIES_VAR _unresolved
  CONFLICTING_DEPENDENCIES_PREFIX _conflict)
# A name found both in the wheel and on the system (libgomp.so.1): the wheel's copy is the one torch loads.
foreach(name IN LISTS _conflict_FILENAMES)
  foreach(p IN LISTS _conflict_${name})
    foreach(r IN LISTS _dirs_regex)
      if(p MATCHES "${r}")
        list(APPEND _resolved "${p}")
        break()
      endif()
    endforeach()
  endforeach()
endforeach()
list(APPEND _resolved ${DD_BUNDLE_DLOPENED})
list(REMOVE_DUPLICATES _resolved)
list(SORT _resolved)

set(_dest "${CMAKE_INSTALL_PREFIX}/${DD_BUNDLE_DESTINATION}")
foreach(lib IN LISTS _resolved)
  file(INSTALL "${lib}" DESTINATION "${_dest}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  # The wheel's RPATHs ($ORIGIN/../../nvidia/...) would look outside the install prefix: keep only $ORIGIN.
  get_filename_component(name "${lib}" NAME)
  set(installed "$ENV{DESTDIR}${_dest}/${name}")
  unset(_rpath)
  unset(_runpath)  # READ_ELF leaves a variable untouched when the entry is missing
  file(READ_ELF "${installed}" RPATH _rpath RUNPATH _runpath CAPTURE_ERROR _err)
  if(_rpath OR _runpath)
    file(RPATH_SET FILE "${installed}" NEW_RPATH "$ORIGIN")
  endif()
endforeach()
list(LENGTH _resolved _n)
message(STATUS "Bundled ${_n} libraries of the torch wheel into ${_dest}")
