/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "builder-message.h"
#include "ipc-fields.h"
#include "path-util.h"
#include "strv.h"
#include "user-util.h"

enum {
        TAG_REGISTRY_PIN = 1,
        TAG_PINS_DIR,
        TAG_NAME,
        TAG_SUBTREE_ROOT,
        TAG_PROPAGATION,
        TAG_SHARED_SUBTREE,
        TAG_WITH_FD,
        TAG_WITH_IDS,
};

/* Which fields each kind requires (and allows: a field of another kind is refused). */
#define BIT(t) FIELD_BIT(t)
static const uint64_t required[_BUILDER_CALL_KIND_MAX] = {
        [BUILDER_OPEN_REGISTRY] = BIT(TAG_REGISTRY_PIN) | BIT(TAG_PINS_DIR),
        [BUILDER_BUILD] = BIT(TAG_NAME) | BIT(TAG_SUBTREE_ROOT) | BIT(TAG_PROPAGATION),
        [BUILDER_UNPIN] = BIT(TAG_NAME),
        [BUILDER_READ_MOUNTS] = BIT(TAG_WITH_FD),
};
static const uint64_t allowed[_BUILDER_CALL_KIND_MAX] = {
        [BUILDER_OPEN_REGISTRY] = BIT(TAG_REGISTRY_PIN) | BIT(TAG_PINS_DIR),
        [BUILDER_BUILD] = BIT(TAG_NAME) | BIT(TAG_SUBTREE_ROOT) | BIT(TAG_PROPAGATION) | BIT(TAG_SHARED_SUBTREE),
        [BUILDER_UNPIN] = BIT(TAG_NAME),
        [BUILDER_READ_MOUNTS] = BIT(TAG_WITH_FD) | BIT(TAG_WITH_IDS),
};

void builder_call_done(BuilderCall *c) {
        free(c->registry_pin);
        free(c->pins_dir);
        free(c->name);
        free(c->subtree_root);
        strv_free(c->shared_subtrees);
        *c = (BuilderCall) {};
}

static bool path_ok(const char *p) {
        return p && path_is_absolute_normalized(p);
}

/* What both sides hold a call to: the same checks before sending and after receiving. */
static bool builder_call_valid(const BuilderCall *c) {
        switch (c->kind) {
        case BUILDER_OPEN_REGISTRY:
                return path_ok(c->registry_pin) && path_ok(c->pins_dir);
        case BUILDER_BUILD:
                if (!c->name || !valid_user_name(c->name) || !path_ok(c->subtree_root) || c->propagation < 0 ||
                    c->propagation >= _VIEW_PROPAGATION_MAX)
                        return false;
                for (char **s = c->shared_subtrees; s && *s; s++)
                        if (!path_ok(*s))
                                return false;
                return true;
        case BUILDER_UNPIN:
                /* Any pin LIST can name (registry.c lists file names), so that a pin of another
                 * name than a user's can still go; one path component all the same. */
                return c->name && filename_is_valid(c->name);
        case BUILDER_LIST:
        case BUILDER_READ_MOUNTS:
        case BUILDER_OPEN_MOUNTINFO:
                return true;
        default:
                return false;
        }
}

size_t builder_call_n_fds(const BuilderCall *c) {
        return c->kind == BUILDER_OPEN_MOUNTINFO || (c->kind == BUILDER_READ_MOUNTS && c->with_fd) ? 1 : 0;
}

int builder_call_encode(const BuilderCall *c, void **ret, size_t *ret_size) {
        FieldWriter w;

        if (!builder_call_valid(c))
                return -EINVAL;
        field_writer_init(&w, (uint8_t) c->kind);
        switch (c->kind) {
        case BUILDER_OPEN_REGISTRY:
                field_put_string(&w, TAG_REGISTRY_PIN, c->registry_pin);
                field_put_string(&w, TAG_PINS_DIR, c->pins_dir);
                break;
        case BUILDER_BUILD:
                field_put_string(&w, TAG_NAME, c->name);
                field_put_string(&w, TAG_SUBTREE_ROOT, c->subtree_root);
                field_put_u64(&w, TAG_PROPAGATION, (uint64_t) c->propagation);
                field_put_strv(&w, TAG_SHARED_SUBTREE, c->shared_subtrees);
                break;
        case BUILDER_UNPIN:
                field_put_string(&w, TAG_NAME, c->name);
                break;
        case BUILDER_READ_MOUNTS:
                field_put_bool(&w, TAG_WITH_FD, c->with_fd);
                if (c->with_ids)
                        field_put_bool(&w, TAG_WITH_IDS, true);
                break;
        default:
                break;
        }
        return field_writer_finish(&w, ret, ret_size);
}

static int decode_field(uint8_t tag, const void *v, size_t n, void *userdata) {
        BuilderCall *c = userdata;
        uint64_t u;
        int r;

        switch (tag) {
        case TAG_REGISTRY_PIN:
                return field_get_string(v, n, &c->registry_pin);
        case TAG_PINS_DIR:
                return field_get_string(v, n, &c->pins_dir);
        case TAG_NAME:
                return field_get_string(v, n, &c->name);
        case TAG_SUBTREE_ROOT:
                return field_get_string(v, n, &c->subtree_root);
        case TAG_PROPAGATION:
                r = field_get_u64(v, n, &u);
                if (r < 0 || u >= _VIEW_PROPAGATION_MAX)
                        return -EBADMSG;
                c->propagation = (ViewPropagation) u;
                return 0;
        case TAG_SHARED_SUBTREE:
                return field_strv_push(v, n, &c->shared_subtrees);
        case TAG_WITH_FD:
                return field_get_bool(v, n, &c->with_fd);
        case TAG_WITH_IDS:
                return field_get_bool(v, n, &c->with_ids);
        default:
                return -EBADMSG;
        }
}

int builder_call_decode(const void *data, size_t size, BuilderCall *ret) {
        BuilderCall c = {};
        FieldReader rd;
        uint64_t seen = 0;
        uint8_t kind;
        int r;

        r = field_message_open(&rd, data, size, BUILDER_OPEN_REGISTRY, _BUILDER_CALL_KIND_MAX - 1, &kind);
        if (r < 0)
                return r;
        c.kind = (BuilderCallKind) kind;
        r = field_message_read(&rd, &(const FieldSchema) {
                                       .allowed = allowed[c.kind],
                                       .repeated = BIT(TAG_SHARED_SUBTREE),
                                       .required = required[c.kind],
                               }, &seen, decode_field, &c);
        if (r >= 0 && !builder_call_valid(&c))
                r = -EBADMSG;
        if (c.kind == BUILDER_OPEN_MOUNTINFO)
                c.with_fd = true;
        if (r < 0) {
                builder_call_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}
