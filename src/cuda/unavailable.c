/*
 * unavailable.c - the CUDA backend's table in a build without CUDA: empty.
 * No strategies and no calls; the core then reports BACKEND_UNAVAILABLE
 * wherever CUDA is asked for ("libconvolve was built without CUDA").
 */
#include "../backend.h"

const cvi_backend cvcu_backend = {.id = CONVOLVE_BACKEND_CUDA};
