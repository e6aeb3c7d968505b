/* SPDX-License-Identifier: MIT */
/*
 * What a sample carries beyond what every consumer needs, switched on by
 * the library's layer that needs it (the report, ds_report__attach), not
 * by the profile's public options:
 *  - shapes: ds_profile_sample.shape_id and frame_ids filled
 *    (ds_machine__callchain_shape), the key of the report's memo;
 *  - filtered samples: the samples the filter hides (DS_PROFILE_HIDE)
 *    delivered marked, without frames (perf report counts them in its
 *    totals), instead of dropped.
 * Set after ds_profile__open and before the run: 0, or -EALREADY once the
 * profile has run.  Who may use it: lib/ and the unit tests.
 */
#ifndef DSTACK_PROFILE_INT_H
#define DSTACK_PROFILE_INT_H

#include <stdbool.h>

struct ds_profile;

int dsi_profile__want_shapes(struct ds_profile *p, bool on);
int dsi_profile__keep_filtered(struct ds_profile *p, bool on);

#endif
