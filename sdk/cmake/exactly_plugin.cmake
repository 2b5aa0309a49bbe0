# exactly_add_plugin(<name> SOURCES ... [NO_INSTALL]) builds exactly_<name>.so: hidden
# visibility (only the descriptor function is exported), no "lib" prefix, linked to the
# SDK. A plugin whose sources are all C (.c) links exactly::abi (the C header alone)
# instead of exactly::sdk, so a C project needs no C++ compiler. NO_INSTALL: no install
# rule (test fixtures).
set(EXACTLY_PLUGIN_INSTALL_DIR "lib/exactly/plugins" CACHE STRING
    "where `cmake --install` puts plugin libraries, relative to the install prefix")

function(exactly_add_plugin name)
  cmake_parse_arguments(P "NO_INSTALL" "" "SOURCES" ${ARGN})
  add_library(exactly_plugin_${name} MODULE ${P_SOURCES})
  set_target_properties(exactly_plugin_${name} PROPERTIES
    PREFIX "" OUTPUT_NAME "exactly_${name}"
    C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED EXACTLY_PLUGIN_OUTPUT_DIR)
    set_target_properties(exactly_plugin_${name} PROPERTIES
      LIBRARY_OUTPUT_DIRECTORY ${EXACTLY_PLUGIN_OUTPUT_DIR})
  endif()
  set(_sdk exactly::abi)
  foreach(_src ${P_SOURCES})
    if(NOT _src MATCHES "\\.[ch]$")
      set(_sdk exactly::sdk)
    endif()
  endforeach()
  if(NOT TARGET ${_sdk})
    message(FATAL_ERROR "exactly_add_plugin(${name}): no ${_sdk} target; "
                        "call find_package(exactly_sdk REQUIRED) first")
  endif()
  target_link_libraries(exactly_plugin_${name} PRIVATE ${_sdk})
  # Static locals in inline/template code (the SDK adapters) would otherwise become
  # STB_GNU_UNIQUE symbols, which make glibc refuse to ever unload the library.
  target_compile_options(exactly_plugin_${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-gnu-unique>)
  # Fail at link time, not at dlopen time, on a missing symbol.
  target_link_options(exactly_plugin_${name} PRIVATE -Wl,--no-undefined)
  # `cmake --install` puts plugins where plugin.path usually points; out-of-tree
  # plugins get the same rule.
  if(NOT P_NO_INSTALL)
    install(TARGETS exactly_plugin_${name}
            LIBRARY DESTINATION ${EXACTLY_PLUGIN_INSTALL_DIR} COMPONENT plugins)
  endif()
endfunction()
