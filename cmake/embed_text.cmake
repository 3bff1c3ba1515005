# cmake -DINPUT=file -DOUTPUT=file.cc -DSYMBOL=name -P embed_text.cmake
# Writes `namespace strata { extern const char name[] = "<contents>"; }`.
file(READ ${INPUT} _text)
string(REPLACE "\\" "\\\\" _text "${_text}")
string(REPLACE "\"" "\\\"" _text "${_text}")
string(REPLACE "\n" "\\n\"\n\"" _text "${_text}")
file(WRITE ${OUTPUT} "// Generated from ${INPUT} by cmake/embed_text.cmake; do not edit.\n"
  "namespace strata {\nextern const char ${SYMBOL}[];\nconst char ${SYMBOL}[] =\n\"${_text}\";\n}  // namespace strata\n")
