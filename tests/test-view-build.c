/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/builder/view-build.c: the names of the stages of a view's build. TAP output. */
#include "tap.h"
#include "view-build.h"

/* The names of the stages (the builder's answers name the stage that failed), both ways. */
static void test_view_stage_table(void) {
        for (int i = 0; i < _VIEW_STAGE_MAX; i++)
                check(view_stage_from_string(view_stage_to_string(i)) == (ViewStage) i, "view stage %d round-trips", i);
}

int main(void) {
        test_view_stage_table();
        return tap_finish();
}
