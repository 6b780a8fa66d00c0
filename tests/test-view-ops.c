/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/children/view-ops.c: the names of the operations on a view. TAP output. */
#include "tap.h"
#include "view-ops.h"

/* The names of the operations on a view, both ways; out of range and NULL have none. */
static void test_view_op_type_table(void) {
        for (int i = 0; i < _VIEW_OP_TYPE_MAX; i++)
                check(view_op_type_from_string(view_op_type_to_string(i)) == (ViewOpType) i, "view op %d round-trips", i);
        check(view_op_type_to_string(_VIEW_OP_TYPE_MAX) == NULL && view_op_type_from_string(NULL) < 0,
              "out of range and NULL have no entry");
}

int main(void) {
        test_view_op_type_table();
        return tap_finish();
}
