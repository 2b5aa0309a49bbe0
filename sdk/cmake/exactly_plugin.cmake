# exactly_add_plugin(<name> SOURCES ...) builds exactly_<name>.so: hidden visibility
# (only the descriptor function is exported), no "lib" prefix, linked to the SDK.
function(exactly_add_plugin name)
  cmake_parse_arguments(P "" "" "SOURCES" ${ARGN})
  add_library(exactly_plugin_${name} MODULE ${P_SOURCES})
  set_target_properties(exactly_plugin_${name} PROPERTIES
    PREFIX "" OUTPUT_NAME "exactly_${name}"
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED EXACTLY_PLUGIN_OUTPUT_DIR)
    set_target_properties(exactly_plugin_${name} PROPERTIES
      LIBRARY_OUTPUT_DIRECTORY ${EXACTLY_PLUGIN_OUTPUT_DIR})
  endif()
  if(TARGET exactly::sdk)
    target_link_libraries(exactly_plugin_${name} PRIVATE exactly::sdk)
  endif()
  # Fail at link time, not at dlopen time, on a missing symbol.
  target_link_options(exactly_plugin_${name} PRIVATE -Wl,--no-undefined)
endfunction()
