/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>

#include "ipc-fields.h"
#include "path-util.h"
#include "string-table.h"
#include "strv.h"
#include "view-op-message.h"

static const char *const view_op_type_table[_VIEW_OP_TYPE_MAX] = {
        [VIEW_OP_SET_PROPAGATION] = "SetPropagation",
        [VIEW_OP_JOIN] = "ShareSubtree/EnslaveSubtree",
        [VIEW_OP_BIND] = "BindMount",
        [VIEW_OP_UNMOUNT] = "Unmount",
        [VIEW_OP_HOST_SHARE] = "ShareSubtree",
        [VIEW_OP_APPLY_POLICY] = "the [View] policy",
};

DEFINE_STRING_TABLE_LOOKUP(view_op_type, ViewOpType);

enum {
        /* the request */
        TAG_TYPE = 1,                   /* u64: ViewOpType */
        TAG_WITH_FD = 2,                /* bool: the view's fd comes beside the message (else: the host) */
        TAG_PATH = 3,                   /* string */
        TAG_SOURCE = 4,                 /* string: BIND */
        TAG_MODE = 5,                   /* u64: PropagationMode, SET_PROPAGATION */
        TAG_RECURSIVE = 6,              /* bool */
        TAG_JOIN = 7,                   /* u64: JoinMode, JOIN */
        TAG_READ_ONLY = 8,              /* bool: BIND */
        TAG_MAKE_DIR = 9,               /* bool: BIND */
        TAG_HOST_PROPAGATES = 10,       /* bool: BIND */
        TAG_CALLER_UID = 11,            /* u64: present for a user acting on their own view */
        TAG_CALLER_GID = 12,            /* u64 */
        TAG_CALLER_GROUP = 13,          /* u64, repeated */
        TAG_OWN_MOUNT = 14,             /* mount id pair, repeated */
        TAG_BIND_MOUNT = 15,            /* mount id pair, repeated */
        TAG_POLICY_MOUNT = 16,          /* mount id pair, repeated */
        TAG_MAX_OWN_BINDS = 17,         /* u64 */
        TAG_PRIVATE_TMP = 18,           /* bool: APPLY_POLICY, the [View] policy from here on */
        TAG_TMP_SIZE = 19,              /* u64 */
        TAG_BIND_PATH = 20,             /* string, repeated */
        TAG_BIND_READ_ONLY_PATH = 21,   /* string, repeated */
        TAG_TEMPORARY_FILE_SYSTEM = 22, /* string, repeated */
        TAG_INACCESSIBLE_PATH = 23,     /* string, repeated */
        TAG_HIDE_OTHER_HOMES = 24,      /* bool */
        TAG_USER_NAME = 25,             /* string: APPLY_POLICY, the user */
        TAG_USER_UID = 26,              /* u64 */
        TAG_USER_GID = 27,              /* u64 */
        TAG_USER_HOME = 28,             /* string */
        TAG_USER_SHELL = 29,            /* string */
        TAG_EXPECTED_ID = 30,           /* u64: SET_PROPAGATION, UNMOUNT of the mount with this id */
        _TAG_REQUEST_MAX,
};

enum {
        /* the answer */
        TAG_MOUNTED = 1,                /* mount id pair */
        TAG_REPLACED = 2,               /* mount id pair */
        TAG_N_MOUNTS = 3,               /* u64 (< 2^32) */
        TAG_GONE = 4,                   /* mount id pair, repeated */
        TAG_POLICY_MADE = 5,            /* mount id pair, repeated */
        _TAG_RESULT_MAX,
};

/* Every tag is a bit of a u64 (FIELD_BIT()). */
_Static_assert(_TAG_REQUEST_MAX <= 64 && _TAG_RESULT_MAX <= 64, "a tag past 63 has no bit");
#define BIT(t) FIELD_BIT(t)
#define REPEATED (BIT(TAG_CALLER_GROUP) | BIT(TAG_OWN_MOUNT) | BIT(TAG_BIND_MOUNT) | BIT(TAG_POLICY_MOUNT) | \
                  BIT(TAG_BIND_PATH) | BIT(TAG_BIND_READ_ONLY_PATH) | BIT(TAG_TEMPORARY_FILE_SYSTEM) |    \
                  BIT(TAG_INACCESSIBLE_PATH))
#define CALLER (BIT(TAG_CALLER_UID) | BIT(TAG_CALLER_GID) | BIT(TAG_CALLER_GROUP) | BIT(TAG_OWN_MOUNT) |       \
                BIT(TAG_BIND_MOUNT) | BIT(TAG_POLICY_MOUNT) | BIT(TAG_MAX_OWN_BINDS))
#define POLICY (BIT(TAG_PRIVATE_TMP) | BIT(TAG_TMP_SIZE) | BIT(TAG_BIND_PATH) | BIT(TAG_BIND_READ_ONLY_PATH) |   \
                BIT(TAG_TEMPORARY_FILE_SYSTEM) | BIT(TAG_INACCESSIBLE_PATH) | BIT(TAG_HIDE_OTHER_HOMES) |        \
                BIT(TAG_USER_NAME) | BIT(TAG_USER_UID) | BIT(TAG_USER_GID) | BIT(TAG_USER_HOME) |                 \
                BIT(TAG_USER_SHELL))

/* Which fields each operation takes, and which it cannot do without. */
static const uint64_t allowed[_VIEW_OP_TYPE_MAX] = {
        [VIEW_OP_SET_PROPAGATION] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH) | BIT(TAG_MODE) |
                                    BIT(TAG_RECURSIVE) | BIT(TAG_EXPECTED_ID) | CALLER,
        [VIEW_OP_JOIN] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH) | BIT(TAG_JOIN) | CALLER,
        [VIEW_OP_BIND] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH) | BIT(TAG_SOURCE) | BIT(TAG_READ_ONLY) |
                         BIT(TAG_MAKE_DIR) | BIT(TAG_HOST_PROPAGATES) | CALLER,
        [VIEW_OP_UNMOUNT] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH) | BIT(TAG_RECURSIVE) |
                            BIT(TAG_EXPECTED_ID) | CALLER,
        [VIEW_OP_HOST_SHARE] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH),
        [VIEW_OP_APPLY_POLICY] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | POLICY,
};
static const uint64_t required[_VIEW_OP_TYPE_MAX] = {
        [VIEW_OP_SET_PROPAGATION] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH) | BIT(TAG_MODE),
        [VIEW_OP_JOIN] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH) | BIT(TAG_JOIN),
        [VIEW_OP_BIND] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH) | BIT(TAG_SOURCE),
        [VIEW_OP_UNMOUNT] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH),
        [VIEW_OP_HOST_SHARE] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_PATH),
        [VIEW_OP_APPLY_POLICY] = BIT(TAG_TYPE) | BIT(TAG_WITH_FD) | BIT(TAG_USER_NAME) | BIT(TAG_USER_UID) |
                                 BIT(TAG_USER_GID),
};

void view_op_request_done(ViewOpRequest *r) {
        free(r->path);
        free(r->source);
        credentials_done(&r->caller);
        free(r->own);
        free(r->binds);
        free(r->policy_ids);
        view_policy_done(&r->policy);
        free(r->user.name);
        free(r->user.home);
        free(r->user.shell);
        *r = (ViewOpRequest) {};
}

static void put_mount_id(FieldWriter *w, uint8_t tag, MountId id) {
        uint8_t b[16];

        for (unsigned i = 0; i < 8; i++) {
                b[i] = (uint8_t) (id.unique >> (8 * i));
                b[8 + i] = (uint8_t) (id.old >> (8 * i));
        }
        field_put(w, tag, b, sizeof b);
}

static int get_mount_id(const void *value, size_t size, MountId *ret) {
        if (size != 16)
                return -EBADMSG;
        (void) field_get_u64(value, 8, &ret->unique);
        (void) field_get_u64((const uint8_t *) value + 8, 8, &ret->old);
        return 0;
}

static void put_mount_ids(FieldWriter *w, uint8_t tag, const MountId *ids, size_t n) {
        for (size_t i = 0; i < n; i++)
                put_mount_id(w, tag, ids[i]);
}

static bool path_ok(const char *p) {
        return p && path_is_absolute_normalized(p);
}

/* What the child's code takes for granted (view-ops.c), checked on both sides. with_fd: the
 * view's fd comes with the request. */
static bool view_op_valid(const ViewOp *op, bool with_fd) {
        if (op->type < 0 || op->type >= _VIEW_OP_TYPE_MAX)
                return false;
        if (op->type != VIEW_OP_APPLY_POLICY && !path_ok(op->path))
                return false;
        /* A caller that an operation cannot carry would be dropped, and the child would act
         * with full power: refused instead. */
        if (op->caller && !(allowed[op->type] & BIT(TAG_CALLER_UID)))
                return false;
        /* Without the view's fd the child stays in the host's namespace: a user's operation, or
         * a [View] policy (a tmpfs on /tmp, the homes hidden), would change the host. */
        if ((op->caller || op->type == VIEW_OP_APPLY_POLICY) && !with_fd)
                return false;
        switch (op->type) {
        case VIEW_OP_SET_PROPAGATION:
                return op->mode >= 0 && op->mode < _PROPAGATION_MODE_MAX;
        case VIEW_OP_JOIN:
                return op->join >= 0 && op->join < _JOIN_MODE_MAX;
        case VIEW_OP_BIND:
                return path_ok(op->source);
        case VIEW_OP_APPLY_POLICY:
                return op->policy && op->user && op->user->name;
        default:
                return true;
        }
}

int view_op_request_encode(const ViewOp *op, void **ret, size_t *ret_size) {
        FieldWriter w;

        if (!view_op_valid(op, op->ns_fd >= 0))
                return -EINVAL;
        field_writer_init(&w, VIEW_OP_MESSAGE_REQUEST);
        field_put_u64(&w, TAG_TYPE, (uint64_t) op->type);
        field_put_bool(&w, TAG_WITH_FD, op->ns_fd >= 0);
        if (op->type != VIEW_OP_APPLY_POLICY)
                field_put_string(&w, TAG_PATH, op->path);
        switch (op->type) {
        case VIEW_OP_SET_PROPAGATION:
                field_put_u64(&w, TAG_MODE, (uint64_t) op->mode);
                field_put_bool(&w, TAG_RECURSIVE, op->recursive);
                if (op->expected_id != 0)
                        field_put_u64(&w, TAG_EXPECTED_ID, op->expected_id);
                break;
        case VIEW_OP_JOIN:
                field_put_u64(&w, TAG_JOIN, (uint64_t) op->join);
                break;
        case VIEW_OP_BIND:
                field_put_string(&w, TAG_SOURCE, op->source);
                field_put_bool(&w, TAG_READ_ONLY, op->read_only);
                field_put_bool(&w, TAG_MAKE_DIR, op->make_dir);
                field_put_bool(&w, TAG_HOST_PROPAGATES, op->host_propagates);
                break;
        case VIEW_OP_UNMOUNT:
                field_put_bool(&w, TAG_RECURSIVE, op->recursive);
                if (op->expected_id != 0)
                        field_put_u64(&w, TAG_EXPECTED_ID, op->expected_id);
                break;
        case VIEW_OP_APPLY_POLICY:
                field_put_bool(&w, TAG_PRIVATE_TMP, op->policy->private_tmp);
                field_put_u64(&w, TAG_TMP_SIZE, op->policy->tmp_size);
                field_put_strv(&w, TAG_BIND_PATH, op->policy->bind_paths);
                field_put_strv(&w, TAG_BIND_READ_ONLY_PATH, op->policy->bind_read_only_paths);
                field_put_strv(&w, TAG_TEMPORARY_FILE_SYSTEM, op->policy->temporary_file_system);
                field_put_strv(&w, TAG_INACCESSIBLE_PATH, op->policy->inaccessible_paths);
                field_put_bool(&w, TAG_HIDE_OTHER_HOMES, op->policy->hide_other_homes);
                field_put_string(&w, TAG_USER_NAME, op->user->name);
                field_put_u64(&w, TAG_USER_UID, op->user->uid);
                field_put_u64(&w, TAG_USER_GID, op->user->gid);
                field_put_string(&w, TAG_USER_HOME, op->user->home);
                field_put_string(&w, TAG_USER_SHELL, op->user->shell);
                break;
        default:
                break;
        }
        /* The caller and the records the rules are checked against (own-view-rules.h). */
        if (op->caller) {
                field_put_u64(&w, TAG_CALLER_UID, op->caller->uid);
                field_put_u64(&w, TAG_CALLER_GID, op->caller->gid);
                for (size_t i = 0; i < op->caller->n_groups; i++)
                        field_put_u64(&w, TAG_CALLER_GROUP, op->caller->groups[i]);
                field_put_u64(&w, TAG_MAX_OWN_BINDS, op->max_own_binds);
        }
        if (allowed[op->type] & BIT(TAG_OWN_MOUNT)) {
                put_mount_ids(&w, TAG_OWN_MOUNT, op->own_mounts, op->n_own_mounts);
                put_mount_ids(&w, TAG_BIND_MOUNT, op->bind_mounts, op->n_bind_mounts);
                put_mount_ids(&w, TAG_POLICY_MOUNT, op->policy_mounts, op->n_policy_mounts);
        }
        return field_writer_finish(&w, ret, ret_size);
}

static int push_id(MountId **ids, size_t *n, const void *v, size_t size) {
        MountId id, *a;

        if (get_mount_id(v, size, &id) < 0)
                return -EBADMSG;
        a = realloc(*ids, (*n + 1) * sizeof(MountId));
        if (!a)
                return -ENOMEM;
        a[(*n)++] = id;
        *ids = a;
        return 0;
}

static int get_id_t(const void *v, size_t size, uint32_t *ret) {
        /* uid_t and gid_t: (uid_t) -1 is no one's. */
        if (field_get_u32(v, size, ret) < 0 || *ret == UINT32_MAX)
                return -EBADMSG;
        return 0;
}

static int decode_request_field(uint8_t tag, const void *v, size_t n, void *userdata) {
        ViewOpRequest *q = userdata;
        ViewOp *op = &q->op;
        uint64_t u;
        uint32_t id;

        switch (tag) {
        case TAG_TYPE:
                if (field_get_u64(v, n, &u) < 0 || u >= _VIEW_OP_TYPE_MAX)
                        return -EBADMSG;
                op->type = (ViewOpType) u;
                return 0;
        case TAG_WITH_FD:
                return field_get_bool(v, n, &q->with_fd);
        case TAG_PATH:
                return field_get_string(v, n, &q->path);
        case TAG_SOURCE:
                return field_get_string(v, n, &q->source);
        case TAG_MODE:
                if (field_get_u64(v, n, &u) < 0 || u >= _PROPAGATION_MODE_MAX)
                        return -EBADMSG;
                op->mode = (PropagationMode) u;
                return 0;
        case TAG_RECURSIVE:
                return field_get_bool(v, n, &op->recursive);
        case TAG_EXPECTED_ID:
                if (field_get_u64(v, n, &op->expected_id) < 0 || op->expected_id == 0)
                        return -EBADMSG;
                return 0;
        case TAG_JOIN:
                if (field_get_u64(v, n, &u) < 0 || u >= _JOIN_MODE_MAX)
                        return -EBADMSG;
                op->join = (JoinMode) u;
                return 0;
        case TAG_READ_ONLY:
                return field_get_bool(v, n, &op->read_only);
        case TAG_MAKE_DIR:
                return field_get_bool(v, n, &op->make_dir);
        case TAG_HOST_PROPAGATES:
                return field_get_bool(v, n, &op->host_propagates);
        case TAG_CALLER_UID:
                if (get_id_t(v, n, &id) < 0)
                        return -EBADMSG;
                q->caller.uid = id;
                return 0;
        case TAG_CALLER_GID:
                if (get_id_t(v, n, &id) < 0)
                        return -EBADMSG;
                q->caller.gid = id;
                return 0;
        case TAG_CALLER_GROUP: {
                gid_t *g;
                if (get_id_t(v, n, &id) < 0 || q->caller.n_groups >= NGROUPS_MAX)
                        return -EBADMSG;
                g = realloc(q->caller.groups, (q->caller.n_groups + 1) * sizeof(gid_t));
                if (!g)
                        return -ENOMEM;
                g[q->caller.n_groups++] = id;
                q->caller.groups = g;
                return 0;
        }
        case TAG_OWN_MOUNT:
                return push_id(&q->own, &op->n_own_mounts, v, n);
        case TAG_BIND_MOUNT:
                return push_id(&q->binds, &op->n_bind_mounts, v, n);
        case TAG_POLICY_MOUNT:
                return push_id(&q->policy_ids, &op->n_policy_mounts, v, n);
        case TAG_MAX_OWN_BINDS:
                return field_get_u32(v, n, &op->max_own_binds);
        case TAG_PRIVATE_TMP:
                return field_get_bool(v, n, &q->policy.private_tmp);
        case TAG_TMP_SIZE:
                return field_get_u64(v, n, &q->policy.tmp_size);
        case TAG_BIND_PATH:
                return field_strv_push(v, n, &q->policy.bind_paths);
        case TAG_BIND_READ_ONLY_PATH:
                return field_strv_push(v, n, &q->policy.bind_read_only_paths);
        case TAG_TEMPORARY_FILE_SYSTEM:
                return field_strv_push(v, n, &q->policy.temporary_file_system);
        case TAG_INACCESSIBLE_PATH:
                return field_strv_push(v, n, &q->policy.inaccessible_paths);
        case TAG_HIDE_OTHER_HOMES:
                return field_get_bool(v, n, &q->policy.hide_other_homes);
        case TAG_USER_NAME:
                return field_get_string(v, n, &q->user.name);
        case TAG_USER_UID:
                if (get_id_t(v, n, &id) < 0)
                        return -EBADMSG;
                q->user.uid = id;
                return 0;
        case TAG_USER_GID:
                if (get_id_t(v, n, &id) < 0)
                        return -EBADMSG;
                q->user.gid = id;
                return 0;
        case TAG_USER_HOME:
                return field_get_string(v, n, &q->user.home);
        case TAG_USER_SHELL:
                return field_get_string(v, n, &q->user.shell);
        default:
                return -EBADMSG;
        }
}

int view_op_request_decode(const void *data, size_t size, ViewOpRequest *ret) {
        ViewOpRequest q = { .op = { .ns_fd = -EBADF } };
        FieldReader rd;
        uint64_t seen = BIT(TAG_TYPE);
        uint8_t kind, tag;
        const void *v;
        size_t n;
        int r;

        r = field_message_open(&rd, data, size, VIEW_OP_MESSAGE_REQUEST, VIEW_OP_MESSAGE_REQUEST, &kind);
        if (r < 0)
                return r;
        /* The type first: it says which fields may follow. */
        r = field_next(&rd, &tag, &v, &n);
        if (r <= 0 || tag != TAG_TYPE)
                return -EBADMSG;
        r = decode_request_field(tag, v, n, &q);
        if (r >= 0)
                r = field_message_read(&rd, &(const FieldSchema) {
                                               .allowed = allowed[q.op.type],
                                               .repeated = REPEATED,
                                               .required = required[q.op.type],
                                       }, &seen, decode_request_field, &q);
        /* A caller is a uid and a gid, or nobody: full power. */
        if (r >= 0 && ((seen & (BIT(TAG_CALLER_UID) | BIT(TAG_CALLER_GID))) == BIT(TAG_CALLER_UID) ||
                       (seen & (BIT(TAG_CALLER_UID) | BIT(TAG_CALLER_GID))) == BIT(TAG_CALLER_GID) ||
                       (!(seen & BIT(TAG_CALLER_UID)) && (seen & (BIT(TAG_CALLER_GROUP) | BIT(TAG_MAX_OWN_BINDS))))))
                r = -EBADMSG;
        if (r < 0) {
                view_op_request_done(&q);
                return r;
        }
        /* op points into the request itself: set where it will live. */
        *ret = q;
        ret->op.path = ret->path;
        ret->op.source = ret->source;
        ret->op.caller = (seen & BIT(TAG_CALLER_UID)) ? &ret->caller : NULL;
        ret->op.own_mounts = ret->own;
        ret->op.bind_mounts = ret->binds;
        ret->op.policy_mounts = ret->policy_ids;
        if (ret->op.type == VIEW_OP_APPLY_POLICY) {
                ret->op.policy = &ret->policy;
                ret->op.user = &ret->user;
        }
        if (!view_op_valid(&ret->op, ret->with_fd)) {
                view_op_request_done(ret);
                return -EBADMSG;
        }
        return 0;
}

int view_op_result_encode(const ViewOpResult *res, void **ret, size_t *ret_size) {
        FieldWriter w;

        if (res->n_gone > VIEW_OP_MOUNTS_MAX || res->n_policy_mounts > VIEW_OP_MOUNTS_MAX)
                return -EINVAL;
        field_writer_init(&w, VIEW_OP_MESSAGE_RESULT);
        put_mount_id(&w, TAG_MOUNTED, res->mounted);
        put_mount_id(&w, TAG_REPLACED, res->replaced);
        field_put_u64(&w, TAG_N_MOUNTS, res->n_mounts);
        put_mount_ids(&w, TAG_GONE, res->gone, res->n_gone);
        put_mount_ids(&w, TAG_POLICY_MADE, res->policy_mounts, res->n_policy_mounts);
        return field_writer_finish(&w, ret, ret_size);
}

static int decode_result_field(uint8_t tag, const void *v, size_t n, void *userdata) {
        ViewOpResult *res = userdata;

        switch (tag) {
        case TAG_MOUNTED:
                return get_mount_id(v, n, &res->mounted) < 0 ? -EBADMSG : 0;
        case TAG_REPLACED:
                return get_mount_id(v, n, &res->replaced) < 0 ? -EBADMSG : 0;
        case TAG_N_MOUNTS:
                return field_get_u32(v, n, &res->n_mounts) < 0 ? -EBADMSG : 0;
        case TAG_GONE:
                if (res->n_gone >= VIEW_OP_MOUNTS_MAX || get_mount_id(v, n, &res->gone[res->n_gone]) < 0)
                        return -EBADMSG;
                res->n_gone++;
                return 0;
        case TAG_POLICY_MADE:
                if (res->n_policy_mounts >= VIEW_OP_MOUNTS_MAX ||
                    get_mount_id(v, n, &res->policy_mounts[res->n_policy_mounts]) < 0)
                        return -EBADMSG;
                res->n_policy_mounts++;
                return 0;
        default:
                return -EBADMSG;
        }
}

int view_op_result_decode(const void *data, size_t size, ViewOpResult *ret) {
        static const FieldSchema schema = {
                .allowed = BIT(TAG_MOUNTED) | BIT(TAG_REPLACED) | BIT(TAG_N_MOUNTS) | BIT(TAG_GONE) | BIT(TAG_POLICY_MADE),
                .repeated = BIT(TAG_GONE) | BIT(TAG_POLICY_MADE),
        };
        ViewOpResult res = {};
        int r;

        r = field_message_decode(data, size, VIEW_OP_MESSAGE_RESULT, &schema, decode_result_field, &res);
        if (r < 0)
                return r;
        *ret = res;
        return 0;
}
