# The layer libraries, built from the layer table (src/layers.txt).
#
#   kiln_read_layer_table(FILE)   sets KILN_LAYERS (the [layers] names, lowest first),
#                                 KILN_SUPPORT_LIBS (the [support] names) and, for each,
#                                 KILN_USES_<name> (the layers it uses directly)
#   kiln_add_layer(NAME)          kiln_<NAME>: a static library of src/<NAME>/**.cpp linking
#                                 kiln_<used> for each layer NAME uses; an INTERFACE library
#                                 while the directory has no sources yet
#
# The op families (src/ops/<family>.cpp) are not part of kiln_ops: see CMakeLists.txt.

function(kiln_read_layer_table file)
  file(STRINGS ${file} lines)
  set(section "")
  set(layers)
  set(support)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "#.*" "" line "${line}")
    string(STRIP "${line}" line)
    if(line STREQUAL "")
      continue()
    endif()
    if(line MATCHES "^\\[([a-z]+)\\]$")
      set(section ${CMAKE_MATCH_1})
      continue()
    endif()
    string(REGEX MATCHALL "[^ \t]+" words "${line}")
    list(POP_FRONT words name)
    foreach(used IN LISTS words)
      if(NOT used IN_LIST layers)
        message(FATAL_ERROR "${file}: ${name} uses '${used}', which is not a layer listed above it")
      endif()
    endforeach()
    if(section STREQUAL "layers")
      list(APPEND layers ${name})
    elseif(section STREQUAL "support")
      list(APPEND support ${name})
    else()
      message(FATAL_ERROR "${file}: '${name}' is outside a [layers] or [support] section")
    endif()
    set(KILN_USES_${name} ${words} PARENT_SCOPE)
  endforeach()
  set(KILN_LAYERS ${layers} PARENT_SCOPE)
  set(KILN_SUPPORT_LIBS ${support} PARENT_SCOPE)
endfunction()

function(kiln_add_layer name)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(name STREQUAL "ops")
    list(FILTER sources EXCLUDE REGEX "/src/ops/[^/]+\\.cpp$")  # the op families
  endif()
  set(used)
  foreach(layer IN LISTS KILN_USES_${name})
    list(APPEND used kiln_${layer})
  endforeach()
  if(sources)
    add_library(kiln_${name} STATIC ${sources})
    target_link_libraries(kiln_${name} PUBLIC kiln_settings ${used})
  else()
    add_library(kiln_${name} INTERFACE)
    target_link_libraries(kiln_${name} INTERFACE kiln_settings ${used})
  endif()
endfunction()
