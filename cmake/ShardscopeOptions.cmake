# One helper for every project option, so the configure log states each option's value.
function(shardscope_option name help default)
  option(${name} "${help}" ${default})
  message(STATUS "shardscope option ${name} = ${${name}}  (${help})")
endfunction()
