# How a test is built and registered (tests/CMakeLists.txt includes this; each tests/<area>/CMakeLists.txt calls
# dd_add_test): labels, the per-folder unity-built programs that reuse dd_core's precompiled header, moc per file.
# One Qt Test class per subject (file), added by one helper, dd_add_test, below. Labels: unit (fast, no fixtures),
# parity (compares against fixtures made by the pinned reference packages), slow, gui, threads (the ThreadSanitizer
# run), rss (bounds on the process's resident memory: not run under AddressSanitizer, whose allocator keeps freed
# memory in quarantine), and pure: added here to every test that links only the torch-free libraries. ./test.sh builds those again
# in build-fuzz (clang, ASan + UBSan) through the dd_pure_tests target and runs them there, a few minutes in CI.
add_custom_target(dd_pure_tests)
# The programs of the tests labelled slow or rss: what ./test.sh --ci builds and runs on the plain build.
add_custom_target(dd_slow_and_rss_programs)
# A fresh clone has no CTestCostData.txt, so ctest -j2 would start tests in the order they are added and could
# begin a minutes-long one last, the other core idle meanwhile. These took 40-150 s each under ASan + UBSan in a
# clean-clone ./test.sh --ci (most others take seconds): they start first, the short ones fill in.
set(dd_long_tests test_refiner test_lora test_controlnet test_oom_retry test_cli test_pipeline
  test_batch_cli test_offload test_plan_toggles)
# Runs moc on each test file alone, without include paths (each file ends in #include "<file>.moc"): AUTOMOC
# (on for dd_ui only) gave moc every include directory, so it parsed libtorch's headers (about 12 s a test), and
# each test got a mocs_compilation.cpp compiled with the torch precompiled header (about 3 s more).
function(dd_moc_test_sources target)
  foreach(src ${ARGN})
    get_filename_component(base ${src} NAME_WE)
    set(moc_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_moc/${base}.moc)
    add_custom_command(OUTPUT ${moc_file}
      COMMAND Qt6::moc ${CMAKE_CURRENT_SOURCE_DIR}/${src} -o ${moc_file}
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${src} Qt6::moc VERBATIM)
    target_sources(${target} PRIVATE ${moc_file})
    set_source_files_properties(${moc_file} PROPERTIES HEADER_FILE_ONLY ON)
  endforeach()
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/${target}_moc)
endfunction()

# What every test program gets: Qt Test, the allocator the programs ship with (tcmalloc; glibc's under the
# sanitizers), the paths the tests read, and whether `all` builds it.
function(dd_setup_test_program target)
  target_link_libraries(${target} PRIVATE Qt6::Test)
  dd_use_fast_allocator(${target})
  if(NOT DD_TESTS_IN_ALL)
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
  target_compile_definitions(${target} PRIVATE
    DD_SHARED_DIR="${DD_SHARED_DIR}" DD_FIXTURES_DIR="${DD_FIXTURES_DIR}"
    DD_SOURCE_DIR="${CMAKE_SOURCE_DIR}" DD_BINARY_DIR="${CMAKE_BINARY_DIR}")
endfunction()

# dd_add_test(<name> SOURCES <file> LIBS <libraries> LABELS <labels> [DEPENDS <targets the test runs>])
# A test that links dd_core (libtorch) joins its folder's program, <folder>_tests, a unity build of four files a
# unit (tests/common/test_program.h says why); ctest runs it as `<folder>_tests <name>`. The others, and the
# slow and RSS-bound ones (CI's plain build compiles only those), are programs of their own, named as the test.
function(dd_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS;DEPENDS" ${ARGN})
  set(pure_libs ${T_LIBS})
  list(REMOVE_ITEM pure_libs dd_core_pure dd_imaging dd_image_library dd_server_pure)
  if("dd_core" IN_LIST T_LIBS AND NOT T_LABELS MATCHES "slow|rss")
    get_filename_component(folder ${CMAKE_CURRENT_SOURCE_DIR} NAME)
    set(program ${folder}_tests)
    if(NOT TARGET ${program})
      add_executable(${program} ${CMAKE_SOURCE_DIR}/tests/common/test_program_main.cpp)
      set_target_properties(${program} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 4)
      dd_setup_test_program(${program})
      dd_use_core_pch(${program})
      add_dependencies(dd_test_programs ${program})
    endif()
    target_sources(${program} PRIVATE ${T_SOURCES})
    set(command ${program} ${name})
  else()
    set(program ${name})
    add_executable(${program} ${T_SOURCES})
    dd_setup_test_program(${program})
    if("dd_core" IN_LIST T_LIBS)
      dd_use_core_pch(${program})
    endif()
    if(T_LABELS MATCHES "slow|rss")
      add_dependencies(dd_slow_and_rss_programs ${program})
    else()
      add_dependencies(dd_test_programs ${program})
    endif()
    set(command ${program})
  endif()
  dd_moc_test_sources(${program} ${T_SOURCES})
  target_link_libraries(${program} PRIVATE ${T_LIBS})
  if(T_DEPENDS)
    add_dependencies(${program} ${T_DEPENDS})
  endif()
  if(NOT pure_libs)
    list(APPEND T_LABELS pure)
    add_dependencies(dd_pure_tests ${program})
  endif()
  add_test(NAME ${name} COMMAND ${command})
  # XDG_DATA_HOME: what the CLI adds to the image library goes to the build folder, never the user's library.
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}"
    ENVIRONMENT "QT_QPA_PLATFORM=offscreen;OMP_WAIT_POLICY=PASSIVE;XDG_DATA_HOME=${CMAKE_BINARY_DIR}/test-data")
  if(name IN_LIST dd_long_tests)
    set_tests_properties(${name} PROPERTIES COST 100)
  endif()
endfunction()
