# Fails if the core library's objects reference any heap allocator:
# the primitives must never allocate.  Run with -DLIB=<libsyncband.a>.
find_program(NM nm REQUIRED)
execute_process(COMMAND ${NM} -u ${LIB} OUTPUT_VARIABLE undefined RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${LIB}")
endif()
string(REGEX MATCHALL "[ \t](malloc|calloc|realloc|free|aligned_alloc|posix_memalign|reallocarray)\n"
       found "${undefined}\n")
if(found)
  message(FATAL_ERROR "libsyncband references an allocator:${found}")
endif()
message(STATUS "libsyncband references no allocator")
