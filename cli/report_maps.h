/* SPDX-License-Identifier: MIT */
/*
 * Map-relative addresses of user frames (perf's map__map_ip: ip - map start
 * + pgoff), which `perf report` prints for addresses without a symbol.
 * ds_cc_frame does not carry the map, so this bridge reads the MMAP, MMAP2
 * and FORK records of the recording in a first pass.  It goes away once
 * the library reports the address with the frame.
 *
 * Ownership: relmaps__load returns an object freed by relmaps__delete.
 * Errors: NULL if the input cannot be read twice (a pipe) or on ENOMEM;
 * callers then print absolute addresses.
 */
#ifndef DSTACK_REPORT_MAPS_H
#define DSTACK_REPORT_MAPS_H

#include <stdint.h>

struct relmaps;

struct relmaps *relmaps__load(const char *path, uint64_t *lost_samples);
/* @ip as an address inside its map for @pid at @time; @ip if no map holds it. */
uint64_t relmaps__addr(const struct relmaps *rm, int32_t pid, uint64_t time, uint64_t ip);
void relmaps__delete(struct relmaps *rm);

#endif
