# install_pc.cmake - installs convolve.pc, run at install time (install(CODE)
# in CMakeLists.txt), when CMAKE_INSTALL_PREFIX is the prefix installed into
# (cmake --install --prefix P included). Given:
#   PC_IN        convolve.pc, configured but for @CONVOLVE_PC_RPATH@
#   PC_OUT       where to write the file before installing it
#   PC_LIBDIR    CMAKE_INSTALL_LIBDIR (relative to the prefix, or absolute)
#   PC_SYSTEM    the toolchain's and platform's own library folders
# A program linked with `pkg-config --libs convolve` must find libconvolve.so
# when it runs. In a system folder (PC_SYSTEM: /usr/lib/<multiarch> for the
# prefix /usr) the loader finds it, once ldconfig has run; anywhere else
# (/usr/local, /opt/..., $HOME/.local, a temporary prefix) Libs carries
# -Wl,-rpath,${libdir} as well, so that the program runs as it is, without
# LD_LIBRARY_PATH (as CMake's find_package gives programs in their build tree).
if(IS_ABSOLUTE "${PC_LIBDIR}")
  set(_libdir "${PC_LIBDIR}")
else()
  set(_libdir "${CMAKE_INSTALL_PREFIX}/${PC_LIBDIR}")
endif()
get_filename_component(_libdir "${_libdir}" ABSOLUTE)
set(_system OFF)
foreach(d IN LISTS PC_SYSTEM)
  get_filename_component(d "${d}" ABSOLUTE)
  if(d STREQUAL _libdir)
    set(_system ON)
  endif()
endforeach()
if(_system)
  set(CONVOLVE_PC_RPATH "")
else()
  set(CONVOLVE_PC_RPATH " -Wl,-rpath,\${libdir}")
endif()
configure_file("${PC_IN}" "${PC_OUT}" @ONLY)
file(INSTALL DESTINATION "${_libdir}/pkgconfig" TYPE FILE FILES "${PC_OUT}")
