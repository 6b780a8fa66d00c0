/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "view-op-message.h"

static const char *const view_op_type_table[_VIEW_OP_TYPE_MAX] = {
        [VIEW_OP_SET_PROPAGATION] = "SetPropagation",
        [VIEW_OP_JOIN] = "ShareSubtree/EnslaveSubtree",
        [VIEW_OP_BIND] = "BindMount",
        [VIEW_OP_UNMOUNT] = "Unmount",
        [VIEW_OP_HOST_SHARE] = "ShareSubtree",
        [VIEW_OP_APPLY_POLICY] = "the [View] policy",
};

const char *view_op_type_to_string(ViewOpType t) {
        return t >= 0 && t < _VIEW_OP_TYPE_MAX ? view_op_type_table[t] : NULL;
}

static const char *const view_op_method_table[_VIEW_OP_TYPE_MAX] = {
        [VIEW_OP_SET_PROPAGATION] = "SetPropagation",
        [VIEW_OP_JOIN] = "Join",
        [VIEW_OP_BIND] = "BindMount",
        [VIEW_OP_UNMOUNT] = "Unmount",
        [VIEW_OP_HOST_SHARE] = "HostShare",
        [VIEW_OP_APPLY_POLICY] = "ApplyPolicy",
};

const char *view_op_type_to_method(ViewOpType t) {
        return t >= 0 && t < _VIEW_OP_TYPE_MAX ? view_op_method_table[t] : NULL;
}
