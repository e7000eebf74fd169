# The browser's build (emcmake; scripts/web.sh sets it up): Dear ImGui compiled from its sources
# (Debian's imgui source package: SHARDSCOPE_IMGUI_SOURCE_DIR), GLFW and WebGL 2 from emscripten's
# own libraries (nothing downloaded), and the site around the viewer: its page, its lessons and
# its font. Included by ui/ (the ImGui library) and app/ (the site).
if(NOT TARGET shardscope_imgui)
  if(NOT EXISTS "${SHARDSCOPE_IMGUI_SOURCE_DIR}/imgui.cpp")
    message(FATAL_ERROR "the browser build needs Dear ImGui's sources: pass -DSHARDSCOPE_IMGUI_SOURCE_DIR=DIR "
                        "(scripts/web.sh fetches them with 'apt-get source imgui')")
  endif()
  set(imgui ${SHARDSCOPE_IMGUI_SOURCE_DIR})
  add_library(shardscope_imgui STATIC ${imgui}/imgui.cpp ${imgui}/imgui_draw.cpp ${imgui}/imgui_tables.cpp
              ${imgui}/imgui_widgets.cpp ${imgui}/backends/imgui_impl_glfw.cpp ${imgui}/backends/imgui_impl_opengl3.cpp
              ${PROJECT_SOURCE_DIR}/web/stb_image_write.cpp)
  target_include_directories(shardscope_imgui SYSTEM PUBLIC ${imgui} ${SHARDSCOPE_WEB_INCLUDE_DIR})
  target_link_options(shardscope_imgui PUBLIC -sUSE_GLFW=3 -sUSE_WEBGL2=1 -sFULL_ES3=1 -sMIN_WEBGL_VERSION=2
                      -sMAX_WEBGL_VERSION=2)
endif()

# The site: TARGET as index.html (its page: web/shell.html), .js and .wasm, with the lessons and the
# window's font preloaded into the page's file system where the native build finds them.
function(shardscope_web_site target)
  set(font /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf)
  set_target_properties(${target} PROPERTIES OUTPUT_NAME index SUFFIX .html
                        RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/site)
  target_link_options(${target} PRIVATE -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=64MB -sMINIFY_HTML=0
                      "-sEXPORTED_FUNCTIONS=_main,_shardscope_open,_shardscope_status"
                      "-sEXPORTED_RUNTIME_METHODS=ccall,FS,UTF8ToString"
                      "SHELL:--shell-file ${PROJECT_SOURCE_DIR}/web/shell.html"
                      "SHELL:--preload-file ${PROJECT_SOURCE_DIR}/assets/lessons@/lessons"
                      "SHELL:--preload-file ${font}@${font}")
  # What the link packs (--preload-file) is none of its inputs to the build tool: each packed file,
  # and a list of them (rewritten only when it changes), are made inputs of the link, so that a new,
  # changed or removed lesson or recording links the site again.
  file(GLOB packed CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/assets/lessons/*)
  # The lessons' runs as `shardscope lesson NAME --record DIR/NAME` wrote them, which the page replays.
  if(IS_DIRECTORY "${SHARDSCOPE_LESSON_RECORDINGS}")
    target_link_options(${target} PRIVATE "SHELL:--preload-file ${SHARDSCOPE_LESSON_RECORDINGS}@/lessons/recordings")
    file(GLOB_RECURSE recordings CONFIGURE_DEPENDS ${SHARDSCOPE_LESSON_RECORDINGS}/*)
    list(APPEND packed ${recordings})
    message(STATUS "shardscope: the site ships the lessons' recordings in ${SHARDSCOPE_LESSON_RECORDINGS}")
  else()
    message(STATUS "shardscope: the site ships no lesson recordings (SHARDSCOPE_LESSON_RECORDINGS names none)")
  endif()
  list(JOIN packed "\n" packed_text)
  set(packed_list ${PROJECT_BINARY_DIR}/site_packed_files.txt)
  set(before "")
  if(EXISTS ${packed_list})
    file(READ ${packed_list} before)
  endif()
  if(NOT before STREQUAL packed_text)
    file(WRITE ${packed_list} "${packed_text}")
  endif()
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/web/shell.html ${packed}
                                                              ${packed_list})
endfunction()
