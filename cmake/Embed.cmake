# saga_embed_file(<input> <output.h> <symbol>)
# Generates a header that defines `static const char <symbol>[]` holding the
# bytes of <input> followed by a NUL, so SQL files stay SQL files.
function(saga_embed_file input output symbol)
  file(READ ${input} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
  file(WRITE ${output}.tmp
       "/* generated from ${input}; do not edit */\nstatic const char ${symbol}[] = {${body}0x00};\n")
  file(COPY_FILE ${output}.tmp ${output} ONLY_IF_DIFFERENT)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${input})
endfunction()
