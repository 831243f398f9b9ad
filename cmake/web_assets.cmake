# The chat page of `kite serve`, compiled into the program: the files of src/server/web (index.html
# at /, the others at /assets/NAME) and the Markdown libraries from Debian's packages (at
# /assets/vendor/NAME). cmake/embed_files.cmake turns them into web_assets_data.cpp at build time,
# so editing a page file rebuilds it; nothing is fetched from the network.

# The libraries the page loads: URL name, Debian package, candidate paths (first found wins).
set(KITE_WEB_VENDOR
  "marked.min.js|libjs-marked|/usr/share/javascript/marked/marked.min.js"
  "purify.min.js|node-dompurify|/usr/share/nodejs/dompurify/dist/purify.min.js:/usr/share/javascript/dompurify/purify.min.js"
  "highlight.min.js|libjs-highlight.js|/usr/share/javascript/highlight.js/highlight.min.js")

function(kite_embed_web target)
  set(web "${CMAKE_SOURCE_DIR}/src/server/web")
  file(GLOB files CONFIGURE_DEPENDS "${web}/*")
  set(manifest "")
  set(inputs "")
  foreach(file IN LISTS files)
    get_filename_component(name "${file}" NAME)
    if(name STREQUAL "index.html")
      set(url "/")
    else()
      set(url "/assets/${name}")
    endif()
    string(APPEND manifest "${url}\t${file}\n")
    list(APPEND inputs "${file}")
  endforeach()
  foreach(entry IN LISTS KITE_WEB_VENDOR)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 name)
    list(GET parts 1 package)
    list(GET parts 2 candidates)
    string(REPLACE ":" ";" candidates "${candidates}")
    set(found "")
    foreach(candidate IN LISTS candidates)
      if(NOT found AND EXISTS "${candidate}")
        set(found "${candidate}")
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "The chat page needs ${name} from the Debian package ${package} "
                          "(looked for ${candidates}): run scripts/install-deps.sh")
    endif()
    string(APPEND manifest "/assets/vendor/${name}\t${found}\n")
    list(APPEND inputs "${found}")
  endforeach()
  set(list_file "${CMAKE_BINARY_DIR}/web_assets.txt")
  file(WRITE "${list_file}.tmp" "${manifest}")
  file(COPY_FILE "${list_file}.tmp" "${list_file}" ONLY_IF_DIFFERENT)
  set(out "${CMAKE_BINARY_DIR}/web_assets_data.cpp")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DLIST=${list_file} -DOUT=${out}
            -P "${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake"
    DEPENDS ${inputs} "${list_file}" "${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake"
    COMMENT "Embedding the chat page (src/server/web)" VERBATIM)
  target_sources(${target} PRIVATE "${out}")
endfunction()
